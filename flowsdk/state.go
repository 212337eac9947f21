package flowsdk

import (
	"fmt"

	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/flow"
)

// InternalState is one state of the current key (Runtime.InternalState), stored as YSON and
// committed with the epoch.
type InternalState struct {
	raw  flow.State[yson.RawValue]
	name string
}

// Get decodes the state into v (a pointer) and reports whether it is set; the error wraps
// ErrTypeMismatch when it does not decode.
func (s *InternalState) Get(v any) (bool, error) {
	b, ok := s.raw.Get()
	if !ok {
		return false, nil
	}
	if err := yson.Unmarshal(b, v); err != nil {
		return true, fmt.Errorf("state %q: decode as %T: %w: %w", s.name, v, ErrTypeMismatch, err)
	}
	return true, nil
}

// Set stores v (a value with yson tags, or any YSON value); the error wraps ErrTypeMismatch
// when it does not encode.
func (s *InternalState) Set(v any) error {
	b, err := yson.Marshal(v)
	if err != nil {
		return fmt.Errorf("state %q: encode %T: %w: %w", s.name, v, ErrTypeMismatch, err)
	}
	s.raw.Set(yson.RawValue(b))
	return nil
}

// Clear deletes the state.
func (s *InternalState) Clear() { s.raw.Clear() }

// ExternalState is a state kept outside the pipeline. yt-flow does not support external states
// yet: no call returns one.
type ExternalState struct{}

// YSONState is a typed state of the current key (OpenYSONState).
type YSONState[T any] struct{ st flow.State[T] }

// Get returns the value and true, or the zero value and false when the state is absent (or its
// bytes do not decode into T, which fails the invocation).
func (s *YSONState[T]) Get() (T, bool) { return s.st.Get() }

// Set stores v; an empty value (zero, empty slice or map) clears the state.
func (s *YSONState[T]) Set(v T) { s.st.Set(v) }

// Clear deletes the state.
func (s *YSONState[T]) Clear() { s.st.Clear() }

// RawState is a state of the current key holding bytes (OpenRawState).
type RawState struct{ st flow.State[[]byte] }

// Get returns the bytes and true, or nil and false when the state is absent.
func (s *RawState) Get() ([]byte, bool) {
	b, ok := s.st.Get()
	return b, ok
}

// Set stores b; empty bytes clear the state.
func (s *RawState) Set(b []byte) { s.st.Set(b) }

// Clear deletes the state.
func (s *RawState) Clear() { s.st.Clear() }

func handlerRuntime(rt Runtime, call string) (*runtime, error) {
	r, ok := rt.(*runtime)
	if !ok {
		return nil, fmt.Errorf("%s: the Runtime %T is not one a handler was given", call, rt)
	}
	return r, nil
}

// OpenYSONState returns the key's state called name, typed. It is the state InternalState(name)
// reads, with the same declaration check.
func OpenYSONState[T any](rt Runtime, name string) (*YSONState[T], error) {
	r, err := handlerRuntime(rt, "OpenYSONState")
	if err != nil {
		return nil, err
	}
	if _, err := r.InternalState(name); err != nil {
		return nil, err
	}
	return &YSONState[T]{st: flow.StateOf[T](r.ctx, name)}, nil
}

// OpenRawState returns the key's state called name as bytes (stored as a YSON string).
func OpenRawState(rt Runtime, name string) (*RawState, error) {
	r, err := handlerRuntime(rt, "OpenRawState")
	if err != nil {
		return nil, err
	}
	if _, err := r.InternalState(name); err != nil {
		return nil, err
	}
	return &RawState{st: flow.StateOf[[]byte](r.ctx, name)}, nil
}

// OpenProtoState is not supported by yt-flow yet (states are YSON): it returns an error wrapping
// ErrNotSupported. OpenYSONState with a struct with yson tags holds the same data.
func OpenProtoState[T any](rt Runtime, name string) (*YSONState[T], error) {
	return nil, fmt.Errorf("OpenProtoState(%q): protobuf states: %w", name, ErrNotSupported)
}

// OpenExternalState is not supported by yt-flow yet: it returns an error wrapping
// ErrNotSupported.
func OpenExternalState(rt Runtime, name string) (*ExternalState, error) {
	return nil, fmt.Errorf("OpenExternalState(%q): %w", name, ErrNotSupported)
}
