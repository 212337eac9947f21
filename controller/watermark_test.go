package controller

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/ytflow/yt-flow/ytstore"
)

func TestWatermarkBound(t *testing.T) {
	parts := []ytstore.Partition{{PartitionID: "a"}, {PartitionID: "b"}}
	jobs := []ytstore.Job{{JobID: "ja", PartitionID: "a"}, {JobID: "jb", PartitionID: "b"}}
	running := func(job string, updated, wm uint64, inFlight int64) ytstore.JobStatus {
		return ytstore.JobStatus{JobID: job, State: ytstore.JobRunning, UpdatedAt: updated, SystemWatermark: wm, InFlight: inFlight}
	}
	cases := []struct {
		name     string
		parts    []ytstore.Partition
		jobs     []ytstore.Job
		statuses []ytstore.JobStatus
		want     uint64
		ok       bool
	}{
		{"min of reported watermarks", parts, jobs, []ytstore.JobStatus{running("ja", 100, 40, 3), running("jb", 100, 70, 1)}, 40, true},
		{"idle job bounded by its status time", parts, jobs, []ytstore.JobStatus{running("ja", 30, 0, 0), running("jb", 100, 70, 1)}, 30, true},
		{"watermark capped by status time", parts, jobs, []ytstore.JobStatus{running("ja", 50, 90, 1), running("jb", 100, 70, 1)}, 50, true},
		{"completed source counts", parts, jobs, []ytstore.JobStatus{{JobID: "ja", State: ytstore.JobCompleted, UpdatedAt: 80}, running("jb", 100, 70, 1)}, 70, true},
		{"job without status waits", parts, jobs, []ytstore.JobStatus{running("ja", 100, 40, 3)}, 0, false},
		{"partition without job waits", parts, jobs[:1], []ytstore.JobStatus{running("ja", 100, 40, 3)}, 0, false},
		{"failed job waits", parts, jobs, []ytstore.JobStatus{{JobID: "ja", State: ytstore.JobFailed, UpdatedAt: 100}, running("jb", 100, 70, 1)}, 0, false},
		{"in flight without watermark waits", parts, jobs, []ytstore.JobStatus{running("ja", 100, 0, 2), running("jb", 100, 70, 1)}, 0, false},
		{"status never written waits", parts, jobs, []ytstore.JobStatus{running("ja", 0, 0, 0), running("jb", 100, 70, 1)}, 0, false},
		{"no partitions waits", nil, nil, nil, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, ok := watermarkBound(c.parts, c.jobs, c.statuses)
			if w != c.want || ok != c.ok {
				t.Fatalf("watermarkBound = %d, %v; want %d, %v", w, ok, c.want, c.ok)
			}
		})
	}
}

func TestWatermarkTracker(t *testing.T) {
	parts := []ytstore.Partition{{PartitionID: "a"}, {PartitionID: "b"}}
	jobs := []ytstore.Job{{JobID: "ja", PartitionID: "a"}, {JobID: "jb", PartitionID: "b"}}
	obs := func(ua, wa, ub, wb uint64) []ytstore.JobStatus {
		return []ytstore.JobStatus{
			{JobID: "ja", State: ytstore.JobRunning, UpdatedAt: ua, SystemWatermark: wa, InFlight: 1},
			{JobID: "jb", State: ytstore.JobRunning, UpdatedAt: ub, SystemWatermark: wb, InFlight: 1},
		}
	}
	tr := NewWatermarkTracker(50)
	steps := []struct {
		name     string
		statuses []ytstore.JobStatus
		want     uint64
		advanced bool
	}{
		{"first bound only pending", obs(100, 80, 100, 90), 50, false},
		{"jb has not reported again", obs(110, 95, 100, 90), 50, false},
		{"both reported again: min of both bounds", obs(120, 85, 130, 99), 80, true},
		{"a late copy lowers the bound, the pending one is used", obs(140, 70, 140, 99), 80, false},
		{"never decreases", obs(150, 60, 150, 60), 80, false},
		{"advances again", obs(160, 160, 170, 170), 80, false},
		{"advances to the min of the last two bounds", obs(180, 175, 190, 200), 160, true},
		{"missing status: no change", obs(200, 190, 200, 190)[:1], 160, false},
	}
	for _, s := range steps {
		w, adv := tr.Observe(parts, jobs, s.statuses)
		if w != s.want || adv != s.advanced || tr.Value() != w {
			t.Fatalf("%s: Observe = %d, %v (Value %d); want %d, %v", s.name, w, adv, tr.Value(), s.want, s.advanced)
		}
	}
}

// TestSystemWatermarkSimulation models a three-stage chain of jobs (sources,
// then two keyed stages) that exchange messages as the runtime protocol says
// — a receiver holds a message from delivery until its epoch commits, a
// sender holds it until an epoch after the acknowledgement deleted its outbox
// row, an open epoch holds the system timestamp its outputs will get — with
// stale statuses and job restarts (uncommitted input lost, outbox reloaded,
// status gone until the new job reports). After every controller observation
// it checks that the watermark never decreases and never passes the system
// timestamp of a message any job still holds or an open epoch will produce.
func TestSystemWatermarkSimulation(t *testing.T) {
	for seed := range 200 {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { simulateWatermark(t, uint64(seed)) })
	}
}

var debugWM = false

type wmMessage struct {
	id string
	ts uint64
}

type wmJob struct {
	stage     int
	jobID     string
	inbox     map[string]wmMessage // delivered, not committed
	epochOpen bool
	epochNow  uint64
	epochIn   []wmMessage
	outbox    map[string]wmMessage // committed outputs not yet acknowledged
	acked     map[string]wmMessage // acknowledged, outbox row deleted by the next commit
	from      map[string]*wmJob    // message id -> sender
}

func simulateWatermark(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x3a7e))
	clock := uint64(1_000_000)
	var jobs []*wmJob
	var parts []ytstore.Partition
	for stage := range 3 {
		for i := range 2 {
			pid := fmt.Sprintf("s%d/%d", stage, i)
			parts = append(parts, ytstore.Partition{PartitionID: pid})
			jobs = append(jobs, &wmJob{stage: stage, jobID: pid + "#0", inbox: map[string]wmMessage{}, outbox: map[string]wmMessage{}, acked: map[string]wmMessage{}, from: map[string]*wmJob{}})
		}
	}
	statuses := map[string]ytstore.JobStatus{}
	restarts, seq := 0, 0
	tr := &WatermarkTracker{}
	prev := uint64(0)
	advanced := 0
	for step := range 3000 {
		clock += uint64(rng.IntN(4))
		j := jobs[rng.IntN(len(jobs))]
		act := rng.IntN(7)
		if debugWM {
			t.Logf("step %d clock %d job %s act %d inbox=%v epoch=%v/%d/%v outbox=%v acked=%v", step, clock, j.jobID, act, j.inbox, j.epochOpen, j.epochNow, j.epochIn, j.outbox, j.acked)
		}
		switch act {
		case 0: // begin an epoch
			if !j.epochOpen {
				j.epochOpen, j.epochNow = true, clock
				for id, m := range j.inbox {
					j.epochIn = append(j.epochIn, m)
					delete(j.inbox, id)
				}
				if j.stage == 0 {
					for range rng.IntN(3) {
						seq++
						j.epochIn = append(j.epochIn, wmMessage{id: fmt.Sprintf("src%d", seq), ts: j.epochNow})
					}
				}
			}
		case 1: // commit the open epoch: outputs, acknowledgements, outbox deletions
			if !j.epochOpen {
				continue
			}
			for id := range j.acked {
				delete(j.acked, id)
			}
			for _, in := range j.epochIn {
				seq++
				out := wmMessage{id: fmt.Sprintf("m%d", seq), ts: j.epochNow}
				j.outbox[out.id] = out
				if s := j.from[in.id]; s != nil {
					if m, ok := s.outbox[in.id]; ok {
						delete(s.outbox, in.id)
						s.acked[in.id] = m
					}
					delete(j.from, in.id)
				}
			}
			j.epochOpen, j.epochIn = false, nil
		case 2: // deliver an outbox message downstream (or to the sink)
			for _, id := range sortedKeys(j.outbox) {
				m := j.outbox[id]
				if j.stage == 2 {
					delete(j.outbox, id)
					j.acked[id] = m
					break
				}
				r := jobs[(j.stage+1)*2+len(id)%2] // routing is a function of the message
				if _, dup := r.inbox[id]; !dup {
					r.inbox[id] = m
					r.from[id] = j
				}
				break
			}
		case 3, 4: // report status
			st := ytstore.JobStatus{JobID: j.jobID, State: ytstore.JobRunning, UpdatedAt: clock}
			for _, set := range []map[string]wmMessage{j.inbox, j.outbox, j.acked} {
				for _, m := range set {
					st.InFlight++
					if st.SystemWatermark == 0 || m.ts < st.SystemWatermark {
						st.SystemWatermark = m.ts
					}
				}
			}
			for _, m := range j.epochIn {
				st.InFlight++
				if st.SystemWatermark == 0 || m.ts < st.SystemWatermark {
					st.SystemWatermark = m.ts
				}
			}
			if j.epochOpen && (st.SystemWatermark == 0 || j.epochNow < st.SystemWatermark) {
				st.SystemWatermark = j.epochNow
			}
			statuses[j.jobID] = st
		case 5: // restart: uncommitted input lost, acknowledged rows not yet deleted come back
			if rng.IntN(4) != 0 {
				continue
			}
			delete(statuses, j.jobID)
			restarts++
			j.jobID = fmt.Sprintf("%s#%d", j.jobID[:4], restarts)
			j.inbox, j.epochOpen, j.epochIn = map[string]wmMessage{}, false, nil
			for id, m := range j.acked {
				if j.stage < 2 || rng.IntN(2) == 0 {
					j.outbox[id] = m
				}
			}
			j.acked = map[string]wmMessage{}
			j.from = map[string]*wmJob{}
		case 6: // the controller observes
			var js []ytstore.Job
			var sts []ytstore.JobStatus
			for _, x := range jobs {
				js = append(js, ytstore.Job{JobID: x.jobID, PartitionID: x.jobID[:4]})
			}
			for _, id := range sortedKeys(statuses) {
				sts = append(sts, statuses[id])
			}
			w, ok := tr.Observe(parts, js, sts)
			if debugWM {
				held, what := lowestHeld(jobs)
				t.Logf("observe: w=%d ok=%v held=%d %s statuses=%v", w, ok, held, what, sts)
			}
			if w < prev {
				t.Fatalf("step %d: watermark went back from %d to %d", step, prev, w)
			}
			if ok != (w > prev) {
				t.Fatalf("step %d: advanced=%v but watermark %d -> %d", step, ok, prev, w)
			}
			if ok {
				advanced++
			}
			if held, what := lowestHeld(jobs); held != 0 && w > held {
				t.Fatalf("step %d: watermark %d passes %s with system timestamp %d", step, w, what, held)
			}
			if w > clock {
				t.Fatalf("step %d: watermark %d is ahead of the clock %d", step, w, clock)
			}
			prev = w
		}
	}
	if advanced == 0 {
		t.Fatalf("the watermark never advanced")
	}
}

func lowestHeld(jobs []*wmJob) (uint64, string) {
	var low uint64
	var what []string
	note := func(ts uint64, desc string) {
		if low == 0 || ts < low {
			low, what = ts, nil
		}
		if ts == low {
			what = append(what, desc)
		}
	}
	for _, j := range jobs {
		for _, set := range []map[string]wmMessage{j.inbox, j.outbox, j.acked} {
			for _, m := range set {
				note(m.ts, "message "+m.id+" held by "+j.jobID)
			}
		}
		for _, m := range j.epochIn {
			note(m.ts, "message "+m.id+" in the open epoch of "+j.jobID)
		}
		if j.epochOpen {
			note(j.epochNow, "the open epoch of "+j.jobID)
		}
	}
	sort.Strings(what)
	if len(what) == 0 {
		return 0, ""
	}
	return low, what[0]
}

// FuzzSystemWatermarkSimulation runs the watermark simulation on fuzzed seeds.
func FuzzSystemWatermarkSimulation(f *testing.F) {
	for _, s := range []uint64{0, 27, 38, 69, 183} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, seed uint64) { simulateWatermark(t, seed) })
}

// TestEventWatermarkBound: the EventWatermark bound of one observation is the smallest event
// bound a job reports (0 = none), +inf when no job bounds it, and none at all while a
// partition lacks a job or a job its running status; the tracker applies the two-observation
// rule and never goes back.
func TestEventWatermarkBound(t *testing.T) {
	parts := []ytstore.Partition{{PartitionID: "src"}, {PartitionID: "keyed"}}
	jobs := []ytstore.Job{{JobID: "js", PartitionID: "src"}, {JobID: "jk", PartitionID: "keyed"}}
	st := func(id string, updated, ew uint64) ytstore.JobStatus {
		return ytstore.JobStatus{JobID: id, State: ytstore.JobRunning, UpdatedAt: updated, EventWatermark: ytstore.OptionalUint64(ew)}
	}
	cases := []struct {
		name     string
		parts    []ytstore.Partition
		statuses []ytstore.JobStatus
		want     uint64
		ok       bool
	}{
		{"source estimate bounds it", parts, []ytstore.JobStatus{st("js", 1, 500), st("jk", 1, 0)}, 500, true},
		{"a held message holds it back", parts, []ytstore.JobStatus{st("js", 1, 500), st("jk", 1, 300)}, 300, true},
		{"nothing bounds it: every source exhausted, nothing held", parts, []ytstore.JobStatus{st("js", 1, 0), st("jk", 1, 0)}, math.MaxUint64, true},
		{"a job without status gives no bound", parts, []ytstore.JobStatus{st("js", 1, 500)}, 0, false},
		{"a failed job gives no bound", parts, []ytstore.JobStatus{st("js", 1, 500), {JobID: "jk", State: ytstore.JobFailed, UpdatedAt: 1}}, 0, false},
		{"a partition without a job gives no bound", append(parts, ytstore.Partition{PartitionID: "other"}), []ytstore.JobStatus{st("js", 1, 500), st("jk", 1, 0)}, 0, false},
	}
	for _, c := range cases {
		got, ok := EventWatermarkBound(c.parts, jobs, c.statuses)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: EventWatermarkBound = %d, %v; want %d, %v", c.name, got, ok, c.want, c.ok)
		}
	}

	tr := NewEventWatermarkTracker(100, Topology{})
	steps := []struct {
		statuses []ytstore.JobStatus
		want     uint64
	}{
		{[]ytstore.JobStatus{st("js", 10, 500), st("jk", 10, 0)}, 100},   // pending
		{[]ytstore.JobStatus{st("js", 20, 600), st("jk", 20, 400)}, 400}, // min of both bounds
		{[]ytstore.JobStatus{st("js", 30, 200), st("jk", 30, 0)}, 400},   // never back
		{[]ytstore.JobStatus{st("js", 40, 0), st("jk", 40, 0)}, 400},     // min(200, +inf) = 200: still 400
		{[]ytstore.JobStatus{st("js", 50, 0), st("jk", 50, 0)}, math.MaxUint64},
	}
	for i, s := range steps {
		if w, _ := tr.Observe(parts, jobs, s.statuses); w != s.want {
			t.Fatalf("step %d: Observe = %d, want %d", i, w, s.want)
		}
	}
}

// TestEventWatermarkIdlePartitions: with an idle_partitions rule, a source job that has been
// idle for the rule's duration (by its own clock) is left out of the EventWatermark, the
// lowest estimates first, up to max_ratio of the computation's jobs and never all of them; a
// job idle for less, a job of a computation without the rule and a job that is not idle count.
func TestEventWatermarkIdlePartitions(t *testing.T) {
	const sec = 1_000_000
	rules := map[string]WatermarkRules{"src": {Idle: &IdleRule{Duration: 60 * time.Second, MaxRatio: 0.5}}}
	var parts []ytstore.Partition
	var jobs []ytstore.Job
	for _, id := range []string{"s1", "s2", "s3", "s4", "o1", "k"} {
		comp := map[byte]string{'s': "src", 'o': "other", 'k': "keyed"}[id[0]]
		parts = append(parts, ytstore.Partition{PartitionID: id})
		jobs = append(jobs, ytstore.Job{JobID: id, PartitionID: id, ComputationID: comp})
	}
	st := func(id string, ew, idleSince uint64) ytstore.JobStatus {
		return ytstore.JobStatus{JobID: id, State: ytstore.JobRunning, UpdatedAt: 1000 * sec, EventWatermark: ytstore.OptionalUint64(ew), EventIdleSince: ytstore.OptionalUint64(idleSince)}
	}
	busy := func(id string, ew uint64) ytstore.JobStatus { return st(id, ew, 0) }
	cases := []struct {
		name     string
		statuses []ytstore.JobStatus
		want     uint64
	}{
		{"no idle job", []ytstore.JobStatus{busy("s1", 100), busy("s2", 500), busy("s3", 600), busy("s4", 700), busy("o1", 800), busy("k", 0)}, 100},
		{"an idle job for a minute is left out", []ytstore.JobStatus{st("s1", 100, 900*sec), busy("s2", 500), busy("s3", 600), busy("s4", 700), busy("o1", 800), busy("k", 0)}, 500},
		{"idle for less than the duration counts", []ytstore.JobStatus{st("s1", 100, 950*sec), busy("s2", 500), busy("s3", 600), busy("s4", 700), busy("o1", 800), busy("k", 0)}, 100},
		{"at most max_ratio (2 of 4), the lowest first", []ytstore.JobStatus{st("s1", 100, 900*sec), st("s2", 200, 900*sec), st("s3", 300, 900*sec), busy("s4", 700), busy("o1", 800), busy("k", 0)}, 300},
		{"a held message still counts", []ytstore.JobStatus{st("s1", 100, 900*sec), busy("s2", 500), busy("s3", 600), busy("s4", 700), busy("o1", 800), busy("k", 50)}, 50},
		{"another computation has no rule", []ytstore.JobStatus{busy("s1", 400), busy("s2", 500), busy("s3", 600), busy("s4", 700), st("o1", 100, 900*sec), busy("k", 0)}, 100},
	}
	for _, c := range cases {
		got, ok := eventWatermarkBound(parts, jobs, c.statuses, rules)
		if !ok || got != c.want {
			t.Errorf("%s: bound = %d, %v; want %d", c.name, got, ok, c.want)
		}
	}

	// Never every job of a computation: with max_ratio 1 and both jobs idle, one counts.
	two := []ytstore.Job{{JobID: "a", PartitionID: "a", ComputationID: "src"}, {JobID: "b", PartitionID: "b", ComputationID: "src"}}
	got, ok := eventWatermarkBound([]ytstore.Partition{{PartitionID: "a"}, {PartitionID: "b"}}, two,
		[]ytstore.JobStatus{st("a", 100, 900*sec), st("b", 200, 900*sec)}, map[string]WatermarkRules{"src": {Idle: &IdleRule{Duration: time.Second, MaxRatio: 1}}})
	if !ok || got != 200 {
		t.Errorf("all idle: bound = %d, %v; want 200 (one job always counts)", got, ok)
	}

	// The tracker follows the rules of its topology.
	top := Topology{Computations: []Computation{{ID: "src", Sources: []Source{{ID: "in"}}, IdlePartitions: &IdleRule{Duration: time.Second, MaxRatio: 0.5}}}}
	tr := NewEventWatermarkTracker(0, top)
	obs := []ytstore.JobStatus{st("a", 100, 900*sec), st("b", 200, 0)}
	parts2 := []ytstore.Partition{{PartitionID: "a"}, {PartitionID: "b"}}
	tr.Observe(parts2, two, obs)
	obs[0].UpdatedAt, obs[1].UpdatedAt = 1001*sec, 1001*sec
	if w, _ := tr.Observe(parts2, two, obs); w != 200 {
		t.Errorf("tracker with the rule: %d, want 200", w)
	}
}

// TestEventWatermarkLateDataPartitions: with a late_data_partitions rule a computation's jobs
// bound the EventWatermark by max(their smallest bound, their percentile − delay): a job more
// than delay behind the percentile no longer holds it back, one within delay still does; idle
// jobs are left out first; jobs of other computations still bound it one by one.
func TestEventWatermarkLateDataPartitions(t *testing.T) {
	const sec = 1_000_000
	var parts []ytstore.Partition
	var jobs []ytstore.Job
	for _, id := range []string{"s1", "s2", "s3", "s4", "k"} {
		comp := "src"
		if id == "k" {
			comp = "keyed"
		}
		parts = append(parts, ytstore.Partition{PartitionID: id})
		jobs = append(jobs, ytstore.Job{JobID: id, PartitionID: id, ComputationID: comp})
	}
	st := func(id string, ew, idleSince uint64) ytstore.JobStatus {
		return ytstore.JobStatus{JobID: id, State: ytstore.JobRunning, UpdatedAt: 1000 * sec, EventWatermark: ytstore.OptionalUint64(ew), EventIdleSince: ytstore.OptionalUint64(idleSince)}
	}
	late := func(pct float64, delay time.Duration) map[string]WatermarkRules {
		return map[string]WatermarkRules{"src": {LateData: &LateDataRule{Percentile: pct, Delay: delay}}}
	}
	cases := []struct {
		name     string
		rules    map[string]WatermarkRules
		statuses []ytstore.JobStatus
		want     uint64
	}{
		{"no rule: the laggard holds it", nil, []ytstore.JobStatus{st("s1", 100*sec, 0), st("s2", 500*sec, 0), st("s3", 510*sec, 0), st("s4", 520*sec, 0), st("k", 0, 0)}, 100 * sec},
		{"value 100: the laggard more than the delay behind the most advanced is passed", late(100, 60*time.Second),
			[]ytstore.JobStatus{st("s1", 100*sec, 0), st("s2", 500*sec, 0), st("s3", 510*sec, 0), st("s4", 520*sec, 0), st("k", 0, 0)}, 460 * sec},
		{"within the delay the smallest still holds it", late(100, 60*time.Second),
			[]ytstore.JobStatus{st("s1", 480*sec, 0), st("s2", 500*sec, 0), st("s3", 510*sec, 0), st("s4", 520*sec, 0), st("k", 0, 0)}, 480 * sec},
		{"percentile 50 of four: the second", late(50, 10*time.Second),
			[]ytstore.JobStatus{st("s1", 100*sec, 0), st("s2", 500*sec, 0), st("s3", 510*sec, 0), st("s4", 900*sec, 0), st("k", 0, 0)}, 490 * sec},
		{"a message held downstream still counts", late(100, 60*time.Second),
			[]ytstore.JobStatus{st("s1", 100*sec, 0), st("s2", 500*sec, 0), st("s3", 510*sec, 0), st("s4", 520*sec, 0), st("k", 200*sec, 0)}, 200 * sec},
		{"idle jobs are left out first", map[string]WatermarkRules{"src": {Idle: &IdleRule{Duration: time.Second, MaxRatio: 0.25}, LateData: &LateDataRule{Percentile: 100, Delay: 60 * time.Second}}},
			[]ytstore.JobStatus{st("s1", 100*sec, 0), st("s2", 500*sec, 0), st("s3", 510*sec, 0), st("s4", 900*sec, 10*sec), st("k", 0, 0)}, 450 * sec},
		{"a delay beyond every bound keeps the smallest", late(100, 2000*time.Second),
			[]ytstore.JobStatus{st("s1", 100*sec, 0), st("s2", 500*sec, 0), st("s3", 0, 0), st("s4", 520*sec, 0), st("k", 0, 0)}, 100 * sec},
	}
	for _, c := range cases {
		got, ok := eventWatermarkBound(parts, jobs, c.statuses, c.rules)
		if !ok || got != c.want {
			t.Errorf("%s: bound = %d, %v; want %d", c.name, got, ok, c.want)
		}
	}
}
