package epoch

import "testing"

// TestPlanVisits walks a key visitor over the range [1000, 2000) with a period of 100 µs,
// against hand-computed values: the first pass starts at the first epoch, is paced over the
// period (at 30 µs, 30% of the range), runs to the end once the period is over, waits for the
// next period, and the final pass starts once the upstream completed and ends the stream.
func TestPlanVisits(t *testing.T) {
	r := VisitRange{Lo: 1000, Hi: 2000}
	c, s, ok := PlanVisits(VisitCursor{}, false, 500, 100, r, false)
	if ok || c != (VisitCursor{Start: 500, Next: 1000}) {
		t.Fatalf("at the start: %+v %+v %v, want a new pass 0 with nothing to scan yet", c, s, ok)
	}
	c, s, ok = PlanVisits(c, true, 530, 100, r, false)
	if !ok || s != (VisitScan{From: 1000, To: 1300}) {
		t.Fatalf("30%% into the period: %+v %v, want [1000, 1300)", s, ok)
	}
	c = AdvanceVisits(c, s, 1300, r)
	if c.Next != 1300 || c.Done {
		t.Fatalf("after the scan: %+v", c)
	}
	if got := VisitEventTime(c, 530, 100, r); got != 530 {
		t.Errorf("on schedule: event time %d, want now (530)", got)
	}
	// At 580 the pass should be at 80% (1800); it is at 30%: 50 µs behind.
	if got := VisitEventTime(c, 580, 100, r); got != 530 {
		t.Errorf("behind: event time %d, want 580 − (80 − 30) = 530", got)
	}
	if _, _, ok = PlanVisits(c, true, 529, 100, r, false); ok {
		t.Errorf("nothing new to scan before the pace moves on")
	}
	c, s, ok = PlanVisits(c, true, 600, 100, r, false)
	if !ok || s != (VisitScan{From: 1300, ToEnd: true}) {
		t.Fatalf("the period is over: %+v %v, want the rest of the range", s, ok)
	}
	c = AdvanceVisits(c, s, 2000, r)
	if !c.Done {
		t.Fatalf("the pass read to the end: %+v, want done", c)
	}
	if _, _, ok = PlanVisits(VisitCursor{Start: 500, Next: 2000, Done: true}, true, 599, 100, r, false); ok {
		t.Errorf("a pass done early waits for its next period")
	}
	c, s, ok = PlanVisits(VisitCursor{Pass: 0, Start: 500, Next: 2000, Done: true}, true, 620, 100, r, false)
	if !ok || c != (VisitCursor{Pass: 1, Start: 600, Next: 1000}) || s != (VisitScan{From: 1000, To: 1200}) {
		t.Fatalf("pass 1: %+v %+v %v, want it started at 600 (one period after 500) and [1000, 1200)", c, s, ok)
	}
	c, _, _ = PlanVisits(VisitCursor{Pass: 1, Start: 600, Next: 2000, Done: true}, true, 950, 100, r, false)
	if c.Pass != 2 || c.Start != 950 {
		t.Errorf("more than a period late: %+v, want pass 2 starting now (950)", c)
	}
	c, s, ok = PlanVisits(VisitCursor{Pass: 4, Start: 900, Next: 1500}, true, 930, 100, r, true)
	if !ok || c != (VisitCursor{Pass: 5, Start: 930, Next: 1000, Final: true}) || s != (VisitScan{From: 1000, ToEnd: true}) {
		t.Fatalf("upstream done: %+v %+v %v, want the final pass 5 over the whole range", c, s, ok)
	}
	c = AdvanceVisits(c, s, 2000, r)
	if _, _, ok = PlanVisits(c, true, 5000, 100, r, true); ok {
		t.Errorf("after the final pass nothing more is visited")
	}
	whole := VisitRange{}
	_, s, ok = PlanVisits(VisitCursor{Start: 0}, true, 50, 100, whole, false)
	if !ok || s.ToEnd || s.To != 1<<63 {
		t.Errorf("the whole hash space at half the period: %+v, want [0, 2^63)", s)
	}
	if c := AdvanceVisits(VisitCursor{}, VisitScan{ToEnd: true}, 0, whole); !c.Done {
		t.Errorf("a scan to 2^64 (next 0) ends the pass over the whole space")
	}
}
