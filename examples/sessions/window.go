package sessions

import (
	"fmt"
	"sort"

	"github.com/ytflow/yt-flow/flow"
)

func init() {
	flow.Register("SessionWindow", flow.Process{OnMessage: AddToWindow, OnTimer: CloseWindows})
}

// Window is one open session of a user in SessionWindow's state: events less than the gap
// apart in event time, in whatever order they arrived.
type Window struct {
	// Start and End are the first and last event times (µs).
	Start  uint64 `yson:"start"`
	End    uint64 `yson:"end"`
	Total  int64  `yson:"total"`
	Events int64  `yson:"events"`
}

// AddToWindow is SessionWindow's message handler, an event-time session window: it adds an
// events row {user; amount} at its event time to the user's open sessions (state "windows",
// sorted by start), merging every session it comes within the gap of, and arms the flush
// timer at the earliest session end + gap when that is earlier than the one armed. Unlike
// SumByUser it splits a user's events into sessions by their event times, whatever order they
// arrive in, so events read long before the watermark passes still form separate sessions.
func AddToWindow(ctx *flow.Context, msg *flow.Message) error {
	_, gap, err := paramsOf(ctx)
	if err != nil {
		return err
	}
	amount, err := flow.Column[int64](msg.Payload, "amount")
	if err != nil {
		return err
	}
	at := msg.EventTimestamp
	if at == 0 {
		at = msg.SystemTimestamp
	}
	state := flow.StateOf[[]Window](ctx, "windows")
	ws, _ := state.Get()
	merged := Window{Start: at, End: at, Total: amount, Events: 1}
	kept := ws[:0:0]
	for _, w := range ws {
		if w.End+gap > merged.Start && merged.End+gap > w.Start { // less than a gap apart
			merged = Window{Start: min(w.Start, merged.Start), End: max(w.End, merged.End), Total: w.Total + merged.Total, Events: w.Events + merged.Events}
			continue
		}
		kept = append(kept, w)
	}
	kept = append(kept, merged)
	sort.Slice(kept, func(i, j int) bool { return kept[i].Start < kept[j].Start })
	state.Set(kept)
	armed := flow.StateOf[uint64](ctx, "armed")
	if a, ok := armed.Get(); !ok || merged.End+gap < a {
		ctx.AddTimer("flush", merged.End+gap, nil)
		armed.Set(merged.End + gap)
	}
	return nil
}

// CloseWindows is SessionWindow's timer handler: it emits {user; start; total; events} to
// stream totals for every open session whose end + gap the timer's time has reached, drops
// them, and re-arms the timer at the earliest end + gap of the sessions left. A timer earlier
// than the one armed (a session merged into a later one) closes what it can and re-arms too.
func CloseWindows(ctx *flow.Context, t *flow.Timer) error {
	_, gap, err := paramsOf(ctx)
	if err != nil {
		return err
	}
	user, err := userOf(ctx.Key())
	if err != nil {
		return err
	}
	state := flow.StateOf[[]Window](ctx, "windows")
	ws, _ := state.Get()
	armed := flow.StateOf[uint64](ctx, "armed")
	a, _ := armed.Get()
	var open []Window
	next := uint64(0)
	for _, w := range ws {
		if w.End+gap <= t.Trigger {
			ctx.AddMessage("totals", flow.Row{"user": user, "start": int64(w.Start), "total": w.Total, "events": w.Events})
			continue
		}
		open = append(open, w)
		if next == 0 || w.End+gap < next {
			next = w.End + gap
		}
	}
	if len(open) == 0 {
		state.Clear()
		if a <= t.Trigger {
			armed.Clear()
		}
		return nil
	}
	state.Set(open)
	if a <= t.Trigger || next < a {
		ctx.AddTimer("flush", next, nil)
		armed.Set(next)
	}
	return nil
}

// String describes a window for test failures.
func (w Window) String() string {
	return fmt.Sprintf("[%d, %d] total %d in %d events", w.Start, w.End, w.Total, w.Events)
}
