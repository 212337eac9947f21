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
