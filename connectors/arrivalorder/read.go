package arrivalorder

import (
	"context"
	"fmt"
	"slices"

	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/ytstore"
)

// Directory is an output directory as ReadDirectory found it.
type Directory struct {
	Path     string
	Progress *Progress // nil: no @progress
	Tables   []Table   // in key order
}

// Table is one child table of an output directory.
type Table struct {
	Name           string
	TableTimestamp string // @table_timestamp, "" when absent
	ExpirationTime string // @expiration_time, "" when absent
	Rows           []map[string]any
}

// ReadDirectory reads an output directory: its @progress and every child table with its
// rows (for tests and tools; it reads whole tables).
func ReadDirectory(ctx context.Context, st *ytstore.Store, dir string) (*Directory, error) {
	d := &Directory{Path: dir}
	var raw yson.RawValue
	if err := st.GetAttribute(ctx, dir, ProgressAttribute, &raw); err == nil {
		d.Progress = &Progress{}
		if err := yson.Unmarshal(raw, d.Progress); err != nil {
			return nil, fmt.Errorf("%s/@%s: %w", dir, ProgressAttribute, err)
		}
	}
	nodes, err := st.ListDir(ctx, dir, "table_timestamp", "expiration_time")
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		if n.Type != "table" {
			return nil, fmt.Errorf("%s is a %s, not a table", n.Path, n.Type)
		}
		rows, err := st.ReadTableRange(ctx, n.Path, 0, n.RowCount())
		if err != nil {
			return nil, err
		}
		ts, _ := n.Attributes["table_timestamp"].(string)
		exp, _ := n.Attributes["expiration_time"].(string)
		d.Tables = append(d.Tables, Table{Name: n.Name, TableTimestamp: ts, ExpirationTime: exp, Rows: rows})
	}
	return d, nil
}

// Check tells whether the directory is consistent with its @progress: the table sequence
// names exactly the child tables, each with the @table_timestamp of its slot, in increasing
// slot order.
func (d *Directory) Check() error {
	if d.Progress == nil {
		if len(d.Tables) > 0 {
			return fmt.Errorf("%s: %d tables and no @%s", d.Path, len(d.Tables), ProgressAttribute)
		}
		return nil
	}
	have := map[string]Table{}
	for _, t := range d.Tables {
		have[t.Name] = t
	}
	seq := d.Progress.Tables
	if !d.sequenceSorted() {
		return fmt.Errorf("%s: @%s/tables is not in slot order: %v", d.Path, ProgressAttribute, seq)
	}
	for _, s := range seq {
		t, ok := have[s.Name]
		if !ok {
			return fmt.Errorf("%s: @%s names table %s, which does not exist", d.Path, ProgressAttribute, s.Name)
		}
		if want := iso(s.Timestamp); t.TableTimestamp != want {
			return fmt.Errorf("%s/%s: @table_timestamp %q, want %q", d.Path, s.Name, t.TableTimestamp, want)
		}
		delete(have, s.Name)
	}
	for name := range have {
		return fmt.Errorf("%s: table %s is not in @%s", d.Path, name, ProgressAttribute)
	}
	return nil
}

func (d *Directory) sequenceSorted() bool {
	return slices.IsSortedFunc(d.Progress.Tables, func(a, b Slot) int { return cmpU(a.Timestamp, b.Timestamp) })
}
