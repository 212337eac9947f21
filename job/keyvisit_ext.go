// Key visitors over external state (key_visitor_streams/<id>/external_names): the keys of the
// rows of external state tables are visited as the keys that have internal state are.

package job

import (
	"context"
	"fmt"
	"sort"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/ytstore"
)

// keyScanner reads a page of a sorted dynamic table in key order (ytstore.Store.ScanKeys).
type keyScanner interface {
	ScanKeys(ctx context.Context, k ytstore.KeyScan) ([]map[string]any, error)
}

// scanVisitKeys reads the keys of visitor v with a hash in [from, to) (to 0 = 2^64): the keys
// with one of its internal states (none when it names only external states) and the keys of
// the rows of its external states' tables, each read at most limit rows at a time. It
// returns them in key order without repeats, and next, where the following scan starts: the
// least of the scans' (every key below it is read, and no hash is split).
func (r *runner) scanVisitKeys(ctx context.Context, v *keyVisitor, from, to uint64, limit int) ([]ytstore.StateKey, uint64, error) {
	var keys []ytstore.StateKey
	next := to
	if len(v.spec.Names) > 0 || len(v.spec.ExternalNames) == 0 {
		ks, n, err := r.scanner.ScanStateKeys(ctx, r.comp.ID, v.spec.Names, from, to, limit)
		if err != nil {
			return nil, 0, err
		}
		keys, next = ks, n
	}
	if len(v.spec.ExternalNames) == 0 {
		return keys, next, nil
	}
	tables, err := r.externals(ctx)
	if err != nil {
		return nil, 0, err
	}
	for _, name := range v.spec.ExternalNames {
		var t *extTable
		for _, x := range tables {
			if x.name == name {
				t = x
			}
		}
		if t == nil {
			return nil, 0, fmt.Errorf("external state %s is not an external state of computation %s", name, r.comp.ID)
		}
		ks, n, err := r.scanTableKeys(ctx, t, from, to, limit)
		if err != nil {
			return nil, 0, fmt.Errorf("external state %s: %w", name, err)
		}
		keys = append(keys, ks...)
		next = minNext(next, n)
	}
	// Keep what every scan covered, once, in key order.
	sort.SliceStable(keys, func(i, j int) bool {
		if keys[i].KeyHash != keys[j].KeyHash {
			return keys[i].KeyHash < keys[j].KeyHash
		}
		return string(keys[i].Key) < string(keys[j].Key)
	})
	out := keys[:0]
	for _, k := range keys {
		if next != 0 && k.KeyHash >= next {
			break
		}
		if n := len(out); n > 0 && out[n-1].KeyHash == k.KeyHash && string(out[n-1].Key) == string(k.Key) {
			continue
		}
		out = append(out, k)
	}
	return out, next, nil
}

// minNext is the lesser of two scan ends, 0 meaning 2^64.
func minNext(a, b uint64) uint64 {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

// scanTableKeys reads the keys of table t's rows with a hash in [from, to), at most limit rows,
// a hash never split (one that fills the limit is read whole); next as ScanStateKeys'.
func (r *runner) scanTableKeys(ctx context.Context, t *extTable, from, to uint64, limit int) ([]ytstore.StateKey, uint64, error) {
	scanner, ok := r.scanner.(keyScanner)
	if !ok {
		return nil, 0, fmt.Errorf("the store cannot scan tables")
	}
	rows, err := scanner.ScanKeys(ctx, ytstore.KeyScan{Path: t.path, Keys: t.keys, Lo: from, Hi: to, Limit: limit})
	if err != nil {
		return nil, 0, err
	}
	next := to
	if len(rows) == limit && limit > 0 {
		first, _ := rows[0][t.keys[0]].(uint64)
		last, _ := rows[len(rows)-1][t.keys[0]].(uint64)
		if first == last {
			if rows, err = scanner.ScanKeys(ctx, ytstore.KeyScan{Path: t.path, Keys: t.keys, Lo: last, Hi: last + 1, Limit: 1 << 30}); err != nil {
				return nil, 0, err
			}
		} else {
			for len(rows) > 0 {
				if h, _ := rows[len(rows)-1][t.keys[0]].(uint64); h != last {
					break
				}
				rows = rows[:len(rows)-1]
			}
			last--
		}
		next = last + 1
	}
	out := make([]ytstore.StateKey, 0, len(rows))
	for _, row := range rows {
		k := make(flow.Key, len(t.keys))
		for i, c := range t.keys {
			k[i] = row[c]
		}
		out = append(out, ytstore.StateKey{KeyHash: epoch.KeyHash(k), Key: epoch.EncodeKey(k)})
	}
	return out, next, nil
}
