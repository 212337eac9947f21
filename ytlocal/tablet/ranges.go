package tablet

import (
	"slices"
	"sort"

	"github.com/ytflow/yt-flow/internal/ytvalue"
)

// Bound limits one key column of a KeyRange.
type Bound struct {
	Value     any
	Inclusive bool
}

// KeyRange selects the rows of a sorted table whose leading key columns equal
// Prefix and whose next key column lies within Lower and Upper (nil: unbounded).
type KeyRange struct {
	Prefix       []any
	Lower, Upper *Bound
}

// ScanRanges is Scan restricted to rows inside ranges, in key order. Ranges
// must all have prefixes of one length and the same bounds (the product of
// per-column value sets and a range on the next column, as a WHERE clause
// yields). When the ranges do not fit the table (an ordered table, descending
// keys, values that do not convert to the key column types) it scans the whole
// table: callers filter rows again, ranges only narrow the scan.
func (e *Engine) ScanRanges(tableID string, opts ReadOptions, ranges []KeyRange, yield func(row map[string]any) bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	ts, err := e.readTimestamp(opts)
	if err != nil {
		return err
	}
	t, err := e.readableTable(tableID)
	if err != nil {
		return err
	}
	norm, ok := t.normalizeRanges(ranges)
	if !ok {
		t.scan(ts, yield)
		return nil
	}
	index := t.sortedRows()
	m := make(map[string]any, len(t.cols))
	for _, r := range norm {
		p := len(r.Prefix)
		search := r.Prefix
		if r.Lower != nil {
			search = append(slices.Clip(r.Prefix), r.Lower.Value)
		}
		i := sort.Search(len(index), func(i int) bool {
			return t.compareKeys(index[i].key[:len(search)], search) >= 0
		})
		for ; i < len(index); i++ {
			key := index[i].key
			if t.compareKeys(key[:p], r.Prefix) != 0 {
				break
			}
			if r.Lower != nil && !r.Lower.Inclusive && ytvalue.Compare(key[p], r.Lower.Value) == 0 {
				continue
			}
			if r.Upper != nil {
				c := ytvalue.Compare(key[p], r.Upper.Value)
				if c > 0 || (c == 0 && !r.Upper.Inclusive) {
					break
				}
			}
			values := index[i].at(ts)
			if values == nil {
				continue
			}
			for j, c := range t.cols {
				m[c.name] = values[j]
			}
			if !yield(m) {
				return nil
			}
		}
	}
	return nil
}

// normalizeRanges converts range values to the key column types and sorts and
// deduplicates the ranges; ok=false means the ranges cannot be used.
func (t *table) normalizeRanges(ranges []KeyRange) ([]KeyRange, bool) {
	if len(ranges) == 0 {
		return nil, false
	}
	out := make([]KeyRange, 0, len(ranges))
	for _, r := range ranges {
		p := len(r.Prefix)
		if p > t.keys || (p == t.keys && (r.Lower != nil || r.Upper != nil)) || (p == 0 && r.Lower == nil && r.Upper == nil) {
			return nil, false
		}
		n := KeyRange{Prefix: make([]any, p)}
		for i, v := range r.Prefix {
			c := t.cols[i]
			if c.descending || v == nil {
				return nil, false
			}
			x, err := c.normalize(v)
			if err != nil {
				return nil, false
			}
			n.Prefix[i] = x
		}
		for _, b := range []struct{ in, out **Bound }{{&r.Lower, &n.Lower}, {&r.Upper, &n.Upper}} {
			if *b.in == nil {
				continue
			}
			c := t.cols[p]
			if c.descending || (*b.in).Value == nil {
				return nil, false
			}
			x, err := c.normalize((*b.in).Value)
			if err != nil {
				return nil, false
			}
			*b.out = &Bound{Value: x, Inclusive: (*b.in).Inclusive}
		}
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b KeyRange) int { return t.compareKeys(a.Prefix, b.Prefix) })
	out = slices.CompactFunc(out, func(a, b KeyRange) bool { return t.compareKeys(a.Prefix, b.Prefix) == 0 })
	return out, true
}
