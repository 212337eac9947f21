package ytstore

import (
	"context"
	"fmt"

	"go.ytsaurus.tech/yt/go/migrate"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yt"
)

// UserTable kinds understood by EnsureUserTable.
const (
	UserQueue       = "queue"        // ordered dynamic table with TabletCount tablets
	UserConsumer    = "consumer"     // queue_consumer registered for Queue
	UserProducer    = "producer"     // queue_producer
	UserSortedTable = "sorted_table" // sorted dynamic table
	UserStaticTable = "static_table" // static table (empty; WriteStaticTable fills it)
)

// UserTable describes a table of the user's (inputs, results) that `yt-flow run` creates
// on the embedded server so an example runs with no manual steps.
type UserTable struct {
	// Path of the node.
	Path string
	// Kind is one of UserQueue, UserConsumer, UserProducer, UserSortedTable, UserStaticTable.
	Kind string
	// Schema of a queue or table (sorted tables have sort_order on key columns).
	Schema schema.Schema
	// TabletCount of a queue; 0 means 1.
	TabletCount int
	// Queue is the queue a consumer is registered for.
	Queue string
	// AutoTrim creates a queue with @auto_trim_config = {enable = %true}: rows below the
	// offsets of all its vital consumers are trimmed (yt-flow registers its consumers as
	// vital and advances them only to committed offsets).
	AutoTrim bool
}

// EnsureUserTable creates t if it does not exist (parents included), mounts it, and for a
// consumer registers it for its queue. It is idempotent.
func (s *Store) EnsureUserTable(ctx context.Context, t UserTable) error {
	p := ypath.Path(t.Path)
	switch t.Kind {
	case UserQueue, UserSortedTable:
		attrs := map[string]any{"dynamic": true, "schema": t.Schema}
		if t.Kind == UserQueue && t.TabletCount > 1 {
			attrs["tablet_count"] = t.TabletCount
		}
		if t.Kind == UserQueue && t.AutoTrim {
			attrs["auto_trim_config"] = map[string]any{"enable": true}
		}
		if _, err := s.yc.CreateNode(ctx, p, yt.NodeTable, &yt.CreateNodeOptions{Recursive: true, IgnoreExisting: true, Attributes: attrs}); err != nil {
			return fmt.Errorf("ytstore: create %s %s: %w", t.Kind, p, classify(err))
		}
		var state string
		if err := s.yc.GetNode(ctx, p.Attr("tablet_state"), &state, nil); err != nil {
			return fmt.Errorf("ytstore: read tablet state of %s: %w", p, classify(err))
		}
		if state != yt.TabletMounted {
			if t.Kind == UserQueue && t.TabletCount > 1 {
				// Not every server honours tablet_count at creation: reshard while unmounted.
				var have int
				if err := s.yc.GetNode(ctx, p.Attr("tablet_count"), &have, nil); err != nil {
					return fmt.Errorf("ytstore: read %s/@tablet_count: %w", p, classify(err))
				}
				if have != t.TabletCount {
					n := t.TabletCount
					if err := s.yc.ReshardTable(ctx, p, &yt.ReshardTableOptions{TabletCount: &n}); err != nil {
						return fmt.Errorf("ytstore: reshard %s to %d tablets: %w", p, n, classify(err))
					}
				}
			}
			if err := migrate.MountAndWait(ctx, s.yc, p); err != nil {
				return fmt.Errorf("ytstore: mount %s: %w", p, classify(err))
			}
		}
	case UserStaticTable:
		if _, err := s.yc.CreateNode(ctx, p, yt.NodeTable, &yt.CreateNodeOptions{Recursive: true, IgnoreExisting: true,
			Attributes: map[string]any{"schema": t.Schema}}); err != nil {
			return fmt.Errorf("ytstore: create static table %s: %w", p, classify(err))
		}
	case UserConsumer:
		if _, err := s.yc.CreateNode(ctx, p, yt.NodeQueueConsumer, &yt.CreateNodeOptions{Recursive: true, IgnoreExisting: true}); err != nil {
			return fmt.Errorf("ytstore: create consumer %s: %w", p, classify(err))
		}
		if t.Queue == "" {
			return fmt.Errorf("ytstore: consumer %s: no queue to register for", p)
		}
		vital := true
		if err := s.yc.RegisterQueueConsumer(ctx, ypath.Path(t.Queue), p, &yt.RegisterQueueConsumerOptions{Vital: &vital}); err != nil {
			return fmt.Errorf("ytstore: register consumer %s for %s: %w", p, t.Queue, classify(err))
		}
	case UserProducer:
		if _, err := s.yc.CreateNode(ctx, p, yt.NodeQueueProducer, &yt.CreateNodeOptions{Recursive: true, IgnoreExisting: true}); err != nil {
			return fmt.Errorf("ytstore: create producer %s: %w", p, classify(err))
		}
	default:
		return fmt.Errorf("ytstore: user table %s: unknown kind %q", p, t.Kind)
	}
	return nil
}

// NodeExists reports whether a Cypress node exists.
func (s *Store) NodeExists(ctx context.Context, path string) (bool, error) {
	ok, err := s.yc.NodeExists(ctx, ypath.Path(path), nil)
	if err != nil {
		return false, fmt.Errorf("ytstore: check %s: %w", path, classify(err))
	}
	return ok, nil
}

// GetAttribute reads path/@name into out; a missing node or attribute gives ErrNotFound.
func (s *Store) GetAttribute(ctx context.Context, path, name string, out any) error {
	if err := s.yc.GetNode(ctx, ypath.Path(path).Attr(name), out, nil); err != nil {
		return fmt.Errorf("ytstore: read %s/@%s: %w", path, name, classify(err))
	}
	return nil
}

// SetAttribute writes path/@name.
func (s *Store) SetAttribute(ctx context.Context, path, name string, value any) error {
	if err := s.yc.SetNode(ctx, ypath.Path(path).Attr(name), value, nil); err != nil {
		return fmt.Errorf("ytstore: set %s/@%s: %w", path, name, classify(err))
	}
	return nil
}
