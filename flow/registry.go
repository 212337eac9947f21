package flow

import (
	"fmt"
	"runtime/debug"
	"sort"
	"sync"
)

var registry = struct {
	sync.RWMutex
	funcs map[string]Function
}{funcs: map[string]Function{}}

// Register stores f under name so that a spec's processing_function can refer to it. It is meant
// to be called from init functions. It panics on an empty name, a nil f or a duplicate name: all
// are programming errors.
//
// The stored Function (returned by Lookup) names the function in its errors and recovers panics
// of f into errors wrapping ErrUserPanic, even when f is not built with this package's adapters.
func Register(name string, f Function) {
	if name == "" {
		panic("flow: Register with an empty name")
	}
	if f == nil {
		panic("flow: Register " + name + " with a nil function")
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.funcs[name]; dup {
		panic("flow: duplicate process function " + name)
	}
	registry.funcs[name] = named{name: name, f: f}
}

// Lookup returns the function registered under name; the error wraps ErrUnknownFunction.
func Lookup(name string) (Function, error) {
	registry.RLock()
	defer registry.RUnlock()
	f, ok := registry.funcs[name]
	if !ok {
		return nil, fmt.Errorf("flow: look up %q: %w", name, ErrUnknownFunction)
	}
	return f, nil
}

// Names returns the names of all registered functions, sorted.
func Names() []string {
	registry.RLock()
	defer registry.RUnlock()
	names := make([]string, 0, len(registry.funcs))
	for n := range registry.funcs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// named is the registered form of a function: errors name it, panics become errors.
type named struct {
	name string
	f    Function
}

func (n named) Invoke(inv *Invocation) (res *Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("flow function %q: key %v: %w", n.name, inv.Key, &PanicError{Value: r, Stack: debug.Stack()})
		}
	}()
	res, err = n.f.Invoke(inv)
	if err != nil {
		return nil, fmt.Errorf("flow function %q: %w", n.name, err)
	}
	return res, nil
}

// LeavesStateAlone reports whether f is known never to modify the Invocation.State it is
// given: a Process reads states only through StateOf and keeps its changes to itself until
// the Result. A runtime may hand such a function state maps it shares with its own cache; any
// other function gets copies.
func LeavesStateAlone(f Function) bool {
	switch x := f.(type) {
	case named:
		return LeavesStateAlone(x.f)
	case Process, *Process:
		return true
	}
	return false
}

// PanicError is the error a recovered panic in user code turns into. It matches ErrUserPanic
// with errors.Is.
type PanicError struct {
	// Value is what the code panicked with.
	Value any
	// Stack is the goroutine stack at the time of the panic.
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("%v: %v\n%s", ErrUserPanic, e.Value, e.Stack)
}

// Unwrap returns ErrUserPanic, and the panic value when it is an error.
func (e *PanicError) Unwrap() []error {
	if err, ok := e.Value.(error); ok {
		return []error{ErrUserPanic, err}
	}
	return []error{ErrUserPanic}
}
