package ytstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yt"
)

// TableAppend is rows appended to one static table of a directory.
type TableAppend struct {
	// Name is the table's key in the directory.
	Name string
	// Attributes are set on the table when the transaction creates it (an existing table
	// keeps its own).
	Attributes map[string]any
	// Require, when set, is an attribute an existing table must have: one without it is
	// not the writer's, and the transaction fails with ErrForeignNode.
	Require string
	// Rows are appended after the table's rows; none creates the table empty.
	Rows []map[string]any
}

// DirUpdate is what one UpdateDir transaction writes.
type DirUpdate struct {
	Tables []TableAppend
	// Attribute is the directory attribute's new value.
	Attribute any
}

// ErrForeignNode: a node UpdateDir would write is not the writer's (it lacks the attribute
// TableAppend.Require names).
var ErrForeignNode = errors.New("node not written by this writer")

// UpdateDir runs one master transaction (with timeout, 0: the cluster's default) on
// directory dir (created, with its parents, if missing): it takes an exclusive lock on dir, reads dir's attribute attr (nil when dir has
// none) and hands it to plan, then writes what plan returns — creates the tables that are not
// there, appends the rows and sets the attribute — and commits. Everything plan returns
// commits together or not at all, and no other UpdateDir of dir runs in between: a concurrent
// one gets ErrConflict (retry it). A commit whose outcome is not known gives ErrCommitUnknown;
// the attribute then tells what happened. A plan error aborts the transaction and is returned
// as is.
func (s *Store) UpdateDir(ctx context.Context, dir, attr string, timeout time.Duration, plan func(cur yson.RawValue) (DirUpdate, error)) error {
	p := ypath.Path(dir)
	if _, err := s.yc.CreateNode(ctx, p, yt.NodeMap, &yt.CreateNodeOptions{Recursive: true, IgnoreExisting: true}); err != nil {
		return fmt.Errorf("ytstore: create directory %s: %w", dir, classify(err))
	}
	var opts *yt.StartTxOptions
	if timeout > 0 {
		d := yson.Duration(timeout)
		opts = &yt.StartTxOptions{Timeout: &d}
	}
	tx, err := s.yc.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("ytstore: update %s: start transaction: %w", dir, classify(err))
	}
	defer func() { _ = tx.Abort() }()
	if _, err := tx.LockNode(ctx, p, yt.LockExclusive, nil); err != nil {
		return fmt.Errorf("ytstore: lock %s: %w", dir, classify(err))
	}
	var cur yson.RawValue
	ok, err := tx.NodeExists(ctx, p.Attr(attr), nil)
	if err != nil {
		return fmt.Errorf("ytstore: read %s/@%s: %w", dir, attr, classify(err))
	}
	if ok {
		if err := tx.GetNode(ctx, p.Attr(attr), &cur, nil); err != nil {
			return fmt.Errorf("ytstore: read %s/@%s: %w", dir, attr, classify(err))
		}
	}
	u, err := plan(cur)
	if err != nil {
		return err
	}
	for _, t := range u.Tables {
		tp := p.Child(t.Name)
		exists, err := tx.NodeExists(ctx, tp, nil)
		if err != nil {
			return fmt.Errorf("ytstore: update %s: %w", tp, classify(err))
		}
		if !exists {
			if _, err := tx.CreateNode(ctx, tp, yt.NodeTable, &yt.CreateNodeOptions{Attributes: t.Attributes}); err != nil {
				return fmt.Errorf("ytstore: create %s: %w", tp, classify(err))
			}
		} else if t.Require != "" {
			ok, err := tx.NodeExists(ctx, tp.Attr(t.Require), nil)
			if err != nil {
				return fmt.Errorf("ytstore: update %s: %w", tp, classify(err))
			}
			if !ok {
				return fmt.Errorf("ytstore: %w: %s has no @%s", ErrForeignNode, tp, t.Require)
			}
		}
		if len(t.Rows) == 0 {
			continue
		}
		w, err := tx.WriteTable(ctx, ypath.NewRich(tp.String()).SetAppend(), nil)
		if err != nil {
			return fmt.Errorf("ytstore: append to %s: %w", tp, classify(err))
		}
		for i, row := range t.Rows {
			if err := w.Write(row); err != nil {
				_ = w.Rollback()
				return fmt.Errorf("ytstore: append to %s: row %d: %w", tp, i, classify(err))
			}
		}
		if err := w.Commit(); err != nil {
			return fmt.Errorf("ytstore: append to %s: %w", tp, classify(err))
		}
	}
	if err := tx.SetNode(ctx, p.Attr(attr), u.Attribute, nil); err != nil {
		return fmt.Errorf("ytstore: set %s/@%s: %w", dir, attr, classify(err))
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("ytstore: update %s: commit: %w", dir, classifyCommit(err))
	}
	return nil
}
