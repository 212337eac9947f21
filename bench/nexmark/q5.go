package nexmark

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/ytflow/yt-flow/flow"
)

// q5 keeps the bid counts of 2-second panes on one key: a sliding window (10 s every 2 s) is
// the union of 5 panes, so one message per bid suffices and the window's maximum needs no
// second stage (a second stage's event-time timer could fire before the first stage's timers
// that feed it: pending timers do not hold the watermark of a stage's output stream).

// Q5Source is q5's swift source function: a bid becomes {bucket = 0; auction; date_time} on
// stream "bids"; an end marker the same with auction 0 (it only carries its event time).
func Q5Source(ctx *flow.Context, msg *flow.Message) error {
	e, err := eventOf(msg.Payload)
	switch {
	case err != nil:
		return err
	case e.Type == TypeEnd:
		ctx.AddMessage("bids", flow.Row{"bucket": int64(0), "auction": int64(0), "date_time": e.DateTime})
	case e.Type == TypeBid:
		ctx.AddMessage("bids", flow.Row{"bucket": int64(0), "auction": e.Auction, "date_time": e.DateTime})
	}
	return nil
}

// Pane is one 2-second pane of q5's state "panes": the bids per auction with date_time in
// [Start, Start + 2 s), sorted by auction.
type Pane struct {
	Start  int64          `yson:"start"`
	Counts []AuctionCount `yson:"counts"`
}

// AuctionCount is the bids of one auction in a pane.
type AuctionCount struct {
	Auction int64 `yson:"auction"`
	Num     int64 `yson:"num"`
}

// Q5Count is q5's message handler: it counts each bid in its pane (state "panes", sorted by
// start) and, for a new pane, sets the event-time timers "close" at the ends of the 5 windows
// holding it that are not set yet (state "pending": the window ends, ms, whose timers are set).
func Q5Count(ctx *flow.Context, msgs []flow.Message) error {
	panes := flow.StateOf[[]Pane](ctx, "panes")
	pending := flow.StateOf[[]int64](ctx, "pending")
	ps, _ := panes.Get()
	ends, _ := pending.Get()
	armed := len(ends)
	for i := range msgs {
		r := msgs[i].Payload
		a, err := intOf(r, "auction")
		if err != nil {
			return err
		}
		ts, err := intOf(r, "date_time")
		if err != nil {
			return err
		}
		if a == 0 {
			continue // an end marker
		}
		start := ts - ts%q5Slide
		j, found := slices.BinarySearchFunc(ps, start, func(p Pane, s int64) int { return cmp.Compare(p.Start, s) })
		if !found {
			ps = slices.Insert(ps, j, Pane{Start: start})
			for end := start + q5Slide; end <= start+q5Size; end += q5Slide {
				if !slices.Contains(ends, end) {
					ends = append(ends, end)
					ctx.AddTimer("close", uint64(end)*1000, nil)
				}
			}
		}
		cs := ps[j].Counts
		k, found := slices.BinarySearchFunc(cs, a, func(c AuctionCount, a int64) int { return cmp.Compare(c.Auction, a) })
		if found {
			cs[k].Num++
		} else {
			cs = slices.Insert(cs, k, AuctionCount{Auction: a, Num: 1})
		}
		ps[j].Counts = cs
	}
	if len(msgs) > 0 {
		panes.Set(ps)
	}
	if len(ends) != armed {
		pending.Set(ends)
	}
	return nil
}

// Q5Close is q5's timer handler for the window ending at the timer's time: it sums the
// window's 5 panes and emits {window_start; auction; num} for each auction with the most bids,
// ascending; then it drops the panes no pending window holds.
func Q5Close(ctx *flow.Context, t *flow.Timer) error {
	if t.Trigger%1000 != 0 {
		return fmt.Errorf("timer at %d µs: %w: want a window end in whole milliseconds", t.Trigger, flow.ErrColumn)
	}
	end := int64(t.Trigger / 1000)
	start := end - q5Size
	panes := flow.StateOf[[]Pane](ctx, "panes")
	pending := flow.StateOf[[]int64](ctx, "pending")
	ps, _ := panes.Get()
	ends, _ := pending.Get()
	sum := map[int64]int64{}
	for _, p := range ps {
		if p.Start >= start && p.Start < end {
			for _, c := range p.Counts {
				sum[c.Auction] += c.Num
			}
		}
	}
	for _, a := range hottest(sum) {
		ctx.AddMessage("out", flow.Row{"window_start": start, "auction": a, "num": sum[a]})
	}
	ends = slices.DeleteFunc(ends, func(e int64) bool { return e == end })
	ps = slices.DeleteFunc(ps, func(p Pane) bool {
		return !slices.ContainsFunc(ends, func(e int64) bool { return e-q5Size <= p.Start && p.Start < e })
	})
	if len(ps) == 0 {
		panes.Clear()
	} else {
		panes.Set(ps)
	}
	if len(ends) == 0 {
		pending.Clear()
	} else {
		pending.Set(ends)
	}
	return nil
}
