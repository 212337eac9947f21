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
