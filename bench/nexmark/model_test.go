package nexmark

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ytflow/yt-flow/flow"
)

// TestGeneratorProportions: every 50 events hold 1 person, 3 auctions and 46 bids, person and
// auction ids run from 1000 without gaps, and every event is stamped 1/rate apart.
func TestGeneratorProportions(t *testing.T) {
	evs := Generate(GenConfig{Seed: 3, EventsPerSecond: 1000}, 5000)
	var n [3]int
	nextPerson, nextAuction := int64(firstPersonID), int64(firstAuctionID)
	for i, e := range evs {
		n[e.Type]++
		switch e.Type {
		case TypePerson:
			if e.ID != nextPerson || e.Name == "" || !strings.Contains(e.Email, "@") || !slices.Contains(usStates, e.State) {
				t.Fatalf("event %d: person %+v, want id %d with name, email and a US state", i, e, nextPerson)
			}
			nextPerson++
		case TypeAuction:
			if e.ID != nextAuction || e.Category < firstCategoryID || e.Category >= firstCategoryID+numCategories || e.Reserve <= e.InitialBid {
				t.Fatalf("event %d: auction %+v, want id %d, category 10..14, reserve above the initial bid", i, e, nextAuction)
			}
			if e.Seller < firstPersonID || e.Seller > nextPerson-1+personIDLead {
				t.Fatalf("event %d: seller %d outside the people generated so far (+%d)", i, e.Seller, personIDLead)
			}
			nextAuction++
		case TypeBid:
			if e.Auction < firstAuctionID || e.Auction > nextAuction-1+auctionIDLead || e.Price <= 0 || e.URL == "" {
				t.Fatalf("event %d: bid %+v, want an auction generated so far (+%d), a positive price and a url", i, e, auctionIDLead)
			}
		}
		if want := int64(1767225600000) + int64(i); e.DateTime != want {
			t.Fatalf("event %d: date_time %d, want %d", i, e.DateTime, want)
		}
	}
	if n != [3]int{100, 300, 4600} {
		t.Errorf("persons, auctions, bids = %v, want [100 300 4600]", n)
	}
}

// TestGeneratorDeterministic: the same seed gives the same stream, whatever prefix is
// generated; another seed another one.
func TestGeneratorDeterministic(t *testing.T) {
	a := Generate(GenConfig{Seed: 5}, 500)
	b := Generate(GenConfig{Seed: 5}, 1000)[:500]
	if !slices.Equal(a, b) {
		t.Fatal("seed 5: the first 500 events differ between two runs")
	}
	c := Generate(GenConfig{Seed: 6}, 500)
	if slices.Equal(a, c) {
		t.Fatal("seeds 5 and 6 give the same events")
	}
}

// TestWindowsOf: a timestamp lies in the 5 sliding windows (10 s every 2 s) starting at the
// 2-second marks in (ts − 10 s, ts].
func TestWindowsOf(t *testing.T) {
	if got := windowsOf(12_000, q5Size, q5Slide); !slices.Equal(got, []int64{4000, 6000, 8000, 10000, 12000}) {
		t.Errorf("windowsOf(12000) = %v", got)
	}
	if got := windowsOf(13_999, q5Size, q5Slide); !slices.Equal(got, []int64{4000, 6000, 8000, 10000, 12000}) {
		t.Errorf("windowsOf(13999) = %v", got)
	}
}

// TestCloser: a window's closing input is, over the tablets, the latest of each tablet's
// first event at or after the window's end; the end marker when a tablet has none.
func TestCloser(t *testing.T) {
	evs := make([]Event, 10)
	for i := range evs {
		evs[i].DateTime = int64(i) * 100
	}
	dep := closer(evs, 3)
	for _, c := range []struct {
		end  int64
		want int
	}{
		{end: 0, want: 2},       // events 0, 1, 2 open each tablet
		{end: 450, want: 7},     // first at or after: 5 (t2), 6 (t0), 7 (t1)
		{end: 900, want: 12},    // event 9 (t0); tablets 1 and 2 only by their end markers 11 and 12
		{end: 10_000, want: 12}, // no event: the markers 10, 11, 12
	} {
		if got := dep(c.end); got != c.want {
			t.Errorf("closer(%d) = %d, want %d", c.end, got, c.want)
		}
	}
}

// TestModelQ7Ties: every bid with a window's highest price is an output row of the window.
func TestModelQ7Ties(t *testing.T) {
	evs := []Event{
		{Type: TypeBid, Auction: 1, Price: 5, DateTime: 1000},
		{Type: TypeBid, Auction: 2, Price: 9, DateTime: 2000},
		{Type: TypeBid, Auction: 3, Price: 9, DateTime: 3000},
		{Type: TypeBid, Auction: 4, Price: 1, DateTime: 12000},
	}
	got := Model(Q7, evs, 1)
	var auctions []int64
	for _, w := range got {
		auctions = append(auctions, w.Row["auction"].(int64))
	}
	slices.Sort(auctions)
	if !slices.Equal(auctions, []int64{2, 3, 4}) {
		t.Errorf("q7 rows of auctions %v, want [2 3 4]", auctions)
	}
}

// TestVerify: the check catches a missing row, a repeated row and a row not in the model.
func TestVerify(t *testing.T) {
	want := []Want{{Row: Row{"auction": int64(1), "price": int64(10)}}, {Row: Row{"auction": int64(2), "price": int64(20)}}}
	row := func(a, p int64) Row { return Row{"auction": a, "price": p} }
	for _, c := range []struct {
		name string
		got  []Row
		fail string
	}{
		{name: "exact", got: []Row{row(2, 20), row(1, 10)}},
		{name: "uint64 from the queue", got: []Row{{"auction": uint64(2), "price": int64(20)}, row(1, 10)}},
		{name: "missing", got: []Row{row(1, 10)}, fail: "row 2|20: 1 missing"},
		{name: "repeated", got: []Row{row(1, 10), row(2, 20), row(1, 10)}, fail: "row 1|10: 1 more than the model"},
		{name: "wrong", got: []Row{row(1, 10), row(2, 21)}, fail: "row 2|21: 1 more"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Verify(Q2, c.got, want)
			switch {
			case c.fail == "" && err != nil:
				t.Fatalf("want PASS, got %v", err)
			case c.fail != "" && (!errors.Is(err, ErrVerification) || !strings.Contains(err.Error(), c.fail)):
				t.Fatalf("error %v: want ErrVerification naming %q", err, c.fail)
			}
		})
	}
}

// TestEventOfRejectsBadRows: an unknown event type or a column of the wrong type is an error
// naming the column, not an event.
func TestEventOfRejectsBadRows(t *testing.T) {
	if _, err := eventOf(flow.Row{"event_type": int64(9)}); err == nil || !strings.Contains(err.Error(), "event_type = 9") {
		t.Errorf("event_type 9: %v", err)
	}
	if _, err := eventOf(flow.Row{"event_type": int64(TypeBid), "price": "ten"}); err == nil || !strings.Contains(err.Error(), "price") {
		t.Errorf("price \"ten\": %v", err)
	}
	e, err := eventOf(flow.Row{"event_type": int64(TypeBid), "auction": int64(1001), "price": int64(7), "date_time": int64(5)})
	if err != nil || e.Auction != 1001 || e.Price != 7 || e.DateTime != 5 {
		t.Errorf("a bid: %+v, %v", e, err)
	}
}

// FuzzEventOf: any row decodes to an event of a known type or to an error, never a panic.
func FuzzEventOf(f *testing.F) {
	f.Add(int64(2), int64(1001), "x", int64(5))
	f.Add(int64(-1), int64(0), "", int64(0))
	f.Fuzz(func(t *testing.T, typ, n int64, s string, ts int64) {
		for _, r := range []flow.Row{
			{"event_type": typ, "auction": n, "extra": s, "date_time": ts},
			{"event_type": typ, "id": s, "state": n},
			{"event_type": typ, "price": uint64(n), "name": nil},
		} {
			e, err := eventOf(r)
			if err == nil && (e.Type < TypePerson || e.Type > TypeEnd) {
				t.Fatalf("row %v: event of type %d without an error", r, e.Type)
			}
		}
	})
}
