// External state (external_state_managers): the rows of users' sorted dynamic tables that a
// keyed computation reads at the start of an epoch and writes in its commit.

package job

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/ytstore"
)

// externalStore is what external state needs of the cluster (*ytstore.Store): a table's
// schema, and its rows by key (one result per key, nil for none).
//
// SelectUserRowsByPrefix reads every row whose columns cols hold one of prefixes (a table
// with several rows per key).
type externalStore interface {
	TableSchema(ctx context.Context, path string) (schema.Schema, error)
	LookupUserRows(ctx context.Context, path string, keys []map[string]any) ([]map[string]any, error)
	SelectUserRowsByPrefix(ctx context.Context, path string, cols []string, prefixes [][]any) ([]map[string]any, error)
}

// extTable is one external state of the computation (a joiner's is read only).
type extTable struct {
	name, path string
	joiner     bool
	// keys are the table's leading key columns: the group_by_schema columns, in order; extra
	// are its further key columns (none: one row per key; some: several rows per key).
	keys, extra []string
	// computed are the key columns with an expression: the table computes them, so writes
	// and lookups leave them out.
	computed map[string]bool
	// cache holds a joiner's rows by encoded key, for its dynamic cache{ttl}.
	cache ttlCache[flow.Row]
}

// externals opens the external states of the computation once: each table's leading key
// columns must be the group_by_schema columns; further key columns make several rows per key.
func (r *runner) externals(ctx context.Context) ([]*extTable, error) {
	if r.ext != nil || len(r.comp.ExternalStates) == 0 {
		return r.ext, nil
	}
	var want []string
	for _, c := range r.comp.GroupBy.Columns {
		want = append(want, c.Name)
	}
	var out []*extTable
	for _, name := range sortedIDs(r.comp.ExternalStates) {
		es := r.comp.ExternalStates[name]
		sc, err := r.extStore.TableSchema(ctx, es.Path)
		if err != nil {
			return nil, fmt.Errorf("computation %s: external state %s: %w", r.comp.ID, name, err)
		}
		t := &extTable{name: name, path: es.Path, joiner: es.Joiner, computed: map[string]bool{}}
		for _, c := range sc.Columns {
			if c.SortOrder != schema.SortNone {
				t.keys = append(t.keys, c.Name)
				if c.Expression != "" {
					t.computed[c.Name] = true
				}
			}
		}
		// Invariant: a table's leading key columns are the group_by_schema columns, so one
		// partition owns each key's rows (TestExternalTableKeyColumns).
		if len(t.keys) < len(want) || !slices.Equal(t.keys[:len(want)], want) {
			return nil, fmt.Errorf("computation %s: external state %s: table %s has key columns %v, want the group_by_schema columns %v first",
				r.comp.ID, name, es.Path, t.keys, want)
		}
		t.keys, t.extra = t.keys[:len(want)], t.keys[len(want):]
		for _, c := range t.extra {
			if t.computed[c] {
				return nil, fmt.Errorf("computation %s: external state %s: table %s: further key column %s is computed; only the group_by_schema columns may be",
					r.comp.ID, name, es.Path, c)
			}
		}
		out = append(out, t)
	}
	r.ext = out
	return out, nil
}

// keyRow is the table key of k: the key columns the table does not compute.
func (t *extTable) keyRow(k flow.Key) map[string]any {
	row := make(map[string]any, len(t.keys))
	for i, c := range t.keys {
		if !t.computed[c] && i < len(k) {
			row[c] = k[i]
		}
	}
	return row
}

// loadExternal reads the rows of every external state for the keys of b's inputs and timers:
// state name -> encoded key -> row. A joiner with a dynamic cache{ttl} reads only the keys
// it has not read within the ttl before now.
//
// Invariant: a joined external state row read less than cache{ttl} ago is served from the
// job's cache; with no ttl every epoch reads the table (TestExternalJoinerCacheTTL).
func (r *runner) loadExternal(ctx context.Context, b *epoch.Batch, now time.Time) (map[string]map[string]flow.Row, map[string]map[string][]flow.Row, error) {
	tables, err := r.externals(ctx)
	if err != nil || len(tables) == 0 {
		return nil, nil, err
	}
	seen := map[string]bool{}
	var keys []flow.Key
	var encs []string
	add := func(k flow.Key) {
		enc := string(epoch.EncodeKey(k))
		if !seen[enc] {
			seen[enc] = true
			keys, encs = append(keys, k), append(encs, enc)
		}
	}
	for _, t := range b.Timers {
		add(t.Timer.Key)
	}
	for _, in := range b.Inputs {
		add(in.Message.Key)
	}
	out := make(map[string]map[string]flow.Row, len(tables))
	var multi map[string]map[string][]flow.Row
	for _, t := range tables {
		if len(t.extra) > 0 {
			m, err := r.loadRows(ctx, t, keys, encs)
			if err != nil {
				return nil, nil, err
			}
			if multi == nil {
				multi = map[string]map[string][]flow.Row{}
			}
			multi[t.name] = m
			continue
		}
		var ttl time.Duration
		if t.joiner {
			ttl = r.dyn.ExternalStateJoiners[t.name].TTL
			t.cache.evict(now, ttl)
		}
		m := make(map[string]flow.Row, len(keys))
		var lk []map[string]any
		var at []string // encoded key of lk[i]
		for i, k := range keys {
			if row, found, ok := t.cache.get(encs[i], now, ttl); ok {
				if found {
					m[encs[i]] = row
				}
				continue
			}
			lk = append(lk, t.keyRow(k))
			at = append(at, encs[i])
		}
		if len(lk) > 0 {
			rows, err := r.extStore.LookupUserRows(ctx, t.path, lk)
			if err != nil {
				return nil, nil, fmt.Errorf("external state %s: %w", t.name, err)
			}
			for i, row := range rows {
				if row != nil {
					m[at[i]] = row
				}
				if t.joiner {
					t.cache.put(at[i], row, row != nil, now, ttl)
				}
			}
		}
		out[t.name] = m
	}
	return out, multi, nil
}

// loadRows reads every row of each key (keys[i], encoded encs[i]) of a table with several
// rows per key: encoded key -> rows, ordered by the further key columns.
func (r *runner) loadRows(ctx context.Context, t *extTable, keys []flow.Key, encs []string) (map[string][]flow.Row, error) {
	var cols []string
	var at []int // key column index of cols[j]
	for i, c := range t.keys {
		if !t.computed[c] {
			cols, at = append(cols, c), append(at, i)
		}
	}
	prefixes := make([][]any, len(keys))
	byPrefix := make(map[string]string, len(keys)) // encoded filter values -> encoded key
	for i, k := range keys {
		p := make([]any, len(at))
		for j, ki := range at {
			if ki < len(k) {
				p[j] = k[ki]
			}
		}
		prefixes[i] = p
		byPrefix[string(epoch.EncodeKey(p))] = encs[i]
	}
	rows, err := r.extStore.SelectUserRowsByPrefix(ctx, t.path, cols, prefixes)
	if err != nil {
		return nil, fmt.Errorf("external state %s: %w", t.name, err)
	}
	out := make(map[string][]flow.Row, len(keys))
	p := make([]any, len(cols))
	for _, row := range rows {
		for j, c := range cols {
			p[j] = normalize(row[c])
		}
		if enc, ok := byPrefix[string(epoch.EncodeKey(p))]; ok {
			out[enc] = append(out[enc], row)
		}
	}
	for _, rs := range out {
		slices.SortFunc(rs, func(a, b flow.Row) int { return compareRows(a, b, t.extra) })
	}
	return out, nil
}

// compareRows orders rows by the values of cols (YSON scalars of one type per column).
func compareRows(a, b flow.Row, cols []string) int {
	for _, c := range cols {
		x, y := fmt.Sprint(a[c]), fmt.Sprint(b[c])
		switch xv := a[c].(type) {
		case int64:
			if yv, ok := b[c].(int64); ok && xv != yv {
				return cmpInt(xv < yv)
			}
			continue
		case uint64:
			if yv, ok := b[c].(uint64); ok && xv != yv {
				return cmpInt(xv < yv)
			}
			continue
		}
		if x != y {
			return cmpInt(x < y)
		}
	}
	return 0
}

func cmpInt(less bool) int {
	if less {
		return -1
	}
	return 1
}

// externalWrites turns the external writes of an epoch's results (results[i] of
// plan.Groups[i]) into writes of the epoch transaction: an upsert of the whole row, with the
// key columns from the key, or a deletion by key.
//
// Invariant: external state is written in the epoch transaction, so its changes commit
// exactly once with the epoch's outputs and input registrations (TestExternalStateFollowsModel,
// TestExternalStateEndToEnd).
func (r *runner) externalWrites(plan *epoch.Plan, results []*flow.Result) ([]ytstore.SinkWrite, error) {
	if len(r.ext) == 0 {
		for i, res := range results {
			if res != nil && len(res.ExternalRowWrites) > 0 {
				for name := range res.ExternalRowWrites {
					return nil, fmt.Errorf("job %s: computation %s: key %v: external state %s is not declared in external_state_managers",
						r.job.JobID, r.comp.ID, plan.Groups[i].Key, name)
				}
			}
			if res != nil && len(res.ExternalWrites) > 0 {
				for name := range res.ExternalWrites {
					return nil, fmt.Errorf("job %s: computation %s: key %v: external state %s is not declared in external_state_managers",
						r.job.JobID, r.comp.ID, plan.Groups[i].Key, name)
				}
			}
		}
		return nil, nil
	}
	byName := make(map[string]*extTable, len(r.ext))
	for _, t := range r.ext {
		byName[t.name] = t
	}
	upserts := make([]ytstore.SinkWrite, len(r.ext))
	deletes := make([]ytstore.SinkWrite, len(r.ext))
	index := map[string]int{}
	for i, t := range r.ext {
		upserts[i], deletes[i] = ytstore.SinkWrite{Path: t.path}, ytstore.SinkWrite{Path: t.path, Delete: true}
		index[t.name] = i
	}
	for i, res := range results {
		if res == nil {
			continue
		}
		key := plan.Groups[i].Key
		for name, writes := range res.ExternalRowWrites {
			t, ok := byName[name]
			if !ok || t.joiner {
				why := "is not declared in external_state_managers"
				if ok {
					why = "is a joiner (external_state_joiners): read only"
				}
				return nil, fmt.Errorf("job %s: computation %s: key %v: external state %s %s",
					r.job.JobID, r.comp.ID, key, name, why)
			}
			j := index[name]
			for _, w := range writes {
				full := t.keyRow(key)
				for _, c := range t.extra {
					full[c] = w.Row[c]
				}
				if w.Delete {
					deletes[j].Rows = append(deletes[j].Rows, full)
					continue
				}
				for c, v := range w.Row {
					if _, isKey := full[c]; isKey || t.computed[c] {
						continue
					}
					full[c] = v
				}
				upserts[j].Rows = append(upserts[j].Rows, full)
			}
		}
		for name, row := range res.ExternalWrites {
			t, ok := byName[name]
			if !ok || t.joiner {
				why := "is not declared in external_state_managers"
				if ok {
					why = "is a joiner (external_state_joiners): read only"
				}
				return nil, fmt.Errorf("job %s: computation %s: key %v: external state %s %s",
					r.job.JobID, r.comp.ID, key, name, why)
			}
			j := index[name]
			if row == nil {
				deletes[j].Rows = append(deletes[j].Rows, t.keyRow(key))
				continue
			}
			full := t.keyRow(key)
			for c, v := range row {
				if _, isKey := full[c]; isKey || t.computed[c] {
					continue // the key's own values stand
				}
				full[c] = v
			}
			upserts[j].Rows = append(upserts[j].Rows, full)
		}
	}
	var out []ytstore.SinkWrite
	for j := range r.ext {
		if len(upserts[j].Rows) > 0 {
			out = append(out, upserts[j])
		}
		if len(deletes[j].Rows) > 0 {
			out = append(out, deletes[j])
		}
	}
	return out, nil
}

// externalRowsOf is the ExternalRows map of one invocation of key k.
func externalRowsOf(loaded map[string]map[string][]flow.Row, k flow.Key, buf []byte) (map[string][]flow.Row, []byte) {
	if len(loaded) == 0 {
		return nil, buf
	}
	buf = epoch.AppendKey(buf[:0], k)
	out := make(map[string][]flow.Row, len(loaded))
	for name, m := range loaded {
		if rows, ok := m[string(buf)]; ok {
			out[name] = rows
		}
	}
	return out, buf
}

// externalSubKeys is the ExternalSubKeys map of the computation's invocations (nil: no
// table with several rows per key).
func externalSubKeys(tables []*extTable) map[string][]string {
	var out map[string][]string
	for _, t := range tables {
		if len(t.extra) > 0 {
			if out == nil {
				out = map[string][]string{}
			}
			out[t.name] = t.extra
		}
	}
	return out
}

// externalOf is the External map of one invocation of key k.
func externalOf(loaded map[string]map[string]flow.Row, k flow.Key, buf []byte) (map[string]flow.Row, []byte) {
	if len(loaded) == 0 {
		return nil, buf
	}
	buf = epoch.AppendKey(buf[:0], k)
	out := make(map[string]flow.Row, len(loaded))
	for name, m := range loaded {
		if row, ok := m[string(buf)]; ok {
			out[name] = row
		}
	}
	return out, buf
}
