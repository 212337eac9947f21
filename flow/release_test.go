package flow

import (
	"fmt"
	"reflect"
	"testing"
)

// TestReleaseRecyclesInvocation: a released Result's memory serves later invocations, which
// start from nothing the earlier one left (outputs, timers, state slots, state writes), while
// what the released Result referred to (payloads, state bytes, parent id strings) stays as it
// was.
func TestReleaseRecyclesInvocation(t *testing.T) {
	// Invocation i reads state "s<i%3>" and writes it back incremented, except every fourth,
	// which only reads it; m3 also sets a timer.
	f := PerMessage(func(ctx *Context, m *Message) error {
		var i int
		if _, err := fmt.Sscanf(m.MessageID, "m%d", &i); err != nil {
			return err
		}
		st := StateOf[int64](ctx, fmt.Sprintf("s%d", i%3))
		v, _ := st.Get()
		if i%4 != 3 {
			st.Set(v + 1)
		}
		ctx.AddMessage("out", Row{"id": m.MessageID, "n": v + 1})
		if i == 3 {
			ctx.AddTimer("t", 10, Row{"at": int64(10)})
		}
		return nil
	})
	type kept struct {
		payload Row
		state   []byte
		parents []string
	}
	var earlier []kept
	seen := map[*invocation]bool{}
	reused := 0
	for i := range 40 {
		id := fmt.Sprintf("m%d", i)
		name := fmt.Sprintf("s%d", i%3)
		stored := map[string][]byte{name: mustYSON(t, int64(100*i))}
		res, err := f.Invoke(&Invocation{Key: Key{"k"}, State: stored, Messages: []Message{{StreamID: "in", MessageID: id}}})
		if err != nil {
			t.Fatal(err)
		}
		if seen[res.iv] {
			reused++
		}
		seen[res.iv] = true
		want := []Output{{StreamID: "out", Payload: Row{"id": id, "n": int64(100*i + 1)}, ParentIDs: []string{id}}}
		if !reflect.DeepEqual(res.Outputs, want) {
			t.Fatalf("invocation %d: outputs %v, want %v", i, res.Outputs, want)
		}
		if wantTimers := map[bool]int{true: 1, false: 0}[i == 3]; len(res.Timers) != wantTimers {
			t.Fatalf("invocation %d: %d timers, want %d", i, len(res.Timers), wantTimers)
		}
		var wantWrites map[string][]byte // nil when the invocation wrote nothing
		if i%4 != 3 {
			wantWrites = map[string][]byte{name: mustYSON(t, int64(100*i+1))}
		}
		if !reflect.DeepEqual(res.StateWrites, wantWrites) {
			t.Fatalf("invocation %d: state writes %q, want %q", i, res.StateWrites, wantWrites)
		}
		// The ParentIDs slice is the Result's own memory: a caller copies it to keep it.
		earlier = append(earlier, kept{res.Outputs[0].Payload, res.StateWrites[name], append([]string(nil), res.Outputs[0].ParentIDs...)})
		res.Release()
		if res.Outputs != nil || res.StateWrites != nil {
			t.Fatalf("invocation %d: a released result still holds its outputs or states", i)
		}
		for j, k := range earlier {
			jid := fmt.Sprintf("m%d", j)
			wantState := ""
			if j%4 != 3 {
				wantState = string(mustYSON(t, int64(100*j+1)))
			}
			if k.payload["id"] != jid || k.payload["n"] != int64(100*j+1) || string(k.state) != wantState || len(k.parents) != 1 || k.parents[0] != jid {
				t.Fatalf("after invocation %d: what invocation %d produced changed: %v %q %v", i, j, k.payload, k.state, k.parents)
			}
		}
	}
	if reused == 0 {
		t.Error("no invocation reused the memory of a released result")
	}
	(&Result{}).Release() // a Result made elsewhere: nothing to hand back
	var nilResult *Result
	nilResult.Release()
}

// TestReleaseRecyclesOutputs: invocations of several messages and outputs reuse the Outputs
// array and parent ids of released ones, and see nothing of them: each result holds exactly
// its own outputs and parents, and what earlier results referred to stays as it was.
func TestReleaseRecyclesOutputs(t *testing.T) {
	f := PerMessage(func(ctx *Context, m *Message) error {
		st := StateOf[uint64](ctx, "n")
		v, _ := st.Get()
		st.Set(v + 1)
		for j := range m.Payload["outs"].(int) {
			ctx.AddMessage("out", Row{"id": m.MessageID, "j": j})
		}
		return nil
	})
	type kept struct {
		payloads []Row
		state    []byte
	}
	var earlier []kept
	reused := map[*Output]bool{}
	recycled := 0
	for i := range 60 {
		// 1–4 messages of 0–5 outputs each: fewer and more than the kept arrays hold.
		var msgs []Message
		var want []Output
		for m := range 1 + i%4 {
			id := fmt.Sprintf("m%d.%d", i, m)
			outs := (i + m) % 6
			msgs = append(msgs, Message{StreamID: "in", MessageID: id, Payload: Row{"outs": outs}})
			for j := range outs {
				want = append(want, Output{StreamID: "out", Payload: Row{"id": id, "j": j}, ParentIDs: []string{id}})
			}
		}
		res, err := f.Invoke(&Invocation{Key: Key{"k"}, Messages: msgs, State: map[string][]byte{"n": mustYSON(t, uint64(i))}})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(res.Outputs, want) {
			t.Fatalf("invocation %d: outputs %v, want %v", i, res.Outputs, want)
		}
		if cap(res.Outputs) > 1 {
			if reused[&res.Outputs[:1][0]] {
				recycled++
			}
			reused[&res.Outputs[:1][0]] = true
		}
		k := kept{state: res.StateWrites["n"]}
		for _, o := range res.Outputs {
			k.payloads = append(k.payloads, o.Payload)
		}
		earlier = append(earlier, k)
		res.Release()
		for j, k := range earlier {
			if string(k.state) != string(mustYSON(t, uint64(j+1+j%4))) {
				t.Fatalf("after invocation %d: the state invocation %d wrote changed to %q", i, j, k.state)
			}
			n := 0
			for m := range 1 + j%4 {
				for o := range (j + m) % 6 {
					if p := k.payloads[n]; p["id"] != fmt.Sprintf("m%d.%d", j, m) || p["j"] != o {
						t.Fatalf("after invocation %d: output %d of invocation %d changed: %v", i, n, j, p)
					}
					n++
				}
			}
		}
	}
	if recycled == 0 {
		t.Error("no invocation reused the Outputs array of a released result")
	}
}
