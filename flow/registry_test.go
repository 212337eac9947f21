package flow

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
)

var nameSeq atomic.Int64

// uniqueName is a registry name not used before in this process (tests may run with -count).
func uniqueName(t *testing.T, suffix string) string {
	return fmt.Sprintf("%s%s-%d", t.Name(), suffix, nameSeq.Add(1))
}

type funcOf func(inv *Invocation) (*Result, error)

func (f funcOf) Invoke(inv *Invocation) (*Result, error) { return f(inv) }

func TestLookupUnknown(t *testing.T) {
	_, err := Lookup("NoSuchFunction")
	if !errors.Is(err, ErrUnknownFunction) {
		t.Fatalf("Lookup error = %v, want ErrUnknownFunction", err)
	}
	if !strings.Contains(err.Error(), "NoSuchFunction") {
		t.Errorf("error %q does not name the function", err)
	}
}

func TestRegisterDuplicatePanics(t *testing.T) {
	f := funcOf(func(*Invocation) (*Result, error) { return &Result{}, nil })
	name := uniqueName(t, "")
	Register(name, f)
	defer func() {
		if recover() == nil {
			t.Fatal("second Register with the same name did not panic")
		}
	}()
	Register(name, f)
}

func TestRegisteredFunctionNamesErrorsAndRecoversPanics(t *testing.T) {
	boom := errors.New("boom")
	errName, panicName := uniqueName(t, "Err"), uniqueName(t, "Panic")
	Register(errName, funcOf(func(*Invocation) (*Result, error) { return nil, boom }))
	Register(panicName, funcOf(func(*Invocation) (*Result, error) { panic("bad input") }))

	f, err := Lookup(errName)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Invoke(&Invocation{Key: Key{uint64(7)}})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), fmt.Sprintf("%q", errName)) {
		t.Errorf("error = %v, want boom naming the function", err)
	}

	f, err = Lookup(panicName)
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.Invoke(&Invocation{Key: Key{uint64(7)}})
	if res != nil || !errors.Is(err, ErrUserPanic) {
		t.Fatalf("Invoke = %v, %v; want nil result and ErrUserPanic", res, err)
	}
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Value != "bad input" || !strings.Contains(string(pe.Stack), "registry_test.go") {
		t.Errorf("panic error %#v lacks the value or the stack", pe)
	}
	if !strings.Contains(err.Error(), "[7]") {
		t.Errorf("error %q does not name the key", err)
	}
}

func TestNamesSorted(t *testing.T) {
	a, b := "A"+uniqueName(t, ""), "B"+uniqueName(t, "")
	Register(b, funcOf(nil))
	Register(a, funcOf(nil))
	names := Names()
	ia, ib := -1, -1
	for i, n := range names {
		switch n {
		case a:
			ia = i
		case b:
			ib = i
		}
	}
	if ia < 0 || ib < 0 || ia > ib {
		t.Errorf("Names() = %v, want both test names in sorted order", names)
	}
}

func TestKeyString(t *testing.T) {
	for _, tc := range []struct {
		key  Key
		want string
	}{
		{nil, "[]"},
		{Key{uint64(12345), "the"}, `[12345 "the"]`},
		{Key{"a b", []byte("c"), int64(-1), true, nil, 1.5}, `["a b" "c" -1 true <nil> 1.5]`},
	} {
		if got := tc.key.String(); got != tc.want {
			t.Errorf("%#v.String() = %s, want %s", tc.key, got, tc.want)
		}
	}
}

// stateWriter is a Function that could do anything with the states it is given.
type stateWriter struct{}

func (stateWriter) Invoke(*Invocation) (*Result, error) { return &Result{}, nil }

// TestLeavesStateAlone: a Process, registered or not, is known to leave Invocation.State
// alone; any other Function is not.
func TestLeavesStateAlone(t *testing.T) {
	name, otherName := uniqueName(t, ""), uniqueName(t, "Other")
	Register(name, PerMessage(func(*Context, *Message) error { return nil }))
	Register(otherName, stateWriter{})
	registered, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	other, err := Lookup(otherName)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		f    Function
		want bool
	}{{Batch(nil), true}, {&Process{}, true}, {registered, true}, {stateWriter{}, false}, {other, false}} {
		if got := LeavesStateAlone(tc.f); got != tc.want {
			t.Errorf("LeavesStateAlone(%T) = %v, want %v", tc.f, got, tc.want)
		}
	}
}
