package flow_test

import (
	"fmt"

	"github.com/ytflow/yt-flow/flow"
)

// A keyed function that counts messages per key in state and emits the new count; the runtime
// calls Invoke once per key and epoch.
func ExampleBatch() {
	count := flow.Batch(func(ctx *flow.Context, msgs []flow.Message) error {
		n := flow.StateOf[int64](ctx, "count")
		v, _ := n.Get()
		v += int64(len(msgs))
		n.Set(v)
		ctx.AddMessage("counts", flow.Row{"word": ctx.Key()[1], "count": v})
		return nil
	})

	res, err := count.Invoke(&flow.Invocation{
		Key:      flow.Key{uint64(42), "the"},
		Messages: []flow.Message{{MessageID: "m1"}, {MessageID: "m2"}},
		State:    map[string][]byte{"count": []byte("3")},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Outputs[0].StreamID, res.Outputs[0].Payload)
	fmt.Printf("count = %s\n", res.StateWrites["count"])
	// Output:
	// counts map[count:5 word:the]
	// count = 5
}

// A per-message function: each output's parent is its message, and an error names the key and
// the message.
func ExamplePerMessage() {
	upper := flow.PerMessage(func(ctx *flow.Context, msg *flow.Message) error {
		s, err := flow.Column[string](msg.Payload, "s")
		if err != nil {
			return err
		}
		ctx.AddMessage("out", flow.Row{"s": s + "!"})
		return nil
	})
	res, _ := upper.Invoke(&flow.Invocation{Messages: []flow.Message{
		{MessageID: "a", Payload: flow.Row{"s": "hi"}},
		{MessageID: "b", Payload: flow.Row{"s": "yo"}},
	}})
	for _, o := range res.Outputs {
		fmt.Println(o.ParentIDs, o.Payload["s"])
	}
	_, err := upper.Invoke(&flow.Invocation{Key: flow.Key{"k"}, Messages: []flow.Message{{MessageID: "c", Payload: flow.Row{}}}})
	fmt.Println(err)
	// Output:
	// [a] hi!
	// [b] yo!
	// key ["k"]: message c: column "s": bad column: missing or null
}
