package ytstore

import (
	"context"
	"fmt"
	pathpkg "path"
	"slices"
	"strings"

	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yt"
)

// Node is a Cypress node as ListDir and NodeInfo report it.
type Node struct {
	// Name is the node's key in its directory (ListDir) or the last component of its path.
	Name string
	// Path is the node's path.
	Path string
	// Type is the node's type: "table", "link", "map_node", "file", ….
	Type string
	// Attributes holds the attributes asked for (those the node has).
	Attributes map[string]any
}

// nodeAttrs are the attributes ListDir and NodeInfo always read.
var nodeAttrs = []string{"type", "dynamic", "row_count", "target_path"}

// RowCount is the node's @row_count (0 when it has none).
func (n Node) RowCount() int64 {
	switch v := n.Attributes["row_count"].(type) {
	case int64:
		return v
	case uint64:
		return int64(v)
	}
	return 0
}

// Dynamic tells whether the node is a dynamic table.
func (n Node) Dynamic() bool { b, _ := n.Attributes["dynamic"].(bool); return b }

// ListDir lists the children of directory dir in key order with their type, dynamic,
// row_count and target_path (links) attributes and those named in attrs. Links are listed
// as links, not followed; NodeInfo follows one. A missing dir gives ErrNotFound.
func (s *Store) ListDir(ctx context.Context, dir string, attrs ...string) ([]Node, error) {
	var items []struct {
		Name  string         `yson:",value"`
		Attrs map[string]any `yson:",attrs"`
	}
	opts := &yt.ListNodeOptions{Attributes: append(append([]string{}, nodeAttrs...), attrs...)}
	if err := s.yc.ListNode(ctx, ypath.Path(dir), &items, opts); err != nil {
		return nil, fmt.Errorf("ytstore: list %s: %w", dir, classify(err))
	}
	out := make([]Node, 0, len(items))
	for _, it := range items {
		typ, _ := it.Attrs["type"].(string)
		out = append(out, Node{Name: it.Name, Path: dir + "/" + it.Name, Type: typ, Attributes: it.Attrs})
	}
	// Cypress lists a map node's children in no particular order; sort by key.
	slices.SortFunc(out, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// NodeInfo reads the node at path — following a link to its target — with the attributes
// ListDir reads and those named in attrs. Name is path's last component. A missing node
// gives ErrNotFound.
func (s *Store) NodeInfo(ctx context.Context, path string, attrs ...string) (Node, error) {
	var got map[string]any
	opts := &yt.GetNodeOptions{Attributes: append(append([]string{}, nodeAttrs...), attrs...)}
	if err := s.yc.GetNode(ctx, ypath.Path(path).Attrs(), &got, opts); err != nil {
		return Node{}, fmt.Errorf("ytstore: read attributes of %s: %w", path, classify(err))
	}
	typ, _ := got["type"].(string)
	return Node{Name: pathpkg.Base(path), Path: path, Type: typ, Attributes: got}, nil
}

// ReadTableRange reads rows [lower, upper) of the static table at path by row index (a
// range past the end yields the rows there are). Each row is a map of its columns.
func (s *Store) ReadTableRange(ctx context.Context, path string, lower, upper int64) ([]map[string]any, error) {
	if upper <= lower {
		return nil, nil
	}
	rich := ypath.NewRich(path).AddRange(ypath.Interval(ypath.RowIndex(lower), ypath.RowIndex(upper)))
	r, err := s.yc.ReadTable(ctx, rich, nil)
	if err != nil {
		return nil, fmt.Errorf("ytstore: read %s rows [%d, %d): %w", path, lower, upper, classify(err))
	}
	defer func() { _ = r.Close() }()
	var rows []map[string]any
	for r.Next() {
		var row map[string]any
		if err := r.Scan(&row); err != nil {
			return nil, fmt.Errorf("ytstore: read %s rows [%d, %d): row %d: %w", path, lower, upper, lower+int64(len(rows)), err)
		}
		rows = append(rows, row)
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("ytstore: read %s rows [%d, %d): %w", path, lower, upper, classify(err))
	}
	return rows, nil
}

// WriteStaticTable creates the static table path with schema sc (parents included; an
// existing table is replaced) and writes rows to it, in one master transaction.
func (s *Store) WriteStaticTable(ctx context.Context, path string, sc schema.Schema, rows []map[string]any) error {
	tx, err := s.yc.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("ytstore: write %s: start transaction: %w", path, classify(err))
	}
	defer func() { _ = tx.Abort() }()
	p := ypath.Path(path)
	if _, err := tx.CreateNode(ctx, p, yt.NodeTable, &yt.CreateNodeOptions{Recursive: true, Force: true,
		Attributes: map[string]any{"schema": sc}}); err != nil {
		return fmt.Errorf("ytstore: create %s: %w", path, classify(err))
	}
	w, err := tx.WriteTable(ctx, p, nil)
	if err != nil {
		return fmt.Errorf("ytstore: write %s: %w", path, classify(err))
	}
	for i, row := range rows {
		if err := w.Write(row); err != nil {
			_ = w.Rollback()
			return fmt.Errorf("ytstore: write %s: row %d: %w", path, i, classify(err))
		}
	}
	if err := w.Commit(); err != nil {
		return fmt.Errorf("ytstore: write %s: %w", path, classify(err))
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("ytstore: write %s: commit: %w", path, classify(err))
	}
	return nil
}

// Link creates a symlink at link pointing to target (parents included).
func (s *Store) Link(ctx context.Context, target, link string) error {
	if _, err := s.yc.LinkNode(ctx, ypath.Path(target), ypath.Path(link), &yt.LinkNodeOptions{Recursive: true}); err != nil {
		return fmt.Errorf("ytstore: link %s to %s: %w", link, target, classify(err))
	}
	return nil
}
