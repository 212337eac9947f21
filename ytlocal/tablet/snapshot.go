package tablet

import (
	"cmp"
	"fmt"
	"slices"

	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/yson"
)

type snapshotState struct {
	LastTimestamp Timestamp       `yson:"last_timestamp"`
	Tables        []tableSnapshot `yson:"tables"`
	Registrations []Registration  `yson:"registrations"`
}

type tableSnapshot struct {
	ID        string           `yson:"id"`
	Path      string           `yson:"path"`
	Schema    schema.Schema    `yson:"schema"`
	State     State            `yson:"state"`
	PivotKeys [][]any          `yson:"pivot_keys,omitempty"`
	Rows      []rowSnapshot    `yson:"rows,omitempty"`
	Tablets   []tabletSnapshot `yson:"tablets,omitempty"`
}

type rowSnapshot struct {
	Key      []any             `yson:"key"`
	Versions []versionSnapshot `yson:"versions"`
	WriteTS  []Timestamp       `yson:"write_ts"`
	ReadTS   []Timestamp       `yson:"read_ts"`
}

type versionSnapshot struct {
	TS      Timestamp `yson:"ts"`
	Values  []any     `yson:"values,omitempty"`
	Deleted bool      `yson:"deleted,omitempty"`
}

type tabletSnapshot struct {
	Trimmed    int64       `yson:"trimmed"`
	Timestamps []Timestamp `yson:"timestamps"`
	Rows       [][]any     `yson:"rows"`
}

// Snapshot serialises all tables, rows and registrations (not the open
// transactions, which do not survive a restart) as binary YSON.
func (e *Engine) Snapshot() ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := snapshotState{LastTimestamp: Timestamp(e.oracle.Last())}
	for _, t := range e.tables {
		ts := tableSnapshot{ID: t.id, Path: t.path, Schema: t.schema, State: t.state, PivotKeys: t.pivotKeys}
		for _, r := range t.sortedRows() {
			rs := rowSnapshot{Key: r.key, WriteTS: r.writeTS, ReadTS: r.readTS}
			for _, v := range r.versions {
				rs.Versions = append(rs.Versions, versionSnapshot{TS: v.ts, Values: v.values, Deleted: v.values == nil})
			}
			ts.Rows = append(ts.Rows, rs)
		}
		for _, tb := range t.tablets {
			s := tabletSnapshot{Trimmed: tb.trimmed, Timestamps: []Timestamp{}, Rows: [][]any{}}
			for _, r := range tb.rows {
				s.Timestamps = append(s.Timestamps, r.ts)
				s.Rows = append(s.Rows, r.values)
			}
			ts.Tablets = append(ts.Tablets, s)
		}
		st.Tables = append(st.Tables, ts)
	}
	for _, regs := range e.registrations {
		for _, r := range regs {
			st.Registrations = append(st.Registrations, *r)
		}
	}
	return yson.MarshalFormat(st, yson.FormatBinary)
}

// Restore replaces the engine state with a snapshot. Open transactions are
// dropped.
func (e *Engine) Restore(data []byte) error {
	var st snapshotState
	if err := yson.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("restore tablet snapshot: %w", err)
	}
	tables := map[string]*table{}
	for _, ts := range st.Tables {
		t, err := compileTable(ts.ID, ts.Path, ts.Schema, e.cfg.Compile)
		if err != nil {
			return fmt.Errorf("restore tablet snapshot: %w", err)
		}
		t.state = ts.State
		if t.sorted {
			t.pivotKeys = ts.PivotKeys
			if len(t.pivotKeys) == 0 {
				t.pivotKeys = [][]any{{}}
			}
			for _, rs := range ts.Rows {
				r := &row{key: rs.Key, writeTS: rs.WriteTS, readTS: rs.ReadTS}
				if len(r.writeTS) != len(t.groups) {
					r.writeTS = make([]Timestamp, len(t.groups))
				}
				if len(r.readTS) != len(t.groups) {
					r.readTS = make([]Timestamp, len(t.groups))
				}
				for _, v := range rs.Versions {
					values := v.Values
					if v.Deleted {
						values = nil
					} else if values == nil {
						values = []any{}
					}
					r.versions = append(r.versions, version{ts: v.TS, values: values})
				}
				enc := encodeKey(r.key)
				t.addRow(enc, r)
				if n := len(r.versions); n > 0 && r.versions[n-1].values == nil {
					t.tombstones = append(t.tombstones, tombstone{enc: enc, ts: r.versions[n-1].ts})
				}
			}
			slices.SortFunc(t.tombstones, func(a, b tombstone) int { return cmp.Compare(a.ts, b.ts) })
			t.dirty = true
		} else {
			t.tablets = nil
			for _, s := range ts.Tablets {
				tb := &orderedTablet{trimmed: s.Trimmed}
				for i, values := range s.Rows {
					tb.rows = append(tb.rows, orderedRow{ts: s.Timestamps[i], values: values})
				}
				t.tablets = append(t.tablets, tb)
			}
			if len(t.tablets) == 0 {
				t.tablets = []*orderedTablet{{}}
			}
		}
		tables[t.id] = t
	}
	regs := map[string]map[string]*Registration{}
	for _, r := range st.Registrations {
		if regs[r.Queue] == nil {
			regs[r.Queue] = map[string]*Registration{}
		}
		r := r
		regs[r.Queue][r.Consumer] = &r
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.tables = tables
	e.registrations = regs
	e.txs = map[string]*Tx{}
	e.oracle.Observe(uint64(st.LastTimestamp))
	return nil
}
