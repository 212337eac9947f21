package flow

import "maps"

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

// extSlot is an external state an invocation wrote.
type extSlot struct {
	row Row // nil: deleted
}

// Get returns a copy of the key's row and true, or nil and false when there is none.
func (e External) Get() (Row, bool) {
	if e.ctx.inv.Key == nil {
		e.ctx.fail(errExternalUnkeyed(e.name))
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
	if row == nil {
		row = Row{}
	}
	e.slot().row = maps.Clone(row)
}

// Delete removes the key's row.
func (e External) Delete() {
	if e.ctx.inv.Key == nil {
		e.ctx.fail(errExternalUnkeyed(e.name))
		return
	}
	e.slot().row = nil
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

// externalWrites returns the invocation's external writes (nil when none).
func (r *run) externalWrites() map[string]Row {
	if len(r.ext) == 0 {
		return nil
	}
	out := make(map[string]Row, len(r.ext))
	for name, s := range r.ext {
		out[name] = s.row
	}
	return out
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
