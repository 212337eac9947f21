// Package throttle is the pure core of the distributed throttler (Flow's dynamic_spec
// throttlers): a token bucket per throttler on the controller, refilled by limit per period,
// granting the jobs' requests by class weight and, within a class, most lagging first. It does
// no I/O and reads no clock: each round is given its time.
package throttle

import (
	"math"
	"sort"
	"time"
)

// Config is one throttler (dynamic_spec/throttlers/<id>).
type Config struct {
	// Limit is how many units the bucket gains per Period; 0 or less means unlimited.
	Limit  float64
	Period time.Duration
	// MaxGrant caps one grant to one request (0: no cap).
	MaxGrant int64
	// Weights are the classes' weights (class "default" has weight 1 unless set).
	Weights map[string]float64
}

// Request is one job's outstanding demand on a throttler in a round.
type Request struct {
	Job   string
	Class string
	// Amount is how many units the job still asks for.
	Amount int64
	// Lag orders requests within a class: the smallest (the furthest behind) first.
	Lag uint64
}

// Bucket is the state of one throttler across rounds.
type Bucket struct {
	// Tokens are the units available now (at most Limit: a bucket holds one period).
	Tokens float64
	// Periods counts the periods elapsed since the bucket started (fractional); Granted the
	// units granted in all. Granted never exceeds Limit × Periods.
	Periods float64
	Granted int64
	last    time.Time
}

// Resume returns a bucket continuing from published totals (a new leader): empty, with the
// periods and grants counted so far.
func Resume(periods float64, granted int64) *Bucket {
	return &Bucket{Periods: periods, Granted: granted}
}

// Round refills the bucket for the time since the last round (the first round only starts
// the clock) and grants requests: the available whole units are shared among the classes with
// demand in proportion to their weights (what a class does not need goes to the others), and
// within a class to the requests in order of lag, each capped by MaxGrant. It returns the
// grants by job (jobs granted nothing are absent).
//
// Invariant: the units granted in all never exceed Limit × the periods elapsed since the
// bucket started (TestRoundNeverGrantsMoreThanRefilled), and an unlimited throttler grants
// every request in full (TestRoundUnlimited).
func (b *Bucket) Round(cfg Config, now time.Time, reqs []Request) map[string]int64 {
	if !b.last.IsZero() && now.After(b.last) && cfg.Period > 0 {
		elapsed := float64(now.Sub(b.last)) / float64(cfg.Period)
		b.Periods += elapsed
		if cfg.Limit > 0 {
			b.Tokens = math.Min(b.Tokens+elapsed*cfg.Limit, cfg.Limit)
		}
	}
	if b.last.IsZero() || now.After(b.last) {
		b.last = now
	}
	grants := map[string]int64{}
	if cfg.Limit <= 0 {
		for _, r := range reqs {
			if r.Amount > 0 {
				g := capped(r.Amount, cfg.MaxGrant)
				grants[r.Job] += g
				b.Granted += g
			}
		}
		return grants
	}
	byClass := map[string][]Request{}
	for _, r := range reqs {
		if r.Amount > 0 {
			if r.Class == "" {
				r.Class = "default"
			}
			byClass[r.Class] = append(byClass[r.Class], r)
		}
	}
	for _, rs := range byClass {
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].Lag < rs[j].Lag })
	}
	avail := int64(math.Floor(b.Tokens))
	// Water-filling over the classes: each round of it shares what is left by weight among
	// the classes still asking; a class that needs less than its share returns the rest.
	need := map[string]int64{}
	for c, rs := range byClass {
		for _, r := range rs {
			need[c] += capped(r.Amount, cfg.MaxGrant)
		}
	}
	share := map[string]int64{}
	for avail > 0 {
		var total float64
		for c, n := range need {
			if n > share[c] {
				total += weight(cfg, c)
			}
		}
		if total == 0 {
			break
		}
		given := int64(0)
		classes := sortedClasses(need)
		for _, c := range classes {
			if need[c] <= share[c] {
				continue
			}
			s := int64(math.Floor(float64(avail) * weight(cfg, c) / total))
			s = min(s, need[c]-share[c])
			share[c] += s
			given += s
		}
		if given == 0 { // shares rounded to zero: hand out single units, heaviest class first
			sort.SliceStable(classes, func(i, j int) bool { return weight(cfg, classes[i]) > weight(cfg, classes[j]) })
			for _, c := range classes {
				if avail-given > 0 && need[c] > share[c] {
					share[c]++
					given++
				}
			}
		}
		avail -= given
	}
	for c, rs := range byClass {
		left := share[c]
		for _, r := range rs {
			if left <= 0 {
				break
			}
			g := min(capped(r.Amount, cfg.MaxGrant), left)
			grants[r.Job] += g
			left -= g
			b.Granted += g
			b.Tokens -= float64(g)
		}
	}
	return grants
}

func capped(n, limit int64) int64 {
	if limit > 0 {
		return min(n, limit)
	}
	return n
}

func weight(cfg Config, class string) float64 {
	if w, ok := cfg.Weights[class]; ok && w > 0 {
		return w
	}
	return 1
}

func sortedClasses(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for c := range m {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}
