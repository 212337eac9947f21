package flow

import (
	"fmt"
	"maps"
)

// External is read-write access to one external state of the invocation's key: the row of
// the user's sorted dynamic table (declared in the computation's external_state_managers
// under the state's name) whose key columns are the invocation's key.
//
// Get returns a copy of the current row: the row the epoch read, with the invocation's own
// Set and Delete applied. Set replaces the row with the given columns (the key columns are
// filled from the key; others absent are null), Delete removes it. The writes commit with the
// epoch, atomically with its outputs and internal state, so a restart applies them exactly
// once; a failed invocation writes nothing.
type External struct {
	ctx  *Context
	name string
}

// ExternalStateOf returns the external state called name ("/totals") of ctx's key. It works
// in keyed transform computations; elsewhere the invocation fails.
func ExternalStateOf(ctx *Context, name string) External {
	return External{ctx: ctx, name: name}
}

// extSlot is an external state an invocation wrote: its row, or for a state with several
// rows per key (extrows.go) its rows by id (nil: deleted), which of them the epoch read,
// changed or deleted (with the deleted rows' key columns).
type extSlot struct {
	row Row // nil: deleted

	rows            map[string]Row
	loaded, changed map[string]bool
	deleted         map[string]Row
}

// Get returns a copy of the key's row and true, or nil and false when there is none.
func (e External) Get() (Row, bool) {
	if e.ctx.inv.Key == nil {
		e.ctx.fail(errExternalUnkeyed(e.name))
		return nil, false
	}
	if e.severalRows() {
		return nil, false
	}
	if s, ok := e.ctx.run.ext[e.name]; ok {
		if s.row == nil {
			return nil, false
		}
		return maps.Clone(s.row), true
	}
	row, ok := e.ctx.inv.External[e.name]
	if !ok || row == nil {
		return nil, false
	}
	return maps.Clone(row), true
}

// Set makes row (its copy) the key's row.
func (e External) Set(row Row) {
	if e.ctx.inv.Key == nil {
		e.ctx.fail(errExternalUnkeyed(e.name))
		return
	}
	if e.severalRows() {
		return
	}
	if row == nil {
		row = Row{}
	}
	e.slot().row = maps.Clone(row)
}

// Delete removes the key's row — in a table with several rows per key, all of them.
func (e External) Delete() {
	if e.ctx.inv.Key == nil {
		e.ctx.fail(errExternalUnkeyed(e.name))
		return
	}
	if _, ok := e.ctx.inv.ExternalSubKeys[e.name]; ok {
		if s, ok := e.multi(); ok {
			e.deleteAll(s)
		}
		return
	}
	e.slot().row = nil
}

// severalRows fails the invocation when the state's table has several rows per key (Get
// and Set apply to one row per key).
func (e External) severalRows() bool {
	if _, ok := e.ctx.inv.ExternalSubKeys[e.name]; !ok {
		return false
	}
	e.ctx.fail(fmt.Errorf("external state %s: its table has further key columns %v (several rows per key): use Rows, SetRow, DeleteRow and Delete",
		e.name, e.ctx.inv.ExternalSubKeys[e.name]))
	return true
}

func (e External) slot() *extSlot {
	r := e.ctx.run
	if r.ext == nil {
		r.ext = map[string]*extSlot{}
	}
	s := r.ext[e.name]
	if s == nil {
		s = &extSlot{}
		r.ext[e.name] = s
	}
	return s
}

// externalWrites returns the invocation's external writes (nil when none): of states with
// one row per key, and of those with several.
func (r *run) externalWrites() (map[string]Row, map[string][]RowWrite) {
	if len(r.ext) == 0 {
		return nil, nil
	}
	var out map[string]Row
	var rows map[string][]RowWrite
	for name, s := range r.ext {
		if s.rows != nil {
			if w := s.rowWrites(); len(w) > 0 {
				if rows == nil {
					rows = map[string][]RowWrite{}
				}
				rows[name] = w
			}
			continue
		}
		if out == nil {
			out = make(map[string]Row, len(r.ext))
		}
		out[name] = s.row
	}
	return out, rows
}

func errExternalUnkeyed(name string) error {
	return &externalError{name: name}
}

type externalError struct{ name string }

func (e *externalError) Error() string {
	return "external state " + e.name + ": only keyed computations have external state"
}

// JoinedExternalStateOf returns a copy of the row the joined external state name (of
// external_state_joiners: a table read and never written by this computation) holds for
// ctx's key, as the epoch read it; nil and false when there is none.
func JoinedExternalStateOf(ctx *Context, name string) (Row, bool) {
	if ctx.inv.Key == nil {
		ctx.fail(errExternalUnkeyed(name))
		return nil, false
	}
	row, ok := ctx.inv.External[name]
	if !ok || row == nil {
		return nil, false
	}
	return maps.Clone(row), true
}
