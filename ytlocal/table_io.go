package ytlocal

import (
	"sort"

	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yterrors"

	"github.com/ytflow/yt-flow/internal/ytvalue"
)

// --- write_table / read_table ---

func cmdWriteTable(c *call) (any, error) {
	s := c.s
	rich, err := c.richPath("path")
	if err != nil {
		return nil, err
	}
	p, err := parsePath(string(rich.Path))
	if err != nil {
		return nil, err
	}
	maxWeight := int64(defaultMaxRowWeight)
	var tw struct {
		MaxRowWeight *int64 `yson:"max_row_weight"`
	}
	if _, err := c.decode("table_writer", &tw); err != nil {
		return nil, err
	}
	if tw.MaxRowWeight != nil && *tw.MaxRowWeight > 0 {
		maxWeight = *tw.MaxRowWeight
	}
	rows, err := c.inputRows()
	if err != nil {
		return nil, err
	}
	tx, finish, err := s.txForCall(c)
	if err != nil {
		return nil, err
	}
	err = func() error {
		n, err := s.resolveTyped(p, tx, "table", "write rows to")
		if err != nil {
			return err
		}
		if dynamicOf(s, n, tx) {
			return withAttrs(ytErr(yterrors.CodeGeneric, "Cannot write_table to dynamic table %s; use insert_rows", p.raw), "path", p.raw)
		}
		appendMode := rich.Append != nil && *rich.Append
		mode := lockExclusive
		if appendMode {
			mode = lockShared
		}
		if _, err := s.acquire(n, tx, mode, "", "", false); err != nil {
			return err
		}
		sc := s.tableSchema(n, tx)
		if rich.Schema != nil {
			if appendMode {
				return ytErr(yterrors.CodeGeneric, "Cannot set schema of %s in append mode", p.raw)
			}
			norm, err := normalizeSchemaAttr(*rich.Schema, false)
			if err != nil {
				return err
			}
			if _, err := s.acquire(n, tx, lockShared, "", "schema", false); err != nil {
				return err
			}
			s.tree.setAttr(n, tx, "schema", norm, false)
			sc = s.tableSchema(n, tx)
		}
		if len(rich.SortedBy) > 0 {
			sc = withSortedBy(sc, rich.SortedBy)
			norm, err := normalizeSchemaAttr(sc, false)
			if err != nil {
				return err
			}
			s.tree.setAttr(n, tx, "schema", norm, false)
		}
		conv, err := validateRows(sc, rows, maxWeight, p.raw)
		if err != nil {
			return err
		}
		if keys := sc.KeyColumns(); len(keys) > 0 {
			var prev []any
			if appendMode {
				if last := s.tree.lastRow(n, tx); last != nil {
					prev = rowKey(last, keys)
				}
			}
			for i, r := range conv {
				k := rowKey(r, keys)
				if prev != nil {
					switch c := ytvalue.CompareKeys(prev, k); {
					case c > 0:
						return withAttrs(ytErr(yterrors.CodeSortOrderViolation, "Sort order violation in row %d written to sorted table %s", i, p.raw), "path", p.raw)
					case c == 0 && sc.UniqueKeys:
						return withAttrs(ytErr(yterrors.CodeUniqueKeyViolation, "Duplicate key in row %d written to %s (unique_keys)", i, p.raw), "path", p.raw)
					}
				}
				prev = k
			}
		}
		if appendMode {
			s.tree.appendRows(n, tx, conv)
		} else {
			s.tree.setContent(n, tx, &content{rows: conv})
		}
		return nil
	}()
	return nil, finish(err)
}

func withSortedBy(sc schema.Schema, keys []string) schema.Schema {
	out := schema.Schema{Strict: sc.Strict, UniqueKeys: sc.UniqueKeys}
	byName := map[string]schema.Column{}
	for _, c := range sc.Columns {
		byName[c.Name] = c
	}
	for _, k := range keys {
		c, ok := byName[k]
		if !ok {
			c = schema.Column{Name: k, Type: schema.TypeAny}
		}
		c.SortOrder = schema.SortAscending
		out.Columns = append(out.Columns, c)
		delete(byName, k)
	}
	for _, c := range sc.Columns {
		if _, ok := byName[c.Name]; ok {
			c.SortOrder = schema.SortNone
			out.Columns = append(out.Columns, c)
		}
	}
	if out.Strict == nil && len(sc.Columns) == 0 {
		out.Strict = ptrBool(false)
	}
	return out
}

// resolveTyped resolves p under tx to a node of type typ; anything else is
// the error "Cannot <action> <path>: not a <typ>".
func (s *Server) resolveTyped(p *pathRef, tx *masterTx, typ, action string) (*node, error) {
	obj, err := s.resolve(p, tx, true)
	if err != nil {
		return nil, err
	}
	if obj.n == nil || obj.n.typ != typ {
		return nil, withAttrs(ytErr(yterrors.CodeGeneric, "Cannot %s %s: not a %s", action, p.raw, typ), "path", p.raw)
	}
	return obj.n, nil
}

// DynamicTableReader lets the dynamic-table extension serve read_table of dynamic tables.
type DynamicTableReader interface {
	ReadDynamicTable(id guid.GUID) (rows []any, ok bool)
}

func cmdReadTable(c *call) (any, error) {
	s := c.s
	rich, err := c.richPath("path")
	if err != nil {
		return nil, err
	}
	p, err := parsePath(string(rich.Path))
	if err != nil {
		return nil, err
	}
	tx, err := s.readTx(c)
	if err != nil {
		return nil, err
	}
	n, err := s.resolveTyped(p, tx, "table", "read rows from")
	if err != nil {
		return nil, err
	}
	rows := s.tree.contentOf(n, tx).rows
	if dynamicOf(s, n, tx) {
		for _, name := range s.extOrder {
			if r, ok := s.exts[name].(DynamicTableReader); ok {
				if dr, ok := r.ReadDynamicTable(n.id); ok {
					rows = dr
				}
			}
		}
	}
	sc := s.tableSchema(n, tx)
	selected, start, err := selectRanges(rows, rich.Ranges, sc.KeyColumns())
	if err != nil {
		return nil, err
	}
	out := selected
	if rich.Columns != nil {
		out = make([]any, len(selected))
		for i, r := range selected {
			m, _ := r.(map[string]any)
			nm := make(map[string]any, len(rich.Columns))
			for _, col := range rich.Columns {
				if v, ok := m[col]; ok {
					nm[col] = v
				}
			}
			out[i] = nm
		}
	}
	params := map[string]any{"approximate_row_count": int64(len(rows))}
	if len(out) > 0 {
		params["start_row_index"] = start
	}
	return &rowsResult{Rows: out, Params: params}, nil
}

// selectRanges applies read ranges; it returns the rows and the index of the first one.
func selectRanges(rows []any, ranges []ypath.Range, keys []string) ([]any, int64, error) {
	if len(ranges) == 0 {
		return rows, 0, nil
	}
	var out []any
	first := int64(-1)
	n := int64(len(rows))
	for _, r := range ranges {
		lo, hi := int64(0), n
		apply := func(l *ypath.ReadLimit, lower bool, exact bool) error {
			if l == nil {
				return nil
			}
			if l.RowIndex != nil {
				i := *l.RowIndex
				if exact {
					lo, hi = max(lo, i), min(hi, i+1)
				} else if lower {
					lo = max(lo, i)
				} else {
					hi = min(hi, i)
				}
			}
			if l.Key != nil {
				if len(keys) == 0 {
					return ytErr(yterrors.CodeGeneric, "Key ranges need a sorted table")
				}
				k := normalizeKey(l.Key)
				cmpAt := func(i int) int { return ytvalue.CompareKeys(rowKey(rows[i], keys)[:min(len(keys), len(k))], k) }
				lb := int64(sortSearch(len(rows), func(i int) bool { return cmpAt(i) >= 0 }))
				ub := int64(sortSearch(len(rows), func(i int) bool { return cmpAt(i) > 0 }))
				switch {
				case exact:
					lo, hi = max(lo, lb), min(hi, ub)
				case lower:
					lo = max(lo, lb)
				default:
					hi = min(hi, lb)
				}
			}
			return nil
		}
		if err := apply(r.Exact, true, true); err != nil {
			return nil, 0, err
		}
		if err := apply(r.Lower, true, false); err != nil {
			return nil, 0, err
		}
		if err := apply(r.Upper, false, false); err != nil {
			return nil, 0, err
		}
		lo, hi = max(lo, 0), min(hi, n)
		if lo < hi {
			if first < 0 {
				first = lo
			}
			out = append(out, rows[lo:hi]...)
		}
	}
	if first < 0 {
		first = 0
	}
	return out, first, nil
}

func sortSearch(n int, f func(int) bool) int { return sort.Search(n, f) }

func normalizeKey(k []any) []any {
	out := make([]any, len(k))
	for i, v := range k {
		switch x := v.(type) {
		case int:
			out[i] = int64(x)
		case int32:
			out[i] = int64(x)
		case uint32:
			out[i] = uint64(x)
		default:
			out[i] = yson.ValueOf(v)
		}
	}
	return out
}
