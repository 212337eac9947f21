package nexmark

import (
	"fmt"
	"strings"

	"github.com/ytflow/yt-flow/flow"
)

// Query is one Nexmark query this benchmark runs: "q0", "q1", "q2", "q3", "q5" or "q7".
type Query string

// The queries.
const (
	Q0 Query = "q0"
	Q1 Query = "q1"
	Q2 Query = "q2"
	Q3 Query = "q3"
	Q5 Query = "q5"
	Q7 Query = "q7"
)

// Queries lists the queries in the order the benchmark runs them.
func Queries() []Query { return []Query{Q0, Q1, Q2, Q3, Q5, Q7} }

// Describe is what the query computes, in a few words.
func (q Query) Describe() string {
	switch q {
	case Q0:
		return "passthrough of the bids"
	case Q1:
		return "map: bid price in euros"
	case Q2:
		return "filter: bids of auctions id mod 123 = 0"
	case Q3:
		return "join: sellers in OR/ID/CA × auctions of category 10 (keyed state)"
	case Q5:
		return "hot items: most-bid auctions per 10 s window sliding by 2 s (event time)"
	case Q7:
		return "highest bids per 10 s tumbling window (event time)"
	}
	return "?"
}

// Columns are the columns of the query's output queue, in order.
func (q Query) Columns() []string {
	switch q {
	case Q0, Q1, Q7:
		return []string{"auction", "bidder", "price", "date_time", "extra"}
	case Q2:
		return []string{"auction", "price"}
	case Q3:
		return []string{"name", "city", "state", "id"}
	case Q5:
		return []string{"window_start", "auction", "num"}
	}
	return nil
}

// columnTypes are the YSON types of the output columns.
var columnTypes = map[string]string{
	"auction": "int64", "bidder": "int64", "price": "int64", "date_time": "int64", "extra": "string",
	"name": "string", "city": "string", "state": "string", "id": "int64", "window_start": "int64", "num": "int64",
}

// columnType is the type of an output column of q (q1's price is a double).
func (q Query) columnType(c string) string {
	if q == Q1 && c == "price" {
		return "double"
	}
	return columnTypes[c]
}

func init() {
	flow.Register("NexmarkQ0", flow.PerMessage(bidsOnly(Q0)))
	flow.Register("NexmarkQ1", flow.PerMessage(bidsOnly(Q1)))
	flow.Register("NexmarkQ2", flow.PerMessage(bidsOnly(Q2)))
	flow.Register("NexmarkQ3Source", flow.PerMessage(Q3Source))
	flow.Register("NexmarkQ3Join", flow.Batch(Q3Join))
	flow.Register("NexmarkQ5Source", flow.PerMessage(Q5Source))
	flow.Register("NexmarkQ5Hot", flow.Process{OnMessages: Q5Count, OnTimer: Q5Close})
	flow.Register("NexmarkQ7Source", flow.PerMessage(Q7Source))
	flow.Register("NexmarkQ7Max", flow.Process{OnMessages: Q7Max, OnTimer: Q7Close})
}

// intOf reads an integer column of a row; absent or null is 0.
func intOf(r flow.Row, c string) (int64, error) {
	if v, ok := r[c]; !ok || v == nil {
		return 0, nil
	}
	return flow.Column[int64](r, c)
}

// strOf reads a string column of a row; absent or null is "".
func strOf(r flow.Row, c string) (string, error) {
	if v, ok := r[c]; !ok || v == nil {
		return "", nil
	}
	return flow.Column[string](r, c)
}

// eventOf decodes an input queue row (see WriteEvents for the columns).
func eventOf(r flow.Row) (Event, error) {
	var e Event
	var errs []error
	i := func(c string, dst *int64) {
		v, err := intOf(r, c)
		*dst = v
		errs = append(errs, err)
	}
	s := func(c string, dst *string) {
		v, err := strOf(r, c)
		*dst = v
		errs = append(errs, err)
	}
	i("event_type", &e.Type)
	i("date_time", &e.DateTime)
	switch e.Type {
	case TypePerson:
		i("id", &e.ID)
		s("name", &e.Name)
		s("city", &e.City)
		s("state", &e.State)
	case TypeAuction:
		i("id", &e.ID)
		i("seller", &e.Seller)
		i("category", &e.Category)
	case TypeBid:
		i("auction", &e.Auction)
		i("bidder", &e.Bidder)
		i("price", &e.Price)
		s("extra", &e.Extra)
	case TypeEnd:
	default:
		return e, fmt.Errorf("column event_type = %d: %w: want 0 (person), 1 (auction), 2 (bid) or 3 (end)", e.Type, flow.ErrColumn)
	}
	for _, err := range errs {
		if err != nil {
			return e, err
		}
	}
	return e, nil
}

// bidsOnly is the swift source function of q0, q1 and q2: each bid row becomes the query's
// output row on stream "out" (bidRow, the function the model uses); other events nothing.
func bidsOnly(q Query) flow.MessageFunc {
	return func(ctx *flow.Context, msg *flow.Message) error {
		e, err := eventOf(msg.Payload)
		if err != nil || e.Type != TypeBid {
			return err
		}
		if r := bidRow(q, e); r != nil {
			ctx.AddMessage("out", flow.Row(r))
		}
		return nil
	}
}

// Q3Source is q3's swift source function: a person living in OR, ID or CA becomes
// {person = id; auction = 0; name; city; state}, an auction of category 10
// {person = seller; auction = id}, both on stream "sides"; other events nothing.
func Q3Source(ctx *flow.Context, msg *flow.Message) error {
	e, err := eventOf(msg.Payload)
	if err != nil {
		return err
	}
	switch {
	case e.Type == TypePerson && q3States[e.State]:
		ctx.AddMessage("sides", flow.Row{"person": e.ID, "auction": int64(0), "name": e.Name, "city": e.City, "state": e.State})
	case e.Type == TypeAuction && e.Category == q3Category:
		ctx.AddMessage("sides", flow.Row{"person": e.Seller, "auction": e.ID, "name": "", "city": "", "state": ""})
	}
	return nil
}

// q3Person is the state "person" of a q3 key.
type q3Person struct {
	Name  string `yson:"name"`
	City  string `yson:"city"`
	State string `yson:"state"`
}

// Q3Join is q3's keyed join (key [hash; person]): a person is kept in state "person" and
// joined with the auctions waiting for it in state "pending"; an auction is joined at once
// when its seller is known, else it waits. Each join emits {name; city; state; id} on "out".
func Q3Join(ctx *flow.Context, msgs []flow.Message) error {
	person := flow.StateOf[q3Person](ctx, "person")
	pending := flow.StateOf[[]int64](ctx, "pending")
	p, known := person.Get()
	waiting, _ := pending.Get()
	for i := range msgs {
		auction, err := intOf(msgs[i].Payload, "auction")
		if err != nil {
			return err
		}
		if auction != 0 {
			if known {
				ctx.AddMessage("out", flow.Row{"name": p.Name, "city": p.City, "state": p.State, "id": auction})
			} else {
				waiting = append(waiting, auction)
			}
			continue
		}
		var errs [3]error
		p.Name, errs[0] = strOf(msgs[i].Payload, "name")
		p.City, errs[1] = strOf(msgs[i].Payload, "city")
		p.State, errs[2] = strOf(msgs[i].Payload, "state")
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		known = true
		person.Set(p)
		for _, a := range waiting {
			ctx.AddMessage("out", flow.Row{"name": p.Name, "city": p.City, "state": p.State, "id": a})
		}
		waiting = nil
	}
	if len(waiting) == 0 {
		pending.Clear()
	} else {
		pending.Set(waiting)
	}
	return nil
}

// endMarker is what the window sources emit for an end marker: window_start −1, which the
// keyed stage ignores; it carries the marker's event time, so the watermark passes every
// window.
func endMarker(ctx *flow.Context, stream string, e Event, cols flow.Row) {
	cols["window_start"] = int64(-1)
	cols["date_time"] = e.DateTime
	ctx.AddMessage(stream, cols)
}

// Q7Source is q7's swift source function: a bid becomes {window_start; auction; price;
// bidder; date_time; extra} on stream "windows", window_start its tumbling window's.
func Q7Source(ctx *flow.Context, msg *flow.Message) error {
	e, err := eventOf(msg.Payload)
	switch {
	case err != nil:
		return err
	case e.Type == TypeEnd:
		endMarker(ctx, "windows", e, flow.Row{"auction": int64(0), "price": int64(0), "bidder": int64(0), "extra": ""})
	case e.Type == TypeBid:
		ctx.AddMessage("windows", flow.Row{"window_start": e.DateTime - e.DateTime%q7Size, "auction": e.Auction,
			"price": e.Price, "bidder": e.Bidder, "date_time": e.DateTime, "extra": e.Extra})
	}
	return nil
}

// windowOf is the window start of a key [hash; window_start].
func windowOf(k flow.Key) (int64, error) {
	if len(k) == 2 {
		if s, ok := k[1].(int64); ok {
			return s, nil
		}
	}
	return 0, fmt.Errorf("key %v: want [hash uint64, window_start int64]", k)
}

// Bid is one entry of q7's state "best".
type Bid struct {
	Auction  int64  `yson:"auction"`
	Price    int64  `yson:"price"`
	Bidder   int64  `yson:"bidder"`
	DateTime int64  `yson:"date_time"`
	Extra    string `yson:"extra"`
}

// Q7Max is q7's keyed stage (key [hash; window_start]): it keeps the window's bids with the
// highest price so far in state "best" and, with the window's first bid, sets the event-time
// timer "close" at the window's end.
func Q7Max(ctx *flow.Context, msgs []flow.Message) error {
	start, err := windowOf(ctx.Key())
	if err != nil || start < 0 {
		return err
	}
	best := flow.StateOf[[]Bid](ctx, "best")
	bs, open := best.Get()
	if !open {
		ctx.AddTimer("close", uint64(start+q7Size)*1000, nil)
	}
	for i := range msgs {
		r := msgs[i].Payload
		var b Bid
		var errs [5]error
		b.Auction, errs[0] = intOf(r, "auction")
		b.Price, errs[1] = intOf(r, "price")
		b.Bidder, errs[2] = intOf(r, "bidder")
		b.DateTime, errs[3] = intOf(r, "date_time")
		b.Extra, errs[4] = strOf(r, "extra")
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		switch {
		case len(bs) == 0 || b.Price > bs[0].Price:
			bs = append(bs[:0], b)
		case b.Price == bs[0].Price:
			bs = append(bs, b)
		}
	}
	best.Set(bs)
	return nil
}

// Q7Close is q7's timer handler: it emits the window's highest bids on "out" and drops the
// window's state.
func Q7Close(ctx *flow.Context, _ *flow.Timer) error {
	best := flow.StateOf[[]Bid](ctx, "best")
	bs, _ := best.Get()
	for _, b := range bs {
		ctx.AddMessage("out", flow.Row{"auction": b.Auction, "price": b.Price, "bidder": b.Bidder, "date_time": b.DateTime, "extra": b.Extra})
	}
	best.Clear()
	return nil
}

// schemaOf renders stream columns as a YSON schema; the first column is required (a key
// column of the stage downstream) when key is set.
func schemaOf(cols []string, typ func(string) string, key bool) string {
	var b strings.Builder
	b.WriteString("{schema = [")
	for i, c := range cols {
		if i > 0 {
			b.WriteString("; ")
		}
		req := ""
		if key && i == 0 {
			req = "; required = %true"
		}
		fmt.Fprintf(&b, "{name = %q; type = %q%s}", c, typ(c), req)
	}
	b.WriteString("]}")
	return b.String()
}
