package tablet

import (
	"fmt"

	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/yterrors"
)

func (e *Engine) table(id string) (*table, error) {
	t, ok := e.tables[id]
	if !ok {
		return nil, yterrors.Err(yterrors.CodeResolveError, fmt.Sprintf("No dynamic table with id %s", id))
	}
	return t, nil
}

// CreateTable registers a dynamic table with the given Cypress id and path.
// The table starts unmounted unless state says otherwise.
func (e *Engine) CreateTable(id, path string, s schema.Schema, state State) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, err := compileTable(id, path, s, e.cfg.Compile); err != nil {
		return yterrors.Err(yterrors.CodeGeneric, err.Error(), yterrors.Attr("path", path))
	}
	return e.commit(&Record{Kind: RecordCreateTable, Table: id, Path: path, Schema: &s, State: state})
}

// CheckSchema reports whether s is a valid dynamic table schema.
func (e *Engine) CheckSchema(path string, s schema.Schema) error {
	if _, err := compileTable("", path, s, e.cfg.Compile); err != nil {
		return yterrors.Err(yterrors.CodeGeneric, err.Error(), yterrors.Attr("path", path))
	}
	return nil
}

// RemoveTable forgets a table; unknown ids are ignored.
func (e *Engine) RemoveTable(id string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.tables[id]; !ok {
		return nil
	}
	return e.commit(&Record{Kind: RecordRemoveTable, Table: id})
}

// RenameTable updates the path a table reports in errors.
func (e *Engine) RenameTable(id, path string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.tables[id]; !ok {
		return nil
	}
	return e.commit(&Record{Kind: RecordRenameTable, Table: id, Path: path})
}

// HasTable reports whether id is a dynamic table.
func (e *Engine) HasTable(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.tables[id]
	return ok
}

// AlterTable replaces the schema of an unmounted table, keeping data by column name.
func (e *Engine) AlterTable(id string, s schema.Schema) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, err := e.table(id)
	if err != nil {
		return err
	}
	if t.state != StateUnmounted {
		return yterrors.Err(yterrors.CodeInvalidTabletState, fmt.Sprintf("Cannot alter table %s: table is not unmounted", t.path), yterrors.Attr("path", t.path))
	}
	nt, err := compileTable(id, t.path, s, e.cfg.Compile)
	if err != nil {
		return yterrors.Err(yterrors.CodeGeneric, err.Error(), yterrors.Attr("path", t.path))
	}
	if nt.sorted != t.sorted {
		return yterrors.Err(yterrors.CodeGeneric, fmt.Sprintf("Cannot alter table %s between sorted and ordered", t.path))
	}
	return e.commit(&Record{Kind: RecordAlterTable, Table: id, Path: t.path, Schema: &s})
}

// Schema returns the schema of a dynamic table, unique_keys set for sorted ones.
func (e *Engine) Schema(id string) (schema.Schema, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, err := e.table(id)
	if err != nil {
		return schema.Schema{}, err
	}
	return t.schema, nil
}

// TabletState returns the table's mount state.
func (e *Engine) TabletState(id string) (State, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, err := e.table(id)
	if err != nil {
		return "", err
	}
	return t.state, nil
}

// TabletInfo describes one tablet for the @tablets attribute.
type TabletInfo struct {
	Index           int
	State           State
	PivotKey        []any // sorted tables
	TrimmedRowCount int64 // ordered tables
	RowCount        int64 // ordered: total rows ever written (trimmed included)
}

// Tablets describes the tablets of a table.
func (e *Engine) Tablets(id string) ([]TabletInfo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, err := e.table(id)
	if err != nil {
		return nil, err
	}
	var out []TabletInfo
	if t.sorted {
		for i, pk := range t.pivotKeys {
			out = append(out, TabletInfo{Index: i, State: t.state, PivotKey: pk})
		}
		return out, nil
	}
	for i, tb := range t.tablets {
		out = append(out, TabletInfo{Index: i, State: t.state, TrimmedRowCount: tb.trimmed, RowCount: tb.count()})
	}
	return out, nil
}

// SetState mounts, unmounts, freezes or unfreezes a table. Transitions to the
// current state succeed; freezing an unmounted table fails with 1706.
func (e *Engine) SetState(id string, state State) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, err := e.table(id)
	if err != nil {
		return err
	}
	if t.state == state {
		return nil
	}
	if state == StateFrozen && t.state == StateUnmounted {
		return yterrors.Err(yterrors.CodeInvalidTabletState, fmt.Sprintf("Cannot freeze table %s: it is not mounted", t.path), yterrors.Attr("path", t.path))
	}
	return e.commit(&Record{Kind: RecordSetState, Table: id, State: state})
}

// Reshard changes the tablet layout of an unmounted table: tabletCount for
// any table, or pivotKeys (first must be empty, strictly increasing) for
// sorted ones.
func (e *Engine) Reshard(id string, tabletCount int, pivotKeys [][]any) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, err := e.table(id)
	if err != nil {
		return err
	}
	fail := func(format string, args ...any) error {
		return yterrors.Err(yterrors.CodeGeneric, fmt.Sprintf("Cannot reshard table %s: ", t.path)+fmt.Sprintf(format, args...), yterrors.Attr("path", t.path))
	}
	if t.state != StateUnmounted {
		return yterrors.Err(yterrors.CodeInvalidTabletState, fmt.Sprintf("Cannot reshard table %s: tablets are not unmounted", t.path), yterrors.Attr("path", t.path))
	}
	rec := &Record{Kind: RecordReshard, Table: id, TabletCount: tabletCount}
	switch {
	case len(pivotKeys) > 0:
		if !t.sorted {
			return fail("pivot keys are only valid for sorted tables")
		}
		if len(pivotKeys[0]) != 0 {
			return fail("first pivot key must be empty")
		}
		norm := make([][]any, len(pivotKeys))
		for i, pk := range pivotKeys {
			if len(pk) > t.keys {
				return fail("pivot key %d has %d values, table has %d key columns", i, len(pk), t.keys)
			}
			norm[i] = make([]any, len(pk))
			for j, v := range pk {
				n, err := t.cols[j].normalize(v)
				if err != nil {
					return fail("pivot key %d: %v", i, err)
				}
				norm[i][j] = n
			}
			if i > 0 && t.compareKeys(norm[i-1], norm[i]) >= 0 {
				return fail("pivot keys must be strictly increasing")
			}
		}
		rec.PivotKeys = norm
		rec.TabletCount = len(norm)
	case tabletCount > 0:
	default:
		return fail("tablet_count or pivot_keys must be given")
	}
	return e.commit(rec)
}

// MergeWatermark does what YT's watermark row merger does to a sorted table during
// compaction: it drops every row whose uint64 column holds a value below watermark (rows
// where the column is null stay). The merge is journaled, so a restart replays it at the
// same point. It returns how many rows were dropped.
func (e *Engine) MergeWatermark(id, column string, watermark uint64) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, err := e.table(id)
	if err != nil {
		return 0, err
	}
	if !t.sorted {
		return 0, yterrors.Err(yterrors.CodeGeneric, fmt.Sprintf("Cannot merge ordered table %s by watermark", t.path))
	}
	ci, ok := t.byName[column]
	if !ok || t.cols[ci].typ != schema.TypeUint64 || ci < t.keys {
		return 0, yterrors.Err(yterrors.CodeGeneric, fmt.Sprintf("Watermark column %q of table %s must be a uint64 value column", column, t.path))
	}
	before := len(t.rows)
	if err := e.commit(&Record{Kind: RecordMergeWatermark, Table: id, Column: column, Watermark: watermark}); err != nil {
		return 0, err
	}
	return before - len(t.rows), nil
}

// Trim drops the rows of an ordered tablet below trimmedRowCount (an
// absolute row index). Trimming backwards is a no-op.
func (e *Engine) Trim(id string, tabletIndex int, trimmedRowCount int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, err := e.table(id)
	if err != nil {
		return err
	}
	if t.sorted {
		return yterrors.Err(yterrors.CodeGeneric, fmt.Sprintf("Cannot trim sorted table %s", t.path))
	}
	if tabletIndex < 0 || tabletIndex >= len(t.tablets) {
		return yterrors.Err(yterrors.CodeGeneric, fmt.Sprintf("Invalid tablet index %d for table %s with %d tablets", tabletIndex, t.path, len(t.tablets)))
	}
	if trimmedRowCount <= t.tablets[tabletIndex].trimmed {
		return nil
	}
	if n := t.tablets[tabletIndex].count(); trimmedRowCount > n {
		return yterrors.Err(yterrors.CodeGeneric, fmt.Sprintf("Cannot trim tablet %d of table %s to %d rows: it has only %d", tabletIndex, t.path, trimmedRowCount, n))
	}
	return e.commit(&Record{Kind: RecordTrim, Table: id, TabletIndex: tabletIndex, TrimmedRowCount: trimmedRowCount})
}
