package nexmark

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Window sizes of the windowed queries, in milliseconds of event time (Nexmark's).
const (
	// q5: sliding windows of 10 s every 2 s.
	q5Size  = 10_000
	q5Slide = 2_000
	// q7: tumbling windows of 10 s.
	q7Size = 10_000
	// q2 keeps the bids of auctions whose id is a multiple of this.
	q2Modulus = 123
	// q3 joins auctions of this category with sellers living in these states.
	q3Category = 10
)

var q3States = map[string]bool{"OR": true, "ID": true, "CA": true}

// dollarsToEuros is q1's exchange rate (Nexmark's Flink q1).
const dollarsToEuros = 0.908

// Want is one expected output row of a query: the row and the index of the input event
// (in write order, end markers after the events) whose write makes it computable — the bid
// of q0–q2, the later of the person and the auction of q3, and for a window the event that
// moves every input tablet's watermark past its end.
type Want struct {
	Row Row
	Dep int
}

// Row is an output row: column name → value as the output queue returns it (int64, float64,
// string).
type Row map[string]any

// key is the row as one comparable string: the query's columns in order.
func (r Row) key(cols []string) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteByte('|')
		}
		switch v := r[c].(type) {
		case float64:
			b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		case uint64:
			b.WriteString(strconv.FormatUint(v, 10))
		default:
			fmt.Fprint(&b, v)
		}
	}
	return b.String()
}

// Model computes every query's exact output from the events, written round-robin to
// tablets input tablets (event i to tablet i mod tablets, then one end marker per tablet).
func Model(q Query, events []Event, tablets int) []Want {
	var out []Want
	switch q {
	case Q0, Q1, Q2:
		for i, e := range events {
			if e.Type != TypeBid {
				continue
			}
			r := bidRow(q, e)
			if r != nil {
				out = append(out, Want{Row: r, Dep: i})
			}
		}
	case Q3:
		out = modelQ3(events)
	case Q5:
		out = modelQ5(events, tablets)
	case Q7:
		out = modelQ7(events, tablets)
	}
	return out
}

// bidRow is the output of q0, q1 or q2 for a bid (nil when q2 filters it out): the one
// function the model and the pipeline share, as a map would be written once.
func bidRow(q Query, e Event) Row {
	switch q {
	case Q0:
		return Row{"auction": e.Auction, "bidder": e.Bidder, "price": e.Price, "date_time": e.DateTime, "extra": e.Extra}
	case Q1:
		return Row{"auction": e.Auction, "bidder": e.Bidder, "price": dollarsToEuros * float64(e.Price), "date_time": e.DateTime, "extra": e.Extra}
	case Q2:
		if e.Auction%q2Modulus != 0 {
			return nil
		}
		return Row{"auction": e.Auction, "price": e.Price}
	}
	return nil
}

func modelQ3(events []Event) []Want {
	persons := map[int64]int{} // person id → event index, for persons in q3States
	var auctions []int         // auctions of the category, by index
	for i, e := range events {
		switch {
		case e.Type == TypePerson && q3States[e.State]:
			persons[e.ID] = i
		case e.Type == TypeAuction && e.Category == q3Category:
			auctions = append(auctions, i)
		}
	}
	var out []Want
	for _, ai := range auctions {
		a := events[ai]
		pi, ok := persons[a.Seller]
		if !ok {
			continue
		}
		p := events[pi]
		out = append(out, Want{Row: Row{"name": p.Name, "city": p.City, "state": p.State, "id": a.ID}, Dep: max(ai, pi)})
	}
	return out
}

// closer returns, for a window end (ms), the index of the event whose write lets every input
// tablet's watermark pass it: per tablet the first event at or after the end (the tablet's
// end marker when none), the latest of those.
func closer(events []Event, tablets int) func(end int64) int {
	return func(end int64) int {
		g := sort.Search(len(events), func(i int) bool { return events[i].DateTime >= end })
		dep := 0
		for t := range tablets {
			j := g + ((t-g%tablets)%tablets+tablets)%tablets
			if j >= len(events) {
				j = len(events) + t // the tablet's end marker
			}
			dep = max(dep, j)
		}
		return dep
	}
}

// windowsOf returns the starts of the sliding windows (size, slide) holding ts, ascending.
func windowsOf(ts, size, slide int64) []int64 {
	last := ts - ts%slide
	var starts []int64
	for s := last; s > ts-size; s -= slide {
		starts = append(starts, s)
	}
	slices.Reverse(starts)
	return starts
}

func modelQ5(events []Event, tablets int) []Want {
	counts := map[int64]map[int64]int64{} // window start → auction → bids
	for _, e := range events {
		if e.Type != TypeBid {
			continue
		}
		for _, s := range windowsOf(e.DateTime, q5Size, q5Slide) {
			if counts[s] == nil {
				counts[s] = map[int64]int64{}
			}
			counts[s][e.Auction]++
		}
	}
	dep := closer(events, tablets)
	var out []Want
	for s, byAuction := range counts {
		for _, h := range hottest(byAuction) {
			out = append(out, Want{Row: Row{"window_start": s, "auction": h, "num": byAuction[h]}, Dep: dep(s + q5Size)})
		}
	}
	return out
}

// hottest returns the auctions with the most bids, ascending.
func hottest(byAuction map[int64]int64) []int64 {
	var top int64
	for _, n := range byAuction {
		top = max(top, n)
	}
	var out []int64
	for a, n := range byAuction {
		if n == top {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out
}

func modelQ7(events []Event, tablets int) []Want {
	best := map[int64][]int{} // window start → indexes of its bids with the highest price
	for i, e := range events {
		if e.Type != TypeBid {
			continue
		}
		s := e.DateTime - e.DateTime%q7Size
		b := best[s]
		switch {
		case len(b) == 0 || e.Price > events[b[0]].Price:
			best[s] = []int{i}
		case e.Price == events[b[0]].Price:
			best[s] = append(b, i)
		}
	}
	dep := closer(events, tablets)
	var out []Want
	for s, b := range best {
		for _, i := range b {
			e := events[i]
			out = append(out, Want{Row: Row{"auction": e.Auction, "price": e.Price, "bidder": e.Bidder, "date_time": e.DateTime, "extra": e.Extra}, Dep: dep(s + q7Size)})
		}
	}
	return out
}

// ErrVerification is a query's output that differs from the model's.
var ErrVerification = errors.New("nexmark: output differs from the model")

// Verify compares a query's output rows with the model's as multisets: every expected row
// exactly as often as expected (a row missing, repeated or not expected is named).
func Verify(q Query, got []Row, want []Want) error {
	cols := q.Columns()
	n := map[string]int{}
	for _, w := range want {
		n[w.Row.key(cols)]++
	}
	for _, r := range got {
		n[r.key(cols)]--
	}
	var problems []string
	for k, d := range n {
		switch {
		case d > 0:
			problems = append(problems, fmt.Sprintf("row %s: %d missing", k, d))
		case d < 0:
			problems = append(problems, fmt.Sprintf("row %s: %d more than the model", k, -d))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	sort.Strings(problems)
	more := ""
	if len(problems) > 5 {
		more = fmt.Sprintf(" … and %d more", len(problems)-5)
		problems = problems[:5]
	}
	return fmt.Errorf("%w: %s: %d rows, want %d: %s%s", ErrVerification, q, len(got), len(want), strings.Join(problems, "; "), more)
}
