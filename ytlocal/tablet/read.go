package tablet

import (
	"fmt"
	"strconv"
	"sync/atomic"

	"go.ytsaurus.tech/yt/go/yterrors"
)

// RowSet is a read result: column names and rows with one value per column.
// A nil row stands for a missing key (lookup with keep_missing_rows).
type RowSet struct {
	Columns []string
	Rows    [][]any
}

// ReadOptions choose the snapshot of a read.
type ReadOptions struct {
	// Timestamp reads the state as of this timestamp; 0 and the
	// LastCommitted sentinels read the latest state.
	Timestamp Timestamp
	// Tx reads at the start timestamp of this transaction (and renews its
	// lease) unless Timestamp is set.
	Tx string
}

func (e *Engine) readTimestamp(o ReadOptions) (Timestamp, error) {
	if o.Timestamp != 0 && o.Timestamp < MaxTimestamp {
		return o.Timestamp, nil
	}
	if o.Tx != "" {
		tx, err := e.tx(o.Tx)
		if err != nil {
			return 0, err
		}
		return tx.start, nil
	}
	return MaxTimestamp, nil
}

// LookupOptions are the lookup_rows options.
type LookupOptions struct {
	ReadOptions
	Columns         []string // nil: all columns in schema order
	KeepMissingRows bool
}

// Lookup reads rows of a sorted table by key, in the order of keys.
func (e *Engine) Lookup(tableID string, keys []map[string]any, opts LookupOptions) (*RowSet, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ts, err := e.readTimestamp(opts.ReadOptions)
	if err != nil {
		return nil, err
	}
	t, err := e.readableTable(tableID)
	if err != nil {
		return nil, err
	}
	if !t.sorted {
		return nil, yterrors.Err(yterrors.CodeGeneric, fmt.Sprintf("Cannot lookup rows in ordered table %s", t.path))
	}
	idx, names, err := t.projection(opts.Columns)
	if err != nil {
		return nil, err
	}
	out := &RowSet{Columns: names}
	for _, m := range keys {
		key, err := t.keyOf(m)
		if err != nil {
			return nil, schemaError(t, err)
		}
		var values []any
		if r := t.rows[encodeKey(key)]; r != nil {
			values = r.at(ts)
		}
		if values == nil {
			if opts.KeepMissingRows {
				out.Rows = append(out.Rows, nil)
			}
			continue
		}
		out.Rows = append(out.Rows, project(values, idx))
	}
	return out, nil
}

func (t *table) projection(columns []string) ([]int, []string, error) {
	if columns == nil {
		idx := make([]int, len(t.cols))
		names := make([]string, len(t.cols))
		for i, c := range t.cols {
			idx[i], names[i] = i, c.name
		}
		return idx, names, nil
	}
	idx := make([]int, len(columns))
	for i, name := range columns {
		j, ok := t.byName[name]
		if !ok {
			return nil, nil, yterrors.Err(yterrors.CodeGeneric, fmt.Sprintf("No such column %q in table %s", name, t.path))
		}
		idx[i] = j
	}
	return idx, columns, nil
}

func project(values []any, idx []int) []any {
	out := make([]any, len(idx))
	for i, j := range idx {
		out[i] = values[j]
	}
	return out
}

// Columns returns the columns "*" expands to: for ordered tables
// $tablet_index and $row_index first, then the schema columns.
func (e *Engine) Columns(tableID string) ([]string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, err := e.table(tableID)
	if err != nil {
		return nil, err
	}
	return t.starColumns(), nil
}

func (t *table) starColumns() []string {
	var names []string
	if !t.sorted {
		names = append(names, "$tablet_index", "$row_index")
	}
	for _, c := range t.cols {
		names = append(names, c.name)
	}
	return names
}

// Scan calls yield with every row visible at the read timestamp: sorted
// tables in key order, ordered tables by ($tablet_index, $row_index) with
// those two int64 columns added. yield must not call the engine and must not
// retain the row: the map is reused for the next row. Returning false stops the
// scan.
func (e *Engine) Scan(tableID string, opts ReadOptions, yield func(row map[string]any) bool) error {
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
	t.scan(ts, yield)
	return nil
}

// scan yields every row of t visible at ts (see Engine.Scan); caller holds e.mu.
func (t *table) scan(ts Timestamp, yield func(row map[string]any) bool) {
	m := make(map[string]any, len(t.cols)+2)
	if t.sorted {
		for _, r := range t.sortedRows() {
			values := r.at(ts)
			if values == nil {
				continue
			}
			for i, c := range t.cols {
				m[c.name] = values[i]
			}
			if !yield(m) {
				return
			}
		}
		return
	}
	for ti, tb := range t.tablets {
		for i, r := range tb.rows {
			if r.ts > ts {
				break
			}
			t.fillOrderedRow(m, ti, tb.trimmed+int64(i), r)
			if !yield(m) {
				return
			}
		}
	}
}

func (t *table) fillOrderedRow(m map[string]any, tablet int, index int64, r orderedRow) {
	m["$tablet_index"] = int64(tablet)
	m["$row_index"] = index
	for i, c := range t.cols {
		switch c.name {
		case "$timestamp":
			m[c.name] = uint64(r.ts)
		default:
			m[c.name] = r.values[i]
		}
	}
}

var implicitTxSeq atomic.Uint64

// Run executes fn in a new tablet transaction and commits it (the implicit
// transaction of a write without transaction_id). On error nothing is written.
func (e *Engine) Run(fn func(txID string) error) (Timestamp, error) {
	id := "implicit-" + strconv.FormatUint(implicitTxSeq.Add(1), 10)
	if _, err := e.StartTx(id, 0); err != nil {
		return 0, err
	}
	if err := fn(id); err != nil {
		_ = e.Abort(id)
		return 0, err
	}
	return e.Commit(id, nil, nil)
}

// RowCount returns the number of live rows: sorted tables count keys with a
// row, ordered tables the rows not trimmed away.
func (e *Engine) RowCount(tableID string) (int64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, err := e.table(tableID)
	if err != nil {
		return 0, err
	}
	var n int64
	if t.sorted {
		for _, r := range t.rows {
			if r.latest() != nil {
				n++
			}
		}
		return n, nil
	}
	for _, tb := range t.tablets {
		n += int64(len(tb.rows))
	}
	return n, nil
}
