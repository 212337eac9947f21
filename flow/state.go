package flow

import (
	"bytes"
	"fmt"
	"reflect"

	"go.ytsaurus.tech/yt/go/yson"
)

// State is typed access to one named state of the invocation's key. In a source computation
// (nil key) it is the partition's state. Values are stored as YSON (text format) and follow
// Flow's rule that an empty value is an absent one: setting an empty value deletes the state.
//
// A value is empty when it is the zero value of its type, a map or slice of length zero, or
// when it has an IsEmpty() bool method that reports true.
//
// Changes become visible to later reads in the same invocation at once and are committed
// atomically with the epoch; a failed invocation changes nothing.
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
	var v T
	slot := s.slot()
	if slot.cur == nil {
		return v, false
	}
	if err := yson.Unmarshal(slot.cur, &v); err != nil {
		s.ctx.fail(fmt.Errorf("state %q of key %v: decode as %T: %w: %w", s.name, s.ctx.inv.Key, v, ErrBadState, err))
		var zero T
		return zero, false
	}
	return v, true
}

// Set stores v, or clears the state when v is empty. When v does not encode as YSON the state
// is left unchanged and the invocation fails with an error wrapping ErrBadState.
func (s State[T]) Set(v T) {
	if isEmpty(v) {
		s.Clear()
		return
	}
	b, err := yson.Marshal(v)
	if err != nil {
		s.ctx.fail(fmt.Errorf("state %q of key %v: encode %T: %w: %w", s.name, s.ctx.inv.Key, v, ErrBadState, err))
		return
	}
	s.slot().cur = b
}

// Clear deletes the state.
func (s State[T]) Clear() {
	s.slot().cur = nil
}

func (s State[T]) slot() *stateSlot {
	r := s.ctx.run
	if slot, ok := r.states[s.name]; ok {
		return slot
	}
	if r.states == nil {
		r.states = make(map[string]*stateSlot)
	}
	stored := s.ctx.inv.State[s.name]
	if len(stored) == 0 {
		stored = nil // empty bytes are an absent state
	}
	slot := &stateSlot{orig: stored, cur: stored}
	r.states[s.name] = slot
	return slot
}

// stateSlot is one state during an invocation; nil bytes mean absent.
type stateSlot struct {
	orig, cur []byte
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
