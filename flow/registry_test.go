package flow

import (
	"errors"
	"strings"
	"testing"
)

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
	Register("TestRegisterDuplicatePanics", f)
	defer func() {
		if recover() == nil {
			t.Fatal("second Register with the same name did not panic")
		}
	}()
	Register("TestRegisterDuplicatePanics", f)
}

func TestRegisteredFunctionNamesErrorsAndRecoversPanics(t *testing.T) {
	boom := errors.New("boom")
	Register("TestRegisteredErr", funcOf(func(*Invocation) (*Result, error) { return nil, boom }))
	Register("TestRegisteredPanic", funcOf(func(*Invocation) (*Result, error) { panic("bad input") }))

	f, err := Lookup("TestRegisteredErr")
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Invoke(&Invocation{Key: Key{uint64(7)}})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), `"TestRegisteredErr"`) {
		t.Errorf("error = %v, want boom naming the function", err)
	}

	f, err = Lookup("TestRegisteredPanic")
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
	Register("TestNamesB", funcOf(nil))
	Register("TestNamesA", funcOf(nil))
	names := Names()
	ia, ib := -1, -1
	for i, n := range names {
		switch n {
		case "TestNamesA":
			ia = i
		case "TestNamesB":
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
