package controller

import (
	"testing"
	"time"

	"github.com/ytflow/yt-flow/internal/throttle"
	"github.com/ytflow/yt-flow/ytstore"
)

// TestThrottleRoundPerThrottler: one round on an injected clock serves every throttler a job
// asks: the input rows throttler through job_status.throttle_requested (a job of an older
// version) or throttle_requests, the input bytes throttler and a throttler asked for quota,
// each job up to what it asked less what it was granted. Over rounds 1 s apart nothing is
// granted beyond limit × periods, grants are kept per throttler and job (the rows' also in
// Jobs), the most lagging job of a class goes first, and a job gone from the layout loses its
// grants.
func TestThrottleRoundPerThrottler(t *testing.T) {
	top := Topology{
		Computations: []Computation{
			{ID: "count", RowsThrottler: "rows", BytesThrottler: "bytes", BytesThrottlerClass: "bulk"},
			{ID: "old", RowsThrottler: "rows"},
		},
		Throttlers: map[string]throttle.Config{
			"rows":  {Limit: 100, Period: time.Second},
			"bytes": {Limit: 1000, Period: time.Second, Weights: map[string]float64{"bulk": 2}},
			"quota": {Limit: 10, Period: time.Second},
		},
	}
	in := &Input{
		Topology: top,
		Partitions: []ytstore.Partition{
			{PartitionID: "count/0", ComputationID: "count"}, {PartitionID: "count/1", ComputationID: "count"}, {PartitionID: "old/0", ComputationID: "old"},
		},
		Jobs: []ytstore.Job{{JobID: "a", PartitionID: "count/0"}, {JobID: "b", PartitionID: "count/1"}, {JobID: "o", PartitionID: "old/0"}},
		Statuses: []ytstore.JobStatus{
			{JobID: "a", SystemWatermark: 500, ThrottleRequested: 60, ThrottleRequests: map[string]int64{"rows": 60, "bytes": 5000, "quota": 8, "gone": 7}},
			{JobID: "b", SystemWatermark: 100, ThrottleRequested: 60, ThrottleRequests: map[string]int64{"rows": 60, "bytes": 300}},
			{JobID: "o", SystemWatermark: 300, ThrottleRequested: 30}, // no throttle_requests: an older worker
		},
	}
	reqs, live := throttleRequests(in, &ytstore.ThrottlerGrants{})
	if len(reqs["gone"]) != 0 || len(reqs["rows"]) != 3 || len(reqs["bytes"]) != 2 || len(reqs["quota"]) != 1 || !live["o"] {
		t.Fatalf("requests %+v", reqs)
	}
	for _, r := range reqs["bytes"] {
		if r.Class != "bulk" {
			t.Errorf("bytes request %+v: want class bulk", r)
		}
	}

	th := &throttles{buckets: map[string]*throttle.Bucket{}, grants: ytstore.ThrottlerGrants{}.Clone()}
	now := time.Unix(1000, 0)
	if !th.round(in, now) { // starts the clocks: the buckets are empty
		t.Error("the first round publishes the totals")
	}
	if got := th.grants.Throttlers["rows"].Granted; got != 0 {
		t.Errorf("the first round granted %d rows from an empty bucket", got)
	}
	now = now.Add(time.Second)
	th.round(in, now)
	g := th.grants
	// 100 rows for 150 asked: the most lagging first (b 100, o 300, a 500).
	if g.ByThrottler["rows"]["b"] != 60 || g.ByThrottler["rows"]["o"] != 30 || g.ByThrottler["rows"]["a"] != 10 {
		t.Errorf("rows granted %v, want b 60, o 30, a 10 (by lag)", g.ByThrottler["rows"])
	}
	if g.Jobs["o"] != 30 || g.Jobs["a"] != 10 {
		t.Errorf("rows' grants in Jobs %v", g.Jobs)
	}
	if g.ByThrottler["quota"]["a"] != 8 || g.ByThrottler["bytes"]["b"]+g.ByThrottler["bytes"]["a"] != 1000 || g.ByThrottler["bytes"]["b"] != 300 {
		t.Errorf("quota %v, bytes %v", g.ByThrottler["quota"], g.ByThrottler["bytes"])
	}
	for round := 0; round < 5; round++ {
		now = now.Add(time.Second)
		th.round(in, now)
		for id, cfg := range top.Throttlers {
			tot := th.grants.Throttlers[id]
			if float64(tot.Granted) > cfg.Limit*tot.Periods+1e-9 {
				t.Errorf("round %d: %s granted %d in %.1f periods", round, id, tot.Granted, tot.Periods)
			}
		}
	}
	if a, tot := th.grants.ByThrottler["bytes"]["a"], th.grants.Throttlers["bytes"]; a != 5000 || tot.Pending != 0 {
		t.Errorf("after 6 periods job a has %d bytes (want all 5000 asked), pending %d", a, tot.Pending)
	}
	in.Jobs = in.Jobs[:2]
	th.round(in, now.Add(time.Second))
	if _, ok := th.grants.ByThrottler["rows"]["o"]; ok || th.grants.Jobs["o"] != 0 {
		t.Errorf("job o left the layout and keeps grants: %v %v", th.grants.ByThrottler["rows"], th.grants.Jobs)
	}
}
