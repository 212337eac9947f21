package controller

import (
	"context"
	"testing"
	"time"

	"go.ytsaurus.tech/library/go/core/log/nop"

	"github.com/ytflow/yt-flow/ytstore"
)

// TestPeekPublishesWatermarks: between cycles, in a pipeline that awaits watermarks, the
// leader's status peek folds the statuses into the SystemWatermark and the EventWatermarks
// under the cycle's rules: nothing after one round of statuses, the minimum of two rounds once
// every job reported again, never lower afterwards. A pipeline that awaits none, and a peek
// during a transition, publish nothing between cycles.
func TestPeekPublishesWatermarks(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.worker("w1")
	stop := e.controller("A")
	jobs := e.waitJobs()
	stop()
	sess, err := e.st.StartSession(ctx, "leader", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	base := e.attrs()
	top, err := parseTopology(base)
	if err != nil {
		t.Fatal(err)
	}
	newCycler := func(awaits bool) *cycler {
		top := top
		top.AwaitsWatermarks = awaits
		return &cycler{st: e.st, sess: sess, lg: (&nop.Logger{}).Structured(), topology: top, attrs: e.attrs(),
			wm: NewWatermarkTracker(base.SystemWatermark), completedJobs: map[string]bool{}, layoutJobs: map[string]bool{}}
	}
	at := ytstore.Now()
	// report writes a round of statuses, each a second after the last: the SystemWatermark of
	// a pipeline on the fast path takes rounds at least systemWatermarkSpan apart.
	report := func(sys, ev uint64) {
		t.Helper()
		at += 1_000_000
		for _, j := range jobs {
			st := ytstore.JobStatus{JobID: j.JobID, WorkerID: j.WorkerID, State: ytstore.JobRunning, UpdatedAt: at,
				SystemWatermark: sys, InFlight: 1, EventWatermark: ytstore.OptionalUint64(ev)}
			if err := e.st.PutJobStatus(ctx, st, ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	published := func() (sys, ev uint64) {
		a := e.attrs()
		if a.EventWatermark != nil {
			ev = *a.EventWatermark
		}
		return a.SystemWatermark, ev
	}

	off := newCycler(false)
	report(1000, 5000)
	off.peekStatuses(ctx, false)
	report(2000, 6000)
	off.peekStatuses(ctx, false)
	if sys, ev := published(); sys != base.SystemWatermark || ev != 0 {
		t.Fatalf("a pipeline awaiting no watermark got system %d, event %d published between cycles", sys, ev)
	}

	c := newCycler(true)
	c.transition = true
	c.peekStatuses(ctx, false)
	report(3000, 7000)
	c.peekStatuses(ctx, false)
	if sys, ev := published(); sys != base.SystemWatermark || ev != 0 {
		t.Fatalf("a peek during a transition published system %d, event %d", sys, ev)
	}
	c.transition = false
	c.peekStatuses(ctx, false) // the first observation: round 3
	if sys, ev := published(); sys != base.SystemWatermark || ev != 0 {
		t.Fatalf("one observation published system %d, event %d", sys, ev)
	}
	c.peekStatuses(ctx, false) // no job reported again: still nothing
	if sys, ev := published(); sys != base.SystemWatermark || ev != 0 {
		t.Fatalf("an observation without newer statuses published system %d, event %d", sys, ev)
	}
	report(4000, 8000)
	c.peekStatuses(ctx, false)
	if sys, ev := published(); sys != 3000 || ev != 7000 {
		t.Fatalf("after two rounds: system %d, event %d published; want the first round's 3000, 7000", sys, ev)
	}
	if a := e.attrs(); a.EventWatermarks == nil || a.EventWatermarks.Streams["x"] != 7000 {
		t.Fatalf("@event_watermarks after two rounds = %+v; want stream x at 7000", a.EventWatermarks)
	}
	report(3500, 6500) // a job reports older messages: nothing goes back
	c.peekStatuses(ctx, false)
	if sys, ev := published(); sys != 3500 || ev != 7000 {
		t.Fatalf("after a lower round: system %d, event %d; want 3500 (min of 4000 and 3500), 7000 (kept)", sys, ev)
	}
	report(9000, 9000)
	c.peekStatuses(ctx, false)
	at -= 800_000 // the next round 200 ms after this one
	report(9500, 9500)
	c.peekStatuses(ctx, false)
	if sys, ev := published(); sys != 3500 || ev != 9000 {
		t.Fatalf("rounds 200 ms apart: system %d, event %d; want 3500 (kept: its rounds are at least %v apart), 9000", sys, ev, systemWatermarkSpan)
	}
}

// BenchmarkPeekWatermarks measures one status peek of a pipeline that awaits watermarks (the
// statuses, partitions and jobs read, the folds, and a publication each time: every job reports
// a higher bound before each peek) against in-process ytlocal: what the fast path adds at
// every fifth of the controller's period, besides the cycles.
func BenchmarkPeekWatermarks(b *testing.B) {
	ctx := context.Background()
	c, st := steadyCycler(b)
	c.topology.AwaitsWatermarks = true
	jobs, err := st.Jobs(ctx)
	if err != nil {
		b.Fatal(err)
	}
	now := ytstore.Now()
	var round uint64
	before, _ := st.Attributes(ctx)
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		round++
		for _, j := range jobs {
			s := ytstore.JobStatus{JobID: j.JobID, WorkerID: j.WorkerID, State: ytstore.JobRunning, UpdatedAt: now + round,
				SystemWatermark: 1000 + round, InFlight: 1, EventWatermark: ytstore.OptionalUint64(5000 + round)}
			if err := st.PutJobStatus(ctx, s, ""); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		c.peekStatuses(ctx, false)
	}
	b.StopTimer()
	// The event watermark is published at every peek; the SystemWatermark keeps its rounds
	// at least systemWatermarkSpan apart, longer than this loop's statuses are apart.
	a, err := st.Attributes(ctx)
	grew := err == nil && a.EventWatermark != nil && (before.EventWatermark == nil || *a.EventWatermark > *before.EventWatermark)
	if round > 2 && !grew {
		b.Fatalf("no event watermark published by %d peeks: before %v, after %v, %v", round, before.EventWatermark, a.EventWatermark, err)
	}
}

// TestWatermarkTrackerMinSpan: with MinSpan the second observation needs every job's status at
// least that much newer than in the first; statuses newer by less are not a second round (the
// pending bound stays), so frequent statuses do not shorten what the second look covers.
func TestWatermarkTrackerMinSpan(t *testing.T) {
	parts := []ytstore.Partition{{PartitionID: "a"}, {PartitionID: "b"}}
	jobs := []ytstore.Job{{JobID: "ja", PartitionID: "a"}, {JobID: "jb", PartitionID: "b"}}
	obs := func(ua, wa, ub, wb uint64) []ytstore.JobStatus {
		return []ytstore.JobStatus{
			{JobID: "ja", State: ytstore.JobRunning, UpdatedAt: ua, SystemWatermark: wa, InFlight: 1},
			{JobID: "jb", State: ytstore.JobRunning, UpdatedAt: ub, SystemWatermark: wb, InFlight: 1},
		}
	}
	tr := NewWatermarkTracker(0)
	tr.MinSpan = 1000
	for _, s := range []struct {
		name     string
		statuses []ytstore.JobStatus
		want     uint64
		advanced bool
	}{
		{"first round pending", obs(10_000, 500, 10_000, 600), 0, false},
		{"newer by 200: not a second round", obs(10_200, 700, 10_200, 800), 0, false},
		{"ja 1000 newer, jb 999: not yet", obs(11_000, 700, 10_999, 800), 0, false},
		{"both 1000 newer: min of the pending and this round", obs(11_000, 900, 11_000, 950), 500, true},
		{"the new pending is 11000's round", obs(11_500, 2000, 11_500, 2000), 500, false},
		{"1000 after it", obs(12_000, 3000, 12_000, 3000), 900, true},
	} {
		w, adv := tr.Observe(parts, jobs, s.statuses)
		if w != s.want || adv != s.advanced {
			t.Fatalf("%s: Observe = %d, %v; want %d, %v", s.name, w, adv, s.want, s.advanced)
		}
	}
}
