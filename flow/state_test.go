package flow

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"go.ytsaurus.tech/yt/go/yson"
)

func mustYSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := yson.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// invokeState runs body as a per-message handler over one message with the given stored states.
func invokeState(key Key, stored map[string][]byte, body func(ctx *Context)) (*Result, error) {
	f := PerMessage(func(ctx *Context, m *Message) error {
		body(ctx)
		return nil
	})
	return f.Invoke(&Invocation{Key: key, State: stored, Messages: msgs("a")})
}

func TestStateGetSetClear(t *testing.T) {
	stored := map[string][]byte{"count": mustYSON(t, int64(4)), "other": mustYSON(t, "x")}
	res, err := invokeState(Key{"k"}, stored, func(ctx *Context) {
		count := StateOf[int64](ctx, "count")
		n, ok := count.Get()
		if !ok || n != 4 {
			t.Errorf("Get() = %v, %v; want 4, true", n, ok)
		}
		count.Set(n + 1)
		if n, _ := StateOf[int64](ctx, "count").Get(); n != 5 {
			t.Errorf("second accessor sees %d, want 5", n)
		}
		if _, ok := StateOf[string](ctx, "missing").Get(); ok {
			t.Error("absent state reported present")
		}
		StateOf[string](ctx, "other").Clear()
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{"count": mustYSON(t, int64(5)), "other": nil}
	if !reflect.DeepEqual(res.StateWrites, want) {
		t.Errorf("state writes = %q, want %q", res.StateWrites, want)
	}
	if string(stored["count"]) != "4" {
		t.Errorf("invocation state modified: %q", stored["count"])
	}
}

type session struct {
	Sum    int64   `yson:"sum"`
	Events []int64 `yson:"events"`
}

type window struct{ Open bool }

func (w window) IsEmpty() bool { return !w.Open }

func TestStateEmptyIsAbsent(t *testing.T) {
	stored := map[string][]byte{
		"n": mustYSON(t, int64(1)), "s": mustYSON(t, session{Sum: 1}), "m": mustYSON(t, map[string]int64{"a": 1}),
		"w": mustYSON(t, window{Open: true}),
	}
	res, err := invokeState(nil, stored, func(ctx *Context) {
		StateOf[int64](ctx, "n").Set(0)
		StateOf[session](ctx, "s").Set(session{})
		StateOf[map[string]int64](ctx, "m").Set(map[string]int64{})
		StateOf[window](ctx, "w").Set(window{})
		StateOf[string](ctx, "never").Set("") // absent stays absent: no write
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{"n": nil, "s": nil, "m": nil, "w": nil}
	if !reflect.DeepEqual(res.StateWrites, want) {
		t.Errorf("state writes = %q, want all four deleted", res.StateWrites)
	}
}

func TestStateUnchangedIsNotWritten(t *testing.T) {
	stored := map[string][]byte{"s": mustYSON(t, session{Sum: 2, Events: []int64{1, 1}})}
	res, err := invokeState(Key{"k"}, stored, func(ctx *Context) {
		st := StateOf[session](ctx, "s")
		v, _ := st.Get()
		st.Set(v)
		StateOf[int64](ctx, "absent").Clear()
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.StateWrites) != 0 {
		t.Errorf("state writes = %q, want none", res.StateWrites)
	}
}

func TestPartitionStateForSources(t *testing.T) {
	// A source invocation has a nil key; its state is the partition's, with the same API.
	res, err := invokeState(nil, nil, func(ctx *Context) {
		StateOf[map[string]uint64](ctx, "offsets").Set(map[string]uint64{"p0": 12})
	})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]uint64
	if err := yson.Unmarshal(res.StateWrites["offsets"], &got); err != nil || got["p0"] != 12 {
		t.Errorf("partition state written = %q (%v)", res.StateWrites["offsets"], err)
	}
}

func TestStateDecodeErrorFailsInvocation(t *testing.T) {
	stored := map[string][]byte{"count": []byte(`"not a number"`)}
	res, err := invokeState(Key{"k"}, stored, func(ctx *Context) {
		if n, ok := StateOf[int64](ctx, "count").Get(); ok || n != 0 {
			t.Errorf("Get() = %v, %v on undecodable state; want 0, false", n, ok)
		}
	})
	if res != nil || !errors.Is(err, ErrBadState) || !strings.Contains(err.Error(), `"count"`) {
		t.Errorf("Invoke = %v, %v; want ErrBadState naming the state", res, err)
	}
}

func TestStateEncodeErrorFailsInvocation(t *testing.T) {
	_, err := invokeState(Key{"k"}, nil, func(ctx *Context) {
		StateOf[chan int](ctx, "ch").Set(make(chan int))
	})
	if !errors.Is(err, ErrBadState) {
		t.Errorf("error = %v, want ErrBadState", err)
	}
}

type point struct {
	X, Y int64
	Tag  string
	Arr  [2]int32
}

func TestStateCacheKeepsSnapshotSemantics(t *testing.T) {
	stored := map[string][]byte{"p": mustYSON(t, point{X: 1}), "m": mustYSON(t, map[string]int64{"a": 1})}
	res, err := invokeState(Key{"k"}, stored, func(ctx *Context) {
		// Cached type: later changes to a got or set copy do not reach the state.
		p := StateOf[point](ctx, "p")
		v, _ := p.Get()
		v.X = 100
		if again, _ := p.Get(); again.X != 1 {
			t.Errorf("mutating a Get result changed the state: %+v", again)
		}
		v = point{X: 2, Tag: "t", Arr: [2]int32{1, 2}}
		p.Set(v)
		v.X = 3
		if again, _ := p.Get(); again.X != 2 {
			t.Errorf("mutating after Set changed the state: %+v", again)
		}
		// Reference type: the same rules hold through YSON.
		m := StateOf[map[string]int64](ctx, "m")
		mv, _ := m.Get()
		mv["a"] = 100
		if again, _ := m.Get(); again["a"] != 1 {
			t.Errorf("mutating a Get map changed the state: %v", again)
		}
		mv["a"] = 2
		m.Set(mv)
		mv["a"] = 3
		// The same state read as another type goes through its YSON encoding.
		if asMap, _ := StateOf[map[string]any](ctx, "p").Get(); asMap["X"] != int64(2) {
			t.Errorf("state p read as a map = %v", asMap)
		}
		p.Set(point{X: 4})
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{"p": mustYSON(t, point{X: 4}), "m": mustYSON(t, map[string]int64{"a": 2})}
	if !reflect.DeepEqual(res.StateWrites, want) {
		t.Errorf("state writes = %q, want %q", res.StateWrites, want)
	}
}

func TestStateReadOnlyIsNotWritten(t *testing.T) {
	// Stored bytes in another spelling than the encoder's (binary YSON here) are not rewritten
	// by a read.
	b, err := yson.MarshalFormat(point{X: 1}, yson.FormatBinary)
	if err != nil {
		t.Fatal(err)
	}
	res, err := invokeState(Key{"k"}, map[string][]byte{"p": b}, func(ctx *Context) {
		if v, ok := StateOf[point](ctx, "p").Get(); !ok || v.X != 1 {
			t.Errorf("Get() = %+v, %v", v, ok)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.StateWrites) != 0 {
		t.Errorf("state writes = %q, want none", res.StateWrites)
	}
}

func TestStateCachedEncodeErrorFailsInvocation(t *testing.T) {
	// complex128 has no references, so it is cached and only encoded at the end.
	_, err := invokeState(Key{"k"}, nil, func(ctx *Context) {
		StateOf[complex128](ctx, "c").Set(1 + 2i)
	})
	if !errors.Is(err, ErrBadState) || !strings.Contains(err.Error(), `"c"`) {
		t.Errorf("error = %v, want ErrBadState naming the state", err)
	}
}

// TestStateScalarCache: int64, int, uint64 and bool states are cached in the slot without
// boxing; they read back as set, read as another type through their YSON encoding, zero is
// absent, and the bytes written are the SDK's.
func TestStateScalarCache(t *testing.T) {
	stored := map[string][]byte{"i": mustYSON(t, int64(1000)), "u": mustYSON(t, uint64(7)), "b": mustYSON(t, true), "n": mustYSON(t, 5)}
	res, err := invokeState(Key{"k"}, stored, func(ctx *Context) {
		i := StateOf[int64](ctx, "i")
		if v, ok := i.Get(); !ok || v != 1000 {
			t.Errorf("i.Get() = %v, %v", v, ok)
		}
		i.Set(-123456789)
		if v, _ := i.Get(); v != -123456789 {
			t.Errorf("i after Set = %v", v)
		}
		if v, ok := StateOf[int](ctx, "i").Get(); !ok || v != -123456789 {
			t.Errorf("i read as int = %v, %v", v, ok)
		}
		if v, ok := StateOf[uint64](ctx, "i").Get(); ok || v != 0 {
			t.Errorf("a negative int64 read as uint64 = %v, %v", v, ok)
		}
		u := StateOf[uint64](ctx, "u")
		if v, _ := u.Get(); v != 7 {
			t.Errorf("u.Get() = %v", v)
		}
		u.Set(1 << 63)
		if v, ok := StateOf[int64](ctx, "u").Get(); ok || v != 0 {
			t.Errorf("a uint64 read as int64 = %v, %v", v, ok)
		}
		b := StateOf[bool](ctx, "b")
		if v, _ := b.Get(); !v {
			t.Error("b.Get() = false")
		}
		b.Set(false) // zero: deleted
		if _, ok := b.Get(); ok {
			t.Error("b present after Set(false)")
		}
		n := StateOf[int](ctx, "n")
		v, _ := n.Get()
		n.Set(v + 1)
		StateOf[bool](ctx, "new").Set(true)
	})
	if !errors.Is(err, ErrBadState) {
		t.Fatalf("error = %v, want ErrBadState (reading an int64 as uint64)", err)
	}
	res, err = invokeState(Key{"k"}, stored, func(ctx *Context) {
		i := StateOf[int64](ctx, "i")
		i.Set(-123456789)
		if v, ok := StateOf[int](ctx, "i").Get(); !ok || v != -123456789 {
			t.Errorf("i read as int = %v, %v", v, ok)
		}
		StateOf[uint64](ctx, "u").Set(1 << 63)
		StateOf[bool](ctx, "b").Set(false)
		n := StateOf[int](ctx, "n")
		v, _ := n.Get()
		n.Set(v + 1)
		StateOf[bool](ctx, "new").Set(true)
		StateOf[int64](ctx, "zero").Set(0)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{"i": mustYSON(t, int64(-123456789)), "u": mustYSON(t, uint64(1<<63)), "b": nil, "n": mustYSON(t, 6), "new": mustYSON(t, true)}
	if !reflect.DeepEqual(res.StateWrites, want) {
		t.Errorf("state writes = %q, want %q", res.StateWrites, want)
	}
}
