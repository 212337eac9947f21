package nexmark

import (
	"testing"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/flow/flowtest"
)

// TestQ5PanesMatchModel runs NexmarkQ5Hot over the bids of a generated stream in two
// epochs — the first half with the watermark in the middle, the rest with the watermark past
// every window, so that many timers fire in one epoch — and compares its rows with the
// model's, and checks that no pane or pending timer is left.
func TestQ5PanesMatchModel(t *testing.T) {
	evs := Generate(GenConfig{Seed: 11, EventsPerSecond: 200}, 4000) // 20 s of event time
	key := flow.Key{uint64(0), int64(0)}
	var msgs []flow.Message
	for _, e := range evs {
		if e.Type == TypeBid {
			msgs = append(msgs, flowtest.Msg("bids", key, flow.Row{"bucket": int64(0), "auction": e.Auction, "date_time": e.DateTime}))
		}
	}
	h := flowtest.New(t, "NexmarkQ5Hot", flowtest.Options{})
	half := len(msgs) / 2
	mid := uint64(evs[len(evs)/2].DateTime-5000) * 1000
	h.Run(flowtest.Epoch{Messages: msgs[:half]})
	h.Run(flowtest.Epoch{Watermark: mid})
	h.Run(flowtest.Epoch{Messages: msgs[half:]})
	h.Run(flowtest.Epoch{Watermark: uint64(evs[len(evs)-1].DateTime+q5Size+1) * 1000})
	var got []Row
	for _, p := range h.Payloads("out") {
		got = append(got, Row(p))
	}
	want := Model(Q5, evs, 1)
	if err := Verify(Q5, got, want); err != nil {
		t.Fatal(err)
	}
	if len(want) < 10 {
		t.Fatalf("only %d windows: the test would prove little", len(want))
	}
	if n := len(h.PendingTimers()); n != 0 {
		t.Errorf("%d timers left after every window closed", n)
	}
	if _, ok := flowtest.Get[[]Pane](h, key, "panes"); ok {
		t.Error("panes left in state after every window closed")
	}
}
