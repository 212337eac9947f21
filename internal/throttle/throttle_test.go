package throttle

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

// TestRoundGrants checks grants against hand-computed values, with the clock injected: a
// bucket of 100 per 10 s starts empty, gains 50 in 5 s and never holds more than 100; classes
// share by weight (3:1) and pass on what they do not need; within a class the most lagging
// request goes first; max_grant_amount caps each grant.
func TestRoundGrants(t *testing.T) {
	cfg := Config{Limit: 100, Period: 10 * time.Second, Weights: map[string]float64{"batch": 1, "online": 3}}
	b := &Bucket{}
	if g := b.Round(cfg, t0, []Request{{Job: "a", Amount: 10}}); len(g) != 0 {
		t.Fatalf("the first round starts the clock with an empty bucket: granted %v", g)
	}
	// 5 s: 50 tokens. online (weight 3) gets 37, batch (1) 12; the unit left over by rounding
	// goes to the heavier class.
	g := b.Round(cfg, t0.Add(5*time.Second), []Request{
		{Job: "o1", Class: "online", Amount: 100, Lag: 20},
		{Job: "o2", Class: "online", Amount: 100, Lag: 10},
		{Job: "b1", Class: "batch", Amount: 100, Lag: 1},
	})
	if want := map[string]int64{"o2": 38, "b1": 12}; !reflect.DeepEqual(g, want) {
		t.Errorf("5 s, two classes 3:1: %v, want %v (o2 lags most in online)", g, want)
	}
	if b.Granted != 50 || b.Tokens != 0 || b.Periods != 0.5 {
		t.Errorf("bucket %+v, want 50 granted, none left, half a period", b)
	}
	// A class that needs less passes the rest on: 30 s later the bucket is full at 100
	// (not 300); batch needs 5, online takes the other 95.
	g = b.Round(cfg, t0.Add(35*time.Second), []Request{
		{Job: "o1", Class: "online", Amount: 1000, Lag: 20},
		{Job: "b1", Class: "batch", Amount: 5},
	})
	if want := map[string]int64{"o1": 95, "b1": 5}; !reflect.DeepEqual(g, want) {
		t.Errorf("full bucket: %v, want %v", g, want)
	}
	// max_grant_amount caps each request; what is not granted stays in the bucket.
	capped := Config{Limit: 100, Period: time.Second, MaxGrant: 7}
	c := &Bucket{}
	c.Round(capped, t0, nil)
	g = c.Round(capped, t0.Add(time.Second), []Request{{Job: "x", Amount: 50}, {Job: "y", Amount: 3}})
	if want := map[string]int64{"x": 7, "y": 3}; !reflect.DeepEqual(g, want) || c.Tokens != 90 {
		t.Errorf("capped: %v (tokens %v), want %v and 90 left", g, c.Tokens, want)
	}
	// A clock going back refills nothing.
	before := c.Tokens
	c.Round(capped, t0, nil)
	if c.Tokens != before {
		t.Errorf("a clock going back changed the tokens: %v → %v", before, c.Tokens)
	}
}

// TestRoundUnlimited: a throttler without a limit grants every request in full (capped by
// max_grant_amount).
func TestRoundUnlimited(t *testing.T) {
	b := &Bucket{}
	g := b.Round(Config{Period: time.Second}, t0, []Request{{Job: "a", Amount: 1 << 40}, {Job: "b", Amount: 0}})
	if want := map[string]int64{"a": 1 << 40}; !reflect.DeepEqual(g, want) {
		t.Errorf("unlimited: %v, want %v", g, want)
	}
}

// TestRoundNeverGrantsMoreThanRefilled: over random rounds, requests and classes (seeded), the
// total granted never exceeds limit × the periods elapsed, and a bucket resumed from published
// totals keeps it.
func TestRoundNeverGrantsMoreThanRefilled(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 1))
		cfg := Config{Limit: float64(1 + rng.IntN(1000)), Period: time.Duration(1+rng.IntN(10)) * time.Second,
			MaxGrant: int64(rng.IntN(50)), Weights: map[string]float64{"a": 1 + rng.Float64()*4, "b": 0.5}}
		b := &Bucket{}
		now := t0
		for round := range 100 {
			if round == 50 { // a new leader continues from the published totals
				b = Resume(b.Periods, b.Granted)
			}
			now = now.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
			var reqs []Request
			for j := range rng.IntN(6) {
				reqs = append(reqs, Request{Job: string(rune('p' + j)), Class: []string{"a", "b", "", "c"}[rng.IntN(4)], Amount: int64(rng.IntN(500)), Lag: rng.Uint64()})
			}
			var sum int64
			for _, g := range b.Round(cfg, now, reqs) {
				sum += g
			}
			if float64(b.Granted) > cfg.Limit*b.Periods+1e-6 {
				t.Fatalf("seed %d round %d: granted %d > limit %v × periods %v", seed, round, b.Granted, cfg.Limit, b.Periods)
			}
			var asked int64
			for _, r := range reqs {
				asked += capped(r.Amount, cfg.MaxGrant)
			}
			if sum > asked {
				t.Fatalf("seed %d round %d: granted %d of %d asked", seed, round, sum, asked)
			}
		}
	}
}
