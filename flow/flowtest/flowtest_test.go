package flowtest

import (
	"errors"
	"reflect"
	"testing"

	"github.com/ytflow/yt-flow/flow"
)

// counter keeps a per-key sum of "n", emits the running sum per message, sets a "flush" timer
// at the message's event time + 10, and on the timer emits the total and clears the state.
var counter = flow.Process{
	OnMessage: func(ctx *flow.Context, m *flow.Message) error {
		sum := flow.StateOf[int64](ctx, "sum")
		v, _ := sum.Get()
		v += m.Payload["n"].(int64)
		if v < 0 {
			return errors.New("negative sum")
		}
		sum.Set(v)
		ctx.AddMessage("running", flow.Row{"sum": v})
		ctx.AddTimer("flush", m.EventTimestamp+10, nil)
		return nil
	},
	OnTimer: func(ctx *flow.Context, t *flow.Timer) error {
		sum := flow.StateOf[int64](ctx, "sum")
		v, ok := sum.Get()
		if ok {
			ctx.AddMessage("total", flow.Row{"sum": v})
			sum.Clear()
		}
		return nil
	},
}

func msg(key string, n int64, eventTS uint64) flow.Message {
	m := Msg("in", flow.Key{key}, flow.Row{"n": n})
	m.EventTimestamp = eventTS
	return m
}

func TestHarnessKeepsStateAndFiresTimers(t *testing.T) {
	h := NewFunc(t, counter, Options{})
	r := h.Run(Epoch{Now: 1000, Messages: []flow.Message{msg("a", 1, 5), msg("b", 2, 6), msg("a", 3, 7)}})

	if got, want := r.Payloads("running"), []flow.Row{{"sum": int64(1)}, {"sum": int64(4)}, {"sum": int64(2)}}; !reflect.DeepEqual(got, want) {
		t.Errorf("running = %v, want %v (grouped by key in order of first appearance)", got, want)
	}
	if len(r.Invocations) != 2 || r.Invocations[0].Messages[0].MessageID >= r.Invocations[0].Messages[1].MessageID {
		t.Errorf("invocations = %+v, want two with increasing message ids", r.Invocations)
	}
	if r.Invocations[0].Messages[0].SystemTimestamp != 1000 {
		t.Errorf("system timestamp = %d, want Now", r.Invocations[0].Messages[0].SystemTimestamp)
	}
	if v, ok := Get[int64](h, flow.Key{"a"}, "sum"); !ok || v != 4 {
		t.Errorf("state a = %v, %v; want 4", v, ok)
	}
	if n := len(h.PendingTimers()); n != 3 {
		t.Fatalf("pending timers = %d, want 3", n)
	}

	// Watermark 16 reaches a's timer at 15 and b's at 16, not a's at 17. Each fired timer
	// emits its key's total and clears it; b's new message then runs after b's timer.
	r = h.Run(Epoch{Watermark: 16, Messages: []flow.Message{msg("b", 1, 20)}})
	if got, want := r.Payloads("total"), []flow.Row{{"sum": int64(4)}, {"sum": int64(2)}}; !reflect.DeepEqual(got, want) {
		t.Errorf("totals = %v, want %v", got, want)
	}
	if len(r.Fired) != 2 || r.Fired[0].Trigger != 15 || r.Fired[1].Trigger != 16 {
		t.Errorf("fired = %+v, want the timers at 15 and 16", r.Fired)
	}
	if _, ok := Get[int64](h, flow.Key{"a"}, "sum"); ok {
		t.Error("state a still present after the timer cleared it")
	}
	if want := []StateWrite{{Key: flow.Key{"a"}, Name: "sum", Value: nil}, {Key: flow.Key{"b"}, Name: "sum", Value: []byte("1")}}; !reflect.DeepEqual(r.StateWrites, want) {
		t.Errorf("state writes = %+v, want %+v", r.StateWrites, want)
	}
	if got := h.Keys(); !reflect.DeepEqual(got, []flow.Key{{"b"}}) {
		t.Errorf("keys with state = %v, want [b]", got)
	}
	if n := len(h.PendingTimers()); n != 2 {
		t.Errorf("pending timers = %d, want 2 (a at 17, b at 30)", n)
	}
}

func TestHarnessFailedEpochAppliesNothing(t *testing.T) {
	h := NewFunc(t, counter, Options{})
	h.Run(Epoch{Messages: []flow.Message{msg("a", 5, 1)}})
	_, err := h.TryRun(Epoch{Watermark: 100, Messages: []flow.Message{msg("b", 1, 1), msg("a", -10, 1)}})
	if err == nil {
		t.Fatal("epoch with a failing invocation succeeded")
	}
	if v, _ := Get[int64](h, flow.Key{"a"}, "sum"); v != 5 {
		t.Errorf("state a = %d after a failed epoch, want 5", v)
	}
	if _, ok := Get[int64](h, flow.Key{"b"}, "sum"); ok {
		t.Error("state b written by a failed epoch")
	}
	if n := len(h.PendingTimers()); n != 1 {
		t.Errorf("pending timers = %d, want the 1 from the first epoch", n)
	}
	if n := len(h.Outputs()); n != 1 {
		t.Errorf("outputs = %d, want 1 from the first epoch", n)
	}
}

func TestHarnessDetectsNondeterminism(t *testing.T) {
	calls := 0
	f := flow.PerMessage(func(ctx *flow.Context, m *flow.Message) error {
		calls++
		ctx.AddMessage("out", flow.Row{"call": int64(calls)})
		return nil
	})
	_, err := NewFunc(t, f, Options{}).TryRun(Epoch{Messages: []flow.Message{Msg("in", nil, nil)}})
	if !errors.Is(err, ErrNondeterministic) {
		t.Errorf("error = %v, want ErrNondeterministic", err)
	}
	h := NewFunc(t, f, Options{AllowNondeterminism: true})
	if r := h.Run(Epoch{Messages: []flow.Message{Msg("in", nil, nil)}}); len(r.Outputs) != 1 {
		t.Errorf("outputs = %+v, want 1", r.Outputs)
	}
}

func TestHarnessSourceInvocationHasNilKey(t *testing.T) {
	var keys []flow.Key
	f := flow.Batch(func(ctx *flow.Context, ms []flow.Message) error {
		keys = append(keys, ctx.Key())
		flow.StateOf[int64](ctx, "seen").Set(int64(len(ms)))
		return nil
	})
	h := NewFunc(t, f, Options{AllowNondeterminism: true})
	h.SetState(nil, "seen", int64(1))
	h.Run(Epoch{Messages: []flow.Message{Msg("src", nil, nil), Msg("src", flow.Key{}, nil)}})
	if len(keys) != 1 || keys[0] != nil {
		t.Errorf("keys = %#v, want one invocation with a nil key", keys)
	}
	if v, _ := Get[int64](h, nil, "seen"); v != 2 {
		t.Errorf("partition state = %d, want 2", v)
	}
}

func TestNewUnknownFunctionFails(t *testing.T) {
	ft := &fatalRecorder{TB: t}
	func() {
		defer func() { _ = recover() }()
		New(ft, "flowtest-no-such-function", Options{})
	}()
	if !ft.failed {
		t.Error("New with an unknown name did not fail the test")
	}
}

// fatalRecorder records Fatalf instead of stopping the real test.
type fatalRecorder struct {
	testing.TB
	failed bool
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(string, ...any) {
	f.failed = true
	panic("fatal")
}

func TestHarnessStreamWatermarks(t *testing.T) {
	f := flow.Process{
		OnMessage: func(ctx *flow.Context, m *flow.Message) error {
			ctx.AddTimer("event", 10, nil)
			ctx.AddTimer("system", 10, nil)
			return nil
		},
		OnTimer: func(ctx *flow.Context, tm *flow.Timer) error {
			ctx.AddMessage("fired", flow.Row{"stream": tm.StreamID})
			return nil
		},
	}
	h := NewFunc(t, f, Options{})
	h.Run(Epoch{Messages: []flow.Message{Msg("in", flow.Key{"k"}, nil)}})
	r := h.Run(Epoch{Watermark: 10, StreamWatermarks: map[string]uint64{"system": 9}})
	if got, want := r.Payloads("fired"), []flow.Row{{"stream": "event"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("fired = %v, want %v", got, want)
	}
	r = h.Run(Epoch{StreamWatermarks: map[string]uint64{"system": 10}})
	if got, want := r.Payloads("fired"), []flow.Row{{"stream": "system"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("fired = %v, want %v", got, want)
	}
	if n := len(h.PendingTimers()); n != 0 {
		t.Errorf("pending = %d, want 0", n)
	}
}

func TestHarnessSwiftRules(t *testing.T) {
	two := []flow.Message{Msg("in", flow.Key{"k"}, nil), Msg("in", flow.Key{"k"}, nil)}

	batchAll := flow.Batch(func(ctx *flow.Context, ms []flow.Message) error {
		ctx.AddMessage("out", flow.Row{})
		return nil
	})
	_, err := NewFunc(t, batchAll, Options{Swift: true}).TryRun(Epoch{Messages: two})
	if !errors.Is(err, ErrSwiftRule) {
		t.Errorf("batch output with two parents: error = %v, want ErrSwiftRule", err)
	}

	batchNarrowed := flow.Batch(func(ctx *flow.Context, ms []flow.Message) error {
		for _, m := range ms {
			ctx.WithParentIDs(m.MessageID).AddMessage("out", flow.Row{})
		}
		return nil
	})
	if _, err := NewFunc(t, batchNarrowed, Options{Swift: true}).TryRun(Epoch{Messages: two}); err != nil {
		t.Errorf("narrowed batch: %v", err)
	}

	fromTimer := flow.Process{
		OnMessage: func(ctx *flow.Context, m *flow.Message) error { ctx.AddTimer("t", 1, nil); return nil },
		OnTimer:   func(ctx *flow.Context, tm *flow.Timer) error { ctx.AddMessage("out", flow.Row{}); return nil },
	}
	h := NewFunc(t, fromTimer, Options{Swift: true})
	h.Run(Epoch{Messages: two[:1]})
	if _, err := h.TryRun(Epoch{Watermark: 1}); !errors.Is(err, ErrSwiftRule) {
		t.Errorf("output from a timer: error = %v, want ErrSwiftRule", err)
	}
}
