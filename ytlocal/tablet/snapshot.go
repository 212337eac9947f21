package tablet

import (
	"bytes"
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

// MarshalYSON writes the row as the reflection encoder would (the same keys, values
// omitted when empty, deleted only when set), several times faster: snapshots hold every
// row of every table.
func (r rowSnapshot) MarshalYSON(w *yson.Writer) error {
	w.BeginMap()
	writeValues(w, "key", r.Key)
	w.MapKeyString("versions")
	w.BeginList()
	for _, v := range r.Versions {
		w.BeginMap()
		w.MapKeyString("ts")
		w.Uint64(uint64(v.TS))
		if len(v.Values) > 0 {
			writeValues(w, "values", v.Values)
		}
		if v.Deleted {
			w.MapKeyString("deleted")
			w.Bool(true)
		}
		w.EndMap()
	}
	w.EndList()
	w.MapKeyString("write_ts")
	writeTimestamps(w, r.WriteTS)
	w.MapKeyString("read_ts")
	writeTimestamps(w, r.ReadTS)
	w.EndMap()
	return w.Err()
}

func writeTimestamps(w *yson.Writer, ts []Timestamp) {
	w.BeginList()
	for _, t := range ts {
		w.Uint64(uint64(t))
	}
	w.EndList()
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
	return e.CaptureSnapshot()()
}

// CaptureSnapshot copies what a snapshot holds under the engine lock and returns the
// function that encodes the copy: the encoding, most of a snapshot's cost, may run
// without any lock while the engine goes on (the server writes snapshots in the
// background, TestSnapshotDoesNotStallCommands). The copy shares only what commits never
// change once applied (keys and the values of versions and queue rows); rows are taken in
// map order, as Restore does not need key order.
func (e *Engine) CaptureSnapshot() func() ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := snapshotState{LastTimestamp: Timestamp(e.oracle.Last())}
	for _, t := range e.tables {
		ts := tableSnapshot{ID: t.id, Path: t.path, Schema: t.schema, State: t.state, PivotKeys: t.pivotKeys}
		if len(t.rows) > 0 {
			// One array each for all rows' versions and lock timestamps: a table of a
			// million rows is copied with a few allocations, not millions.
			nv, nl := 0, 0
			for _, r := range t.rows {
				nv += len(r.versions)
				nl += len(r.writeTS) + len(r.readTS)
			}
			versions, locks := make([]versionSnapshot, 0, nv), make([]Timestamp, 0, nl)
			ts.Rows = make([]rowSnapshot, 0, len(t.rows))
			for _, r := range t.rows {
				v0 := len(versions)
				for _, v := range r.versions {
					versions = append(versions, versionSnapshot{TS: v.ts, Values: v.values, Deleted: v.values == nil})
				}
				l0 := len(locks)
				locks = append(append(locks, r.writeTS...), r.readTS...)
				l1 := l0 + len(r.writeTS)
				ts.Rows = append(ts.Rows, rowSnapshot{Key: r.key, Versions: versions[v0:len(versions):len(versions)],
					WriteTS: locks[l0:l1:l1], ReadTS: locks[l1:len(locks):len(locks)]})
			}
		}
		for _, tb := range t.tablets {
			s := tabletSnapshot{Trimmed: tb.trimmed, Timestamps: make([]Timestamp, len(tb.rows)), Rows: make([][]any, len(tb.rows))}
			for i, r := range tb.rows {
				s.Timestamps[i] = r.ts
				s.Rows[i] = r.values
			}
			ts.Tablets = append(ts.Tablets, s)
		}
		st.Tables = append(st.Tables, ts)
	}
	for _, regs := range e.registrations {
		for _, r := range regs {
			reg := *r
			reg.Partitions = slices.Clone(r.Partitions)
			st.Registrations = append(st.Registrations, reg)
		}
	}
	size := 1 << 10 // the encoding's size, roughly: one allocation instead of doubling
	for _, t := range st.Tables {
		size += 128 * len(t.Rows)
		for _, tb := range t.Tablets {
			size += 64 * len(tb.Rows)
		}
	}
	return func() ([]byte, error) {
		var buf bytes.Buffer
		buf.Grow(size)
		w := yson.NewWriterConfig(&buf, yson.WriterConfig{Format: yson.FormatBinary})
		w.Any(st)
		if err := w.Finish(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
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
