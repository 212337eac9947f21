package sessions

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/flow/flowtest"
)

// TestSessionWindowSplitsByEventTime: events read all at once, out of order, form sessions by
// their event times (gap 60 s): alice's events at 1, 20 and 200 s are two sessions, the event
// at 100 s arriving later bridges nothing (it is 80 s from 20 and 100 s from 200) and is a third;
// each closes once the watermark passes its end + gap (a timer armed early re-arms), and once.
func TestSessionWindowSplitsByEventTime(t *testing.T) {
	h := flowtest.New(t, "SessionWindow", params)
	ev := func(amount int64, at uint64) flow.Message {
		m := event("alice", amount, at)
		return m
	}
	r := h.Run(flowtest.Epoch{Now: 1, Messages: []flow.Message{ev(1, 200*sec), ev(2, 1*sec), ev(4, 20*sec)}})
	assert.Empty(t, r.Outputs)
	ws, ok := flowtest.Get[[]Window](h, key("alice"), "windows")
	require.True(t, ok)
	assert.Equal(t, []Window{{Start: 1 * sec, End: 20 * sec, Total: 6, Events: 2}, {Start: 200 * sec, End: 200 * sec, Total: 1, Events: 1}}, ws)
	r = h.Run(flowtest.Epoch{Messages: []flow.Message{ev(8, 100*sec)}})
	assert.Empty(t, r.Outputs)

	// The timer armed at 61 s (the session at 1 s before the event at 20 s extended it) fires
	// early and is re-armed at 80 s; the next epoch closes the session.
	r = h.Run(flowtest.Epoch{Watermark: 80 * sec})
	assert.Empty(t, r.Payloads("totals"))
	r = h.Run(flowtest.Epoch{Watermark: 80 * sec})
	assert.Equal(t, []flow.Row{{"user": "alice", "start": int64(1 * sec), "total": int64(6), "events": int64(2)}}, r.Payloads("totals"))
	r = h.Run(flowtest.Epoch{Watermark: 159 * sec})
	assert.Empty(t, r.Payloads("totals"), "the session at 100 s ends at 160 s")
	r = h.Run(flowtest.Epoch{Watermark: 10_000 * sec})
	assert.Equal(t, []flow.Row{
		{"user": "alice", "start": int64(100 * sec), "total": int64(8), "events": int64(1)},
		{"user": "alice", "start": int64(200 * sec), "total": int64(1), "events": int64(1)},
	}, r.Payloads("totals"))
	assert.Empty(t, h.Keys(), "every session closed: no state left")
	r = h.Run(flowtest.Epoch{Watermark: 20_000 * sec})
	assert.Empty(t, r.Payloads("totals"), "each session closes once")

	// An event within the gap of two sessions merges them.
	h = flowtest.New(t, "SessionWindow", params)
	h.Run(flowtest.Epoch{Messages: []flow.Message{ev(1, 0), ev(1, 100*sec), ev(1, 50*sec)}})
	ws, _ = flowtest.Get[[]Window](h, key("alice"), "windows")
	assert.Equal(t, []Window{{Start: 0, End: 100 * sec, Total: 3, Events: 3}}, ws)
}
