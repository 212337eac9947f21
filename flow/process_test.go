package flow

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func msgs(ids ...string) []Message {
	out := make([]Message, len(ids))
	for i, id := range ids {
		out[i] = Message{StreamID: "in", MessageID: id, Payload: Row{"n": int64(i)}}
	}
	return out
}

func TestPerMessageLineageIsTheMessage(t *testing.T) {
	f := PerMessage(func(ctx *Context, m *Message) error {
		ctx.AddMessage("out", Row{"id": m.MessageID})
		return nil
	})
	res, err := f.Invoke(&Invocation{Key: Key{"k"}, Messages: msgs("a", "b")})
	if err != nil {
		t.Fatal(err)
	}
	want := []Output{
		{StreamID: "out", Payload: Row{"id": "a"}, ParentIDs: []string{"a"}},
		{StreamID: "out", Payload: Row{"id": "b"}, ParentIDs: []string{"b"}},
	}
	if !reflect.DeepEqual(res.Outputs, want) {
		t.Errorf("outputs = %+v, want %+v", res.Outputs, want)
	}
}

func TestTimersRunBeforeMessagesWithTheirLineage(t *testing.T) {
	var order []string
	f := Process{
		OnTimer: func(ctx *Context, tm *Timer) error {
			order = append(order, "timer:"+tm.MessageID)
			ctx.AddMessage("out", Row{"from": "timer"})
			return nil
		},
		OnMessages: func(ctx *Context, ms []Message) error {
			order = append(order, "batch")
			ctx.AddMessage("out", Row{"from": "batch"})
			return nil
		},
	}
	res, err := f.Invoke(&Invocation{
		Key:      Key{uint64(1)},
		Timers:   []Timer{{StreamID: "t", Trigger: 10, MessageID: "t1"}, {StreamID: "t", Trigger: 20, MessageID: "t2"}},
		Messages: msgs("a", "b"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"timer:t1", "timer:t2", "batch"}; !reflect.DeepEqual(order, want) {
		t.Errorf("call order = %v, want %v", order, want)
	}
	gotParents := [][]string{}
	for _, o := range res.Outputs {
		gotParents = append(gotParents, o.ParentIDs)
	}
	// With timers among the inputs, a batch's outputs name its messages only.
	if want := [][]string{{"t1"}, {"t2"}, {"a", "b"}}; !reflect.DeepEqual(gotParents, want) {
		t.Errorf("parents = %v, want %v", gotParents, want)
	}
}

func TestBatchWithoutTimersMeansAllInputs(t *testing.T) {
	f := Batch(func(ctx *Context, ms []Message) error {
		ctx.AddMessage("out", Row{"n": int64(len(ms))})
		return nil
	})
	res, err := f.Invoke(&Invocation{Messages: msgs("a", "b", "c")})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Outputs) != 1 || res.Outputs[0].ParentIDs != nil || res.Outputs[0].Payload["n"] != int64(3) {
		t.Errorf("outputs = %+v, want one output of 3 with all inputs as parents", res.Outputs)
	}
}

func TestWithParentIDsNarrowsLineage(t *testing.T) {
	f := Batch(func(ctx *Context, ms []Message) error {
		for _, m := range ms {
			ctx.WithParentIDs(m.MessageID).WithEventTimestamp(77).AddMessage("out", m.Payload)
		}
		ctx.AddMessage("summary", Row{})
		return nil
	})
	res, err := f.Invoke(&Invocation{Messages: msgs("a", "b")})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Outputs) != 3 {
		t.Fatalf("outputs = %+v, want 3", res.Outputs)
	}
	for i, id := range []string{"a", "b"} {
		if o := res.Outputs[i]; !reflect.DeepEqual(o.ParentIDs, []string{id}) || o.EventTimestamp != 77 {
			t.Errorf("output %d = %+v, want parent %s at event time 77", i, o, id)
		}
	}
	if o := res.Outputs[2]; o.ParentIDs != nil || o.EventTimestamp != 0 {
		t.Errorf("narrowing leaked into the original context: %+v", o)
	}
}

func TestWithParentIDsRejectsUnknownParent(t *testing.T) {
	f := PerMessage(func(ctx *Context, m *Message) error {
		ctx.WithParentIDs("nope").AddMessage("out", Row{})
		return nil
	})
	_, err := f.Invoke(&Invocation{Messages: msgs("a")})
	if !errors.Is(err, ErrUnknownParent) || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("error = %v, want ErrUnknownParent naming the id", err)
	}
}

func TestUserErrorNamesKeyAndMessage(t *testing.T) {
	boom := errors.New("boom")
	f := PerMessage(func(ctx *Context, m *Message) error {
		ctx.AddMessage("out", Row{})
		if m.MessageID == "b" {
			return boom
		}
		return nil
	})
	res, err := f.Invoke(&Invocation{Key: Key{"user-1"}, Messages: msgs("a", "b")})
	if res != nil || !errors.Is(err, boom) {
		t.Fatalf("Invoke = %v, %v; want nil result and boom", res, err)
	}
	for _, part := range []string{`["user-1"]`, "message b"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not contain %q", err, part)
		}
	}
}

func TestPanicBecomesErrUserPanic(t *testing.T) {
	f := PerMessage(func(ctx *Context, m *Message) error {
		var row Row
		row["x"] = 1 // assignment to a nil map
		return nil
	})
	res, err := f.Invoke(&Invocation{Key: Key{"k"}, Messages: msgs("a")})
	if res != nil || !errors.Is(err, ErrUserPanic) {
		t.Fatalf("Invoke = %v, %v; want nil result and ErrUserPanic", res, err)
	}
	var pe *PanicError
	if !errors.As(err, &pe) || !strings.Contains(string(pe.Stack), "process_test.go") {
		t.Errorf("no stack pointing at the panicking code in %v", err)
	}
	if !strings.Contains(err.Error(), "message a") {
		t.Errorf("error %q does not name the message", err)
	}
}

func TestNoHandler(t *testing.T) {
	_, err := PerMessage(func(*Context, *Message) error { return nil }).Invoke(&Invocation{
		Timers: []Timer{{StreamID: "flush", Trigger: 1}},
	})
	if !errors.Is(err, ErrNoHandler) || !strings.Contains(err.Error(), `"flush"`) {
		t.Errorf("timers without OnTimer: error = %v, want ErrNoHandler naming the stream", err)
	}
	_, err = PerTimer(func(*Context, *Timer) error { return nil }).Invoke(&Invocation{Messages: msgs("a")})
	if !errors.Is(err, ErrNoHandler) {
		t.Errorf("messages without a message handler: error = %v, want ErrNoHandler", err)
	}
	_, err = Process{
		OnMessage:  func(*Context, *Message) error { return nil },
		OnMessages: func(*Context, []Message) error { return nil },
	}.Invoke(&Invocation{})
	if err == nil {
		t.Error("both message handlers set: no error")
	}
}

func TestAddTimerUsesInvocationKey(t *testing.T) {
	f := PerMessage(func(ctx *Context, m *Message) error {
		ctx.AddTimer("flush", ctx.Now()+5, Row{"why": "idle"})
		return nil
	})
	res, err := f.Invoke(&Invocation{Key: Key{int64(3)}, Now: 100, Messages: msgs("a")})
	if err != nil {
		t.Fatal(err)
	}
	want := []Timer{{StreamID: "flush", Key: Key{int64(3)}, Trigger: 105, Payload: Row{"why": "idle"}}}
	if !reflect.DeepEqual(res.Timers, want) {
		t.Errorf("timers = %+v, want %+v", res.Timers, want)
	}
}

type limits struct {
	MinLength int    `yson:"min_length"`
	Stream    string `yson:"stream"`
}

func TestParamsOf(t *testing.T) {
	var got limits
	f := PerMessage(func(ctx *Context, m *Message) error {
		var err error
		got, err = ParamsOf[limits](ctx)
		return err
	})
	if _, err := f.Invoke(&Invocation{Parameters: Row{"min_length": int64(3), "stream": "w"}, Messages: msgs("a")}); err != nil {
		t.Fatal(err)
	}
	if got != (limits{MinLength: 3, Stream: "w"}) {
		t.Errorf("params = %+v", got)
	}
	if _, err := f.Invoke(&Invocation{Messages: msgs("a")}); err != nil {
		t.Errorf("absent parameters: %v, want zero value", err)
	}
	_, err := f.Invoke(&Invocation{Parameters: Row{"min_length": "three"}, Messages: msgs("a")})
	if !errors.Is(err, ErrBadParameters) {
		t.Errorf("bad parameters: error = %v, want ErrBadParameters", err)
	}
}

// TestConcurrentInvocations runs one Process for many keys at once, as the runtime may; run
// with -race.
func TestConcurrentInvocations(t *testing.T) {
	f := Batch(func(ctx *Context, ms []Message) error {
		n := StateOf[int64](ctx, "n")
		v, _ := n.Get()
		n.Set(v + int64(len(ms)))
		ctx.AddMessage("out", Row{"key": ctx.Key()[0]})
		return nil
	})
	params := Row{"p": int64(1)}
	errs := make(chan error, 16)
	for i := range 16 {
		go func() {
			res, err := f.Invoke(&Invocation{Key: Key{int64(i)}, Messages: msgs("a", "b"), Parameters: params})
			if err == nil && (string(res.StateWrites["n"]) != "2" || res.Outputs[0].Payload["key"] != int64(i)) {
				err = errors.New("wrong result")
			}
			errs <- err
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestParamsOfReusedWithinInvocation(t *testing.T) {
	var got []limits
	f := PerMessage(func(ctx *Context, m *Message) error {
		p, err := ParamsOf[limits](ctx)
		got = append(got, p)
		return err
	})
	if _, err := f.Invoke(&Invocation{Parameters: Row{"min_length": int64(3)}, Messages: msgs("a", "b")}); err != nil {
		t.Fatal(err)
	}
	if want := []limits{{MinLength: 3}, {MinLength: 3}}; !reflect.DeepEqual(got, want) {
		t.Errorf("params = %+v, want %+v", got, want)
	}
}

// TestVisitsGoToOnVisit: a timer marked Visit reaches OnVisit with its stream, key, pass and
// pass start, before the messages; its outputs name the visit as their parent and it can read
// and write the key's state; visits without OnVisit fail with ErrNoHandler naming the stream.
func TestVisitsGoToOnVisit(t *testing.T) {
	var got []Visit
	f := Process{
		OnVisit: func(ctx *Context, v *Visit) error {
			got = append(got, *v)
			st := StateOf[int64](ctx, "count")
			n, _ := st.Get()
			st.Set(n + 100)
			ctx.AddMessage("out", Row{"pass": int64(v.Pass), "count": n})
			return nil
		},
		OnTimer:   func(*Context, *Timer) error { t.Error("a visit reached OnTimer"); return nil },
		OnMessage: func(*Context, *Message) error { return nil },
	}
	res, err := f.Invoke(&Invocation{
		Key:    Key{"k"},
		Timers: []Timer{{StreamID: "visits", Key: Key{"k"}, Trigger: 5000, Pass: 3, MessageID: "v1", EventTimestamp: 4000, Visit: true}},
		State:  map[string][]byte{"count": []byte("7")},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []Visit{{StreamID: "visits", Key: Key{"k"}, Pass: 3, PassStart: 5000, MessageID: "v1", EventTimestamp: 4000}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("visits = %+v, want %+v", got, want)
	}
	if len(res.Outputs) != 1 || !reflect.DeepEqual(res.Outputs[0].ParentIDs, []string{"v1"}) || res.Outputs[0].Payload["count"] != int64(7) {
		t.Errorf("outputs = %+v, want one with parent v1 and count 7", res.Outputs)
	}
	if string(res.StateWrites["count"]) != "107" {
		t.Errorf("state writes = %q, want count 107", res.StateWrites)
	}
	_, err = PerTimer(func(*Context, *Timer) error { return nil }).Invoke(&Invocation{Timers: []Timer{{StreamID: "visits", Visit: true}}})
	if !errors.Is(err, ErrNoHandler) || !strings.Contains(err.Error(), `"visits"`) {
		t.Errorf("a visit without OnVisit: error = %v, want ErrNoHandler naming the stream", err)
	}
}

// TestAcquireQuota: AcquireQuota hands the throttler id and amount to the runtime's QuotaFunc
// with the caller's ctx and returns its error; amount ≤ 0 asks nothing; without a runtime
// QuotaFunc (a harness) it fails with ErrNoThrottler naming the throttler.
func TestAcquireQuota(t *testing.T) {
	type call struct {
		id     string
		amount int64
	}
	var calls []call
	refused := errors.New("refused")
	quota := func(ctx context.Context, id string, amount int64) error {
		calls = append(calls, call{id, amount})
		if ctx.Value(ctxKey{}) != "mine" {
			t.Errorf("the caller's ctx did not reach the runtime")
		}
		if id == "closed" {
			return refused
		}
		return nil
	}
	ctx := context.WithValue(context.Background(), ctxKey{}, "mine")
	var errs []error
	fn := PerMessage(func(c *Context, _ *Message) error {
		errs = append(errs, c.AcquireQuota(ctx, "bytes", 10), c.AcquireQuota(ctx, "bytes", 0), c.AcquireQuota(ctx, "closed", 1))
		return nil
	})
	if _, err := fn.Invoke(&Invocation{Messages: []Message{{MessageID: "m"}}, Quota: quota}); err != nil {
		t.Fatal(err)
	}
	if want := []call{{"bytes", 10}, {"closed", 1}}; !reflect.DeepEqual(calls, want) {
		t.Errorf("calls %v, want %v", calls, want)
	}
	if errs[0] != nil || errs[1] != nil || !errors.Is(errs[2], refused) {
		t.Errorf("errors %v", errs)
	}
	errs = nil
	if _, err := fn.Invoke(&Invocation{Messages: []Message{{MessageID: "m"}}}); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(errs[0], ErrNoThrottler) || !strings.Contains(errs[0].Error(), `"bytes"`) {
		t.Errorf("without a runtime: %v, want ErrNoThrottler naming the throttler", errs[0])
	}
}

type ctxKey struct{}
