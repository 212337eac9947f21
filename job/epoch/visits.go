package epoch

import "math"

// VisitCursor is where one key visitor stream of a partition is in its passes over the
// partition's keys (key_visitor_streams). It is kept in the partition's states and written by
// the commit that holds the visits it advanced past, so that each key of a pass is visited
// exactly once, across restarts.
type VisitCursor struct {
	// Pass numbers the current pass (0, 1, ...); Start is when it started (µs).
	Pass  uint64 `yson:"pass"`
	Start uint64 `yson:"start"`
	// Next is the first key hash the pass has not visited yet; Done is set once the pass
	// visited its whole key range.
	Next uint64 `yson:"next"`
	Done bool   `yson:"done"`
	// Final marks the pass that runs once the computation's upstream completed; after it the
	// stream visits nothing more.
	Final bool `yson:"final"`
}

// VisitRange is a partition's key hash range [Lo, Hi), Hi 0 meaning 2^64.
type VisitRange struct{ Lo, Hi uint64 }

// VisitScan is what an epoch scans for one key visitor stream: the key hashes [From, To), To
// the end of the range when ToEnd.
type VisitScan struct {
	From, To uint64
	ToEnd    bool
}

// PlanVisits decides an epoch's step of a key visitor stream at now (µs) with a pass every
// period (µs): the cursor to continue from (a new pass once the last one is done and its
// period is over, or the final pass once the upstream completed) and the hashes to scan, if
// any. A pass is paced over its period: by the time a fraction f of the period has elapsed,
// the pass may have visited the fraction f of the range; a pass that could not keep up visits
// as fast as the epochs let it. started is false for a partition without a cursor yet.
//
// Invariant: a pass starts at the range's beginning and only moves forward; a cursor moves
// past keys only in the commit holding their visits, so each key with state is visited once per
// pass (TestPlanVisits, e2e TestKeyVisitorVisitsEachKeyOncePerPass).
func PlanVisits(c VisitCursor, started bool, now, period uint64, r VisitRange, upstreamDone bool) (VisitCursor, VisitScan, bool) {
	if !started {
		c = VisitCursor{Start: now, Next: r.Lo}
	}
	switch {
	case upstreamDone && !c.Final:
		c = VisitCursor{Pass: c.Pass + 1, Start: now, Next: r.Lo, Final: true}
	case c.Done && !c.Final && now >= c.Start+period:
		start := c.Start + period
		if now-start >= period {
			start = now // more than a period late: the next pass starts now
		}
		c = VisitCursor{Pass: c.Pass + 1, Start: start, Next: r.Lo}
	}
	if c.Done {
		return c, VisitScan{}, false
	}
	if c.Final || period == 0 || now >= c.Start+period {
		return c, VisitScan{From: c.Next, ToEnd: true}, true
	}
	f := float64(now-c.Start) / float64(period) * span(r)
	if f >= span(r) || f >= math.MaxUint64 {
		return c, VisitScan{From: c.Next, ToEnd: true}, true
	}
	to := r.Lo + uint64(f)
	if to <= c.Next {
		return c, VisitScan{}, false
	}
	return c, VisitScan{From: c.Next, To: to}, true
}

// AdvanceVisits is the cursor after a scan of s visited up to next (the first hash it did not
// visit; 0 = 2^64 when it read to the end).
func AdvanceVisits(c VisitCursor, s VisitScan, next uint64, r VisitRange) VisitCursor {
	c.Next = next
	if s.ToEnd && next == r.Hi {
		c.Done = true
	}
	return c
}

// VisitEventTime is the event time of a visit at now: now − max(0, elapsed − scanned
// fraction × period), so a pass behind its schedule visits in the past.
func VisitEventTime(c VisitCursor, now, period uint64, r VisitRange) uint64 {
	if now <= c.Start || period == 0 {
		return now
	}
	elapsed := float64(now - c.Start)
	scanned := float64(c.Next-r.Lo) / float64(span(r))
	if c.Done {
		scanned = 1
	}
	behind := elapsed - scanned*float64(period)
	if behind <= 0 {
		return now
	}
	if behind >= float64(now) {
		return 0
	}
	return now - uint64(behind)
}

// span is the size of r as a float (2^64 for the whole space).
func span(r VisitRange) float64 {
	if r.Hi == 0 {
		return float64(math.MaxUint64) - float64(r.Lo) + 1
	}
	return float64(r.Hi - r.Lo)
}
