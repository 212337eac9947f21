package ytstore

import (
	"context"
	"fmt"
	"strings"

	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yt"
)

// TableSchema reads the @schema of the table at path.
func (s *Store) TableSchema(ctx context.Context, path string) (schema.Schema, error) {
	var sc schema.Schema
	if err := s.yc.GetNode(ctx, ypath.Path(path).Attr("schema"), &sc, nil); err != nil {
		return sc, fmt.Errorf("ytstore: read %s/@schema: %w", path, classify(err))
	}
	return sc, nil
}

// KeyScan is one page of a sorted dynamic table in key order: the rows whose first key
// column lies in [Lo, Hi) (Hi 0: no upper bound) and whose key is above After (nil: from the
// range's start), at most Limit of them.
type KeyScan struct {
	Path string
	// Keys are the table's key columns, in order; the first is a uint64.
	Keys   []string
	Lo, Hi uint64
	After  []any
	Limit  int
}

// ScanKeys reads one page of a KeyScan with select_rows, in key order.
func (s *Store) ScanKeys(ctx context.Context, k KeyScan) ([]map[string]any, error) {
	if len(k.Keys) == 0 {
		return nil, fmt.Errorf("ytstore: scan %s: no key columns", k.Path)
	}
	quoted := make([]string, len(k.Keys))
	for i, c := range k.Keys {
		quoted[i] = "[" + c + "]"
	}
	cond := []string{fmt.Sprintf("%s >= %du", quoted[0], k.Lo)}
	if k.Hi != 0 {
		cond = append(cond, fmt.Sprintf("%s < %du", quoted[0], k.Hi))
	}
	ph := map[string]any{}
	if k.After != nil {
		if len(k.After) != len(k.Keys) {
			return nil, fmt.Errorf("ytstore: scan %s: key %v has %d columns, want %d", k.Path, k.After, len(k.After), len(k.Keys))
		}
		if len(k.Keys) == 1 {
			cond = append(cond, quoted[0]+" > {after}")
			ph["after"] = k.After[0]
		} else {
			cond = append(cond, fmt.Sprintf("(%s) > {after}", strings.Join(quoted, ", ")))
			ph["after"] = k.After
		}
	}
	q := fmt.Sprintf("* FROM [%s] WHERE %s ORDER BY %s LIMIT %d", k.Path, strings.Join(cond, " AND "), strings.Join(quoted, ", "), k.Limit)
	rows, err := s.selectRows(ctx, q, ph)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// LookupUserRows looks keys (maps of a user table's key columns) up in the sorted dynamic
// table at path: one result per key, in the order of keys, nil for a key without a row.
func (s *Store) LookupUserRows(ctx context.Context, path string, keys []map[string]any) ([]map[string]any, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	anyKeys := make([]any, len(keys))
	for i, k := range keys {
		anyKeys[i] = k
	}
	r, err := s.yc.LookupRows(ctx, ypath.Path(path), anyKeys, &yt.LookupRowsOptions{KeepMissingRows: true})
	if err != nil {
		return nil, fmt.Errorf("ytstore: lookup in %s: %w", path, classify(err))
	}
	defer func() { _ = r.Close() }()
	out := make([]map[string]any, 0, len(keys))
	for r.Next() {
		var row map[string]any
		if err := r.Scan(&row); err != nil {
			return nil, fmt.Errorf("ytstore: lookup in %s: decode row: %w", path, err)
		}
		out = append(out, row)
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("ytstore: lookup in %s: %w", path, classify(err))
	}
	if len(out) != len(keys) {
		return nil, fmt.Errorf("ytstore: lookup in %s: %d rows for %d keys", path, len(out), len(keys))
	}
	return out, nil
}

// SelectUserRowsByPrefix reads the rows of the sorted dynamic table at path whose columns
// cols hold one of prefixes (each a value per column, in order), with select_rows: every row
// of each prefix, in no particular order.
func (s *Store) SelectUserRowsByPrefix(ctx context.Context, path string, cols []string, prefixes [][]any) ([]map[string]any, error) {
	if len(prefixes) == 0 {
		return nil, nil
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("ytstore: select from %s by prefix: no columns", path)
	}
	quoted := make([]string, len(cols))
	for i, c := range cols {
		quoted[i] = "[" + c + "]"
	}
	lhs := quoted[0]
	if len(cols) > 1 {
		lhs = "(" + strings.Join(quoted, ", ") + ")"
	}
	var out []map[string]any
	const chunk = 500
	for start := 0; start < len(prefixes); start += chunk {
		end := min(start+chunk, len(prefixes))
		ph := make(map[string]any, end-start)
		items := make([]string, 0, end-start)
		for i, p := range prefixes[start:end] {
			if len(p) != len(cols) {
				return nil, fmt.Errorf("ytstore: select from %s by prefix: %v has %d values for columns %v", path, p, len(p), cols)
			}
			name := fmt.Sprintf("p%d", i)
			if len(cols) == 1 {
				ph[name] = p[0]
			} else {
				ph[name] = p
			}
			items = append(items, "{"+name+"}")
		}
		rows, err := s.selectRows(ctx, fmt.Sprintf("* FROM [%s] WHERE %s IN (%s)", path, lhs, strings.Join(items, ", ")), ph)
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	return out, nil
}
