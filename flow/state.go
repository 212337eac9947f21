package flow

import (
	"bytes"
	"fmt"
	"reflect"
	"sync"

	"go.ytsaurus.tech/yt/go/yson"
)

// State is typed access to one named state of the invocation's key. In a source computation
// (nil key) it is the partition's state. Values are stored as YSON (text format) and follow
// Flow's rule that an empty value is an absent one: setting an empty value deletes the state.
//
// A value is empty when it is the zero value of its type, a map or slice of length zero, or
// when it has an IsEmpty() bool method that reports true.
//
// Get returns a copy and Set stores a copy: changing a value after Set, or one returned by
// Get, changes the state only when it is Set again. Changes become visible to later reads in
// the same invocation at once and are committed atomically with the epoch; a failed invocation
// changes nothing.
type State[T any] struct {
	ctx  *Context
	name string
}

// StateOf returns the state called name of ctx's key. Several StateOf calls with the same name
// in one invocation share the value; use one type per name.
func StateOf[T any](ctx *Context, name string) State[T] {
	return State[T]{ctx: ctx, name: name}
}

// Get returns the current value and true, or the zero value and false when the state is
// absent. When the stored bytes do not decode into T, Get returns the zero value and false and
// the invocation fails with an error wrapping ErrBadState.
func (s State[T]) Get() (T, bool) {
	var zero T
	slot := s.slot()
	switch {
	case slot.kind != noScalar:
		var v T
		if loadScalar(slot.kind, slot.bits, &v) {
			return v, true
		}
		s.ctx.flush(s.name, slot) // cached as another type: go through YSON
	case slot.val != nil:
		if cached, ok := slot.val.(T); ok {
			return cached, true
		}
		s.ctx.flush(s.name, slot)
	}
	if slot.cur == nil {
		return zero, false
	}
	v, err := decodeState[T](slot.cur)
	if err != nil {
		s.ctx.fail(fmt.Errorf("state %q of key %v: decode as %T: %w: %w", s.name, s.ctx.inv.Key, zero, ErrBadState, err))
		return zero, false
	}
	if k, bits := scalarOf(&v); k != noScalar {
		slot.kind, slot.bits, slot.dirty = k, bits, false
	} else if copyable(reflect.TypeFor[T]()) {
		slot.val, slot.dirty = v, false
	}
	return v, true
}

// decodeState decodes stored bytes into a T: the scalars marshalScalar writes without the SDK
// (and without a heap copy of the value), anything else through yson.Unmarshal.
func decodeState[T any](b []byte) (T, error) {
	var v T
	if unmarshalScalar(b, &v) {
		return v, nil
	}
	p := new(T) // the SDK keeps a pointer: only this path allocates the value
	if err := yson.Unmarshal(b, p); err != nil {
		return v, err
	}
	return *p, nil
}

// Set stores v, or clears the state when v is empty. When v does not encode as YSON the
// invocation fails with an error wrapping ErrBadState.
func (s State[T]) Set(v T) {
	if k, bits := scalarOf(&v); k != noScalar {
		// An int64, int, uint64 or bool: cached in the slot without boxing; zero is empty.
		if bits == 0 {
			s.Clear()
			return
		}
		slot := s.slot()
		slot.val, slot.kind, slot.bits, slot.dirty = nil, k, bits, true
		return
	}
	if isEmpty(v) {
		s.Clear()
		return
	}
	slot := s.slot()
	slot.kind = noScalar
	if copyable(reflect.TypeFor[T]()) {
		// Invariant: a value without references is copied into the slot and encoded once, when
		// the invocation ends (TestStateCacheKeepsSnapshotSemantics).
		slot.val, slot.dirty = v, true
		return
	}
	b, err := yson.Marshal(v)
	if err != nil {
		s.ctx.fail(fmt.Errorf("state %q of key %v: encode %T: %w: %w", s.name, s.ctx.inv.Key, v, ErrBadState, err))
		return
	}
	slot.cur, slot.val, slot.dirty = b, nil, false
}

// Clear deletes the state.
func (s State[T]) Clear() {
	slot := s.slot()
	slot.cur, slot.val, slot.kind, slot.dirty = nil, nil, noScalar, false
}

func (s State[T]) slot() *stateSlot {
	r := s.ctx.run
	if slot := r.findSlot(s.name); slot != nil {
		return slot
	}
	stored := s.ctx.inv.State[s.name]
	if len(stored) == 0 {
		stored = nil // empty bytes are an absent state
	}
	return r.addSlot(s.name, stateSlot{orig: stored, cur: stored})
}

// inlineSlots is how many states an invocation keeps without a map: most functions use one.
const inlineSlots = 1

// namedSlot is a state slot with its state's name.
type namedSlot struct {
	name string
	slot stateSlot
}

// findSlot returns the slot of the named state, nil before its first use.
func (r *run) findSlot(name string) *stateSlot {
	for i := range r.inline[:r.inlined] {
		if r.inline[i].name == name {
			return &r.inline[i].slot
		}
	}
	return r.states[name]
}

// addSlot adds the slot of a state used for the first time.
func (r *run) addSlot(name string, slot stateSlot) *stateSlot {
	if r.inlined < inlineSlots {
		r.inline[r.inlined] = namedSlot{name: name, slot: slot}
		r.inlined++
		return &r.inline[r.inlined-1].slot
	}
	if r.states == nil {
		r.states = make(map[string]*stateSlot)
	}
	p := new(stateSlot) // only here: the inline slots cost no allocation
	*p = slot
	r.states[name] = p
	return p
}

// eachSlot calls f for every state the invocation used.
func (r *run) eachSlot(f func(name string, s *stateSlot)) {
	for i := range r.inline[:r.inlined] {
		f(r.inline[i].name, &r.inline[i].slot)
	}
	for name, s := range r.states {
		f(name, s)
	}
}

// stateSlot is one state during an invocation: orig as stored, cur as it is now (nil bytes =
// absent). The current value may be cached decoded: an int64, int, uint64 or bool in kind and
// bits (no boxing), another type without references (see copyable) in val; at most one of
// them is set. When dirty, the cached value was Set and cur is stale until flush encodes it.
type stateSlot struct {
	orig, cur []byte
	val       any
	kind      scalarKind
	bits      uint64
	dirty     bool
}

// flush drops a cached value, encoding it into cur first if it was Set.
func (c *Context) flush(name string, slot *stateSlot) {
	if slot.dirty && slot.kind != noScalar {
		slot.cur = c.run.encodeBits(slot.kind, slot.bits)
	} else if slot.dirty && slot.val != nil {
		b, ok := c.run.encodeScalar(slot.val)
		var err error
		if !ok {
			b, err = yson.Marshal(slot.val)
		}
		if err != nil {
			c.fail(fmt.Errorf("state %q of key %v: encode %T: %w: %w", name, c.inv.Key, slot.val, ErrBadState, err))
			b = slot.orig // the invocation fails anyway
		}
		slot.cur = b
	}
	slot.val, slot.kind, slot.dirty = nil, noScalar, false
}

func (s *stateSlot) changed() bool {
	return (s.orig == nil) != (s.cur == nil) || !bytes.Equal(s.orig, s.cur)
}

func isEmpty(v any) bool {
	if e, ok := v.(interface{ IsEmpty() bool }); ok {
		rv := reflect.ValueOf(v)
		if rv.Kind() == reflect.Pointer && rv.IsNil() {
			return true
		}
		return e.IsEmpty()
	}
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		return true
	}
	switch rv.Kind() {
	case reflect.Map, reflect.Slice:
		return rv.Len() == 0
	}
	return rv.IsZero()
}

var copyableTypes sync.Map // reflect.Type -> bool

// copyable reports whether a value of type t holds no references (pointers, maps, slices,
// interfaces, channels, functions), so that assigning it copies it entirely and it can be
// cached in a slot without sharing memory with user code.
func copyable(t reflect.Type) bool {
	if c, ok := copyableTypes.Load(t); ok {
		return c.(bool)
	}
	c := refFree(t)
	copyableTypes.Store(t, c)
	return c
}

func refFree(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.String:
		return true
	case reflect.Array:
		return refFree(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !refFree(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}
