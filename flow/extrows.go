package flow

import (
	"fmt"
	"maps"
	"sort"
)

// Several rows per key: an external state table (external_state_managers) whose leading key
// columns are the group_by_schema columns and which has further key columns holds any number
// of rows for a key, one per value of the further columns (ExternalSubKeys names them).

// RowWrite is one change of a several-rows-per-key external state: Row (with the table's
// further key columns; the group_by columns come from the key) upserted, or with Delete the
// row of those further key columns deleted.
type RowWrite struct {
	Row    Row
	Delete bool
}

// Rows returns copies of the key's rows of a table with several rows per key — all rows
// whose leading key columns are the invocation's key, as the epoch read them, with the
// invocation's own SetRow, DeleteRow and Delete applied — ordered by the further key columns.
func (e External) Rows() []Row {
	s, ok := e.multi()
	if !ok {
		return nil
	}
	var out []Row
	for _, id := range sortedRowIDs(s.rows) {
		if r := s.rows[id]; r != nil {
			out = append(out, maps.Clone(r))
		}
	}
	return out
}

// SetRow upserts row (its copy) into a table with several rows per key: the row is the one
// whose further key columns hold row's values for them (all must be present); the group_by
// columns come from the key.
func (e External) SetRow(row Row) {
	s, ok := e.multi()
	if !ok {
		return
	}
	id, err := e.rowID(row)
	if err != nil {
		e.ctx.fail(err)
		return
	}
	s.rows[id] = maps.Clone(row)
	s.changed[id] = true
}

// DeleteRow deletes the row of a table with several rows per key whose further key columns
// hold row's values for them.
func (e External) DeleteRow(row Row) {
	s, ok := e.multi()
	if !ok {
		return
	}
	id, err := e.rowID(row)
	if err != nil {
		e.ctx.fail(err)
		return
	}
	key := Row{}
	for _, c := range e.ctx.inv.ExternalSubKeys[e.name] {
		key[c] = row[c]
	}
	if _, had := s.rows[id]; had || s.loaded[id] {
		s.rows[id] = nil
		s.changed[id] = true
		s.deleted[id] = key
	}
}

// multi returns the slot of a several-rows-per-key state, loading it at first use; false
// (and the invocation fails) when the state has one row per key or the computation no key.
func (e External) multi() (*extSlot, bool) {
	if e.ctx.inv.Key == nil {
		e.ctx.fail(errExternalUnkeyed(e.name))
		return nil, false
	}
	if _, ok := e.ctx.inv.ExternalSubKeys[e.name]; !ok {
		e.ctx.fail(fmt.Errorf("external state %s: its table has one row per key (key columns = group_by_schema): use Get, Set and Delete", e.name))
		return nil, false
	}
	s := e.slot()
	if s.rows == nil {
		s.rows, s.loaded, s.changed, s.deleted = map[string]Row{}, map[string]bool{}, map[string]bool{}, map[string]Row{}
		for _, r := range e.ctx.inv.ExternalRows[e.name] {
			id, err := e.rowID(r)
			if err == nil {
				s.rows[id], s.loaded[id] = r, true
			}
		}
	}
	return s, true
}

// rowID identifies a row of the key by its further key columns.
func (e External) rowID(row Row) (string, error) {
	cols := e.ctx.inv.ExternalSubKeys[e.name]
	vals := make([]any, len(cols))
	for i, c := range cols {
		v, ok := row[c]
		if !ok {
			return "", fmt.Errorf("external state %s: key %v: row %v lacks key column %q", e.name, e.ctx.inv.Key, row, c)
		}
		vals[i] = v
	}
	return fmt.Sprintf("%#v", vals), nil
}

// deleteAll deletes every row of the key (Delete on a several-rows-per-key state).
func (e External) deleteAll(s *extSlot) {
	for id, r := range s.rows {
		if r == nil {
			continue
		}
		key := Row{}
		for _, c := range e.ctx.inv.ExternalSubKeys[e.name] {
			key[c] = r[c]
		}
		s.rows[id], s.changed[id], s.deleted[id] = nil, true, key
	}
}

func sortedRowIDs(m map[string]Row) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// rowWrites returns the changes of a several-rows-per-key slot, in row id order.
func (s *extSlot) rowWrites() []RowWrite {
	var out []RowWrite
	for _, id := range sortedRowIDs(s.rows) {
		if !s.changed[id] {
			continue
		}
		if r := s.rows[id]; r != nil {
			out = append(out, RowWrite{Row: r})
		} else {
			out = append(out, RowWrite{Row: s.deleted[id], Delete: true})
		}
	}
	return out
}
