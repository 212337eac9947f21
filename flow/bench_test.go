package flow

import (
	"fmt"
	"testing"
)

// BenchmarkInvoke measures the adapter overhead per invocation of 100 messages: a per-message
// passthrough, a batch that updates one int64 state, and a per-message handler reading and
// writing a struct state for every message.
func BenchmarkInvoke(b *testing.B) {
	ms := make([]Message, 100)
	for i := range ms {
		ms[i] = Message{StreamID: "in", MessageID: fmt.Sprintf("m%03d", i), Payload: Row{"n": int64(i)}}
	}
	type acc struct {
		Sum   int64 `yson:"sum"`
		Count int64 `yson:"count"`
	}
	cases := []struct {
		name string
		fn   Function
	}{
		{"per-message-passthrough", PerMessage(func(ctx *Context, m *Message) error {
			ctx.AddMessage("out", m.Payload)
			return nil
		})},
		{"batch-int64-state", Batch(func(ctx *Context, ms []Message) error {
			s := StateOf[int64](ctx, "n")
			v, _ := s.Get()
			s.Set(v + int64(len(ms)))
			return nil
		})},
		{"per-message-struct-state", PerMessage(func(ctx *Context, m *Message) error {
			s := StateOf[acc](ctx, "acc")
			v, _ := s.Get()
			v.Sum += m.Payload["n"].(int64)
			v.Count++
			s.Set(v)
			return nil
		})},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			inv := &Invocation{Key: Key{uint64(1), "k"}, Messages: ms, State: map[string][]byte{"n": []byte("5")}}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.fn.Invoke(inv); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkInvokeReleased measures an invocation the way the runtime makes them, the Result
// released after use: a keyed running count over a batch of two messages (one int64 state
// read and written, one output per message, the burst benchmark's RunningCount) and a
// per-message split of a source row (one output).
func BenchmarkInvokeReleased(b *testing.B) {
	count := Batch(func(ctx *Context, ms []Message) error {
		s := StateOf[int64](ctx, "count")
		n, _ := s.Get()
		for range ms {
			n++
			ctx.AddMessage("counts", Row{"count": n})
		}
		s.Set(n)
		return nil
	})
	split := PerMessage(func(ctx *Context, m *Message) error {
		ctx.AddMessage("words", m.Payload)
		return nil
	})
	two := []Message{{StreamID: "words", MessageID: "a"}, {StreamID: "words", MessageID: "b"}}
	one := []Message{{StreamID: "records", MessageID: "r", Payload: Row{"word": "the"}}}
	cases := []struct {
		name string
		fn   Function
		inv  *Invocation
	}{
		{"running-count", count, &Invocation{Key: Key{uint64(1), "the"}, Messages: two, State: map[string][]byte{"count": []byte("123456")}}},
		{"split", split, &Invocation{Messages: one}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := c.fn.Invoke(c.inv)
				if err != nil {
					b.Fatal(err)
				}
				res.Release()
			}
		})
	}
}
