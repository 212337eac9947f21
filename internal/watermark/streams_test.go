package watermark

import (
	"math"
	"testing"
)

func src(id, comp, stream string, bound, idleFor uint64) Partition {
	return Partition{ID: id, Computation: comp, Source: stream, Reporting: true, Bound: bound, IdleFor: idleFor}
}

// TestStreamWatermarks applies the per-stream rules to one source stream of five partitions,
// against hand-computed values.
func TestStreamWatermarks(t *testing.T) {
	five := func(idle1, idle2 uint64) []Partition {
		return []Partition{
			src("p1", "read", "in", 100, idle1),
			src("p2", "read", "in", 200, idle2),
			src("p3", "read", "in", 1000, 0),
			src("p4", "read", "in", 1010, 0),
			src("p5", "read", "in", 1020, 0),
		}
	}
	for _, c := range []struct {
		name      string
		node      Node
		parts     []Partition
		want      uint64
		holder    string
		reason    Reason
		idle, lte int
	}{
		{"no rules: the smallest", Node{}, five(0, 0), 100, "p1", ReasonSlowest, 0, 0},
		{"idle for less than duration counts", Node{Idle: &IdleRule{Duration: 60, MaxRatio: 0.4}}, five(59, 0), 100, "p1", ReasonSlowest, 0, 0},
		// max_ratio 0.4 of 5 partitions: 2 may be left out.
		{"two idle, ratio allows two", Node{Idle: &IdleRule{Duration: 60, MaxRatio: 0.4}}, five(60, 600), 1000, "p3", ReasonSlowest, 2, 0},
		// max_ratio 0.2 of 5: 1, the lowest idle one (p1) goes, p2 holds as idle.
		{"two idle, ratio allows one", Node{Idle: &IdleRule{Duration: 60, MaxRatio: 0.2}}, five(60, 600), 200, "p2", ReasonIdle, 1, 0},
		// percentile 100 of {100,200,1000,1010,1020} is 1020; − 50 = 970 > 100.
		{"late data: max(min, p100 − delay)", Node{Late: &LateRule{Percentile: 100, Delay: 50}}, five(0, 0), 970, "p5", ReasonLate, 0, 2},
		// 60th percentile: rank ceil(3) = 1000; − 2000 is below 0: the smallest.
		{"late data with a delay covering the spread", Node{Late: &LateRule{Percentile: 60, Delay: 2000}}, five(0, 0), 100, "p1", ReasonSlowest, 0, 0},
		// idle first (p1, p2 out), then the late rule over {1000,1010,1020}: p50 rank 2 = 1010 − 5.
		{"idle, then late data", Node{Idle: &IdleRule{Duration: 1, MaxRatio: 0.4}, Late: &LateRule{Percentile: 50, Delay: 5}}, five(1, 1), 1005, "p4", ReasonLate, 2, 1},
		{"one always counts", Node{Idle: &IdleRule{Duration: 1, MaxRatio: 1}}, []Partition{src("p1", "read", "in", 7, 5)}, 7, "p1", ReasonIdle, 0, 0},
		{"unavailable", Node{}, append(five(0, 0), Partition{ID: "p6", Computation: "read", Source: "in"}), 0, "p6", ReasonUnavailable, 0, 0},
		{"no bound: unbounded", Node{}, []Partition{src("p1", "read", "in", 0, 0)}, math.MaxUint64, "", "", 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := c.node
			n.ID, n.Sources, n.Outputs = "read", []string{"in"}, []string{"out"}
			st := Streams(Graph{Computations: []Node{n}}, c.parts)
			s := st.Streams["in"]
			if s.Watermark != c.want || s.Partition != c.holder || s.Reason != c.reason || s.Idle != c.idle || s.Late != c.lte {
				t.Fatalf("in = %+v, want watermark %d held by %q (%s), %d idle, %d late", s, c.want, c.holder, c.reason, c.idle, c.lte)
			}
			if o := st.Streams["out"]; o != s {
				t.Fatalf("out = %+v, want the source stream's %+v (nothing held)", o, s)
			}
		})
	}
}

// TestStreamWatermarksPropagate checks the propagation along a graph: two sources with their
// own rules, a join over both, a branch over one, and alignment groups.
func TestStreamWatermarksPropagate(t *testing.T) {
	g := Graph{Computations: []Node{
		{ID: "clicks", Sources: []string{"click_src"}, Outputs: []string{"clicks"}, Group: "g", DriftBound: 100},
		{ID: "views", Sources: []string{"view_src"}, Outputs: []string{"views"}, Group: "g", DriftBound: 100},
		{ID: "other", Sources: []string{"other_src"}, Outputs: []string{"others"}, Group: "h", DriftBound: 100},
		{ID: "join", Inputs: []string{"clicks", "views"}, Outputs: []string{"joined"}},
		{ID: "count", Inputs: []string{"joined"}, Outputs: []string{"counts"}},
		{ID: "views_only", Inputs: []string{"views"}, Outputs: []string{"view_counts"}},
	}}
	parts := []Partition{
		src("c0", "clicks", "click_src", 5000, 0),
		src("c1", "clicks", "click_src", 5200, 0),
		src("v0", "views", "view_src", 1000, 0),
		src("o0", "other", "other_src", 9000, 0),
		{ID: "j0", Computation: "join", Reporting: true, Bound: 4000}, // holds a click at 4000
		{ID: "j1", Computation: "join", Reporting: true},
		{ID: "k0", Computation: "count", Reporting: true, Bound: 800}, // holds a message at 800
		{ID: "w0", Computation: "views_only", Reporting: true},
	}
	st := Streams(g, parts)
	want := map[string]struct {
		w      uint64
		holder string
		reason Reason
	}{
		"click_src":   {5000, "c0", ReasonAlignment}, // 5000 − 1000 > drift 100: c0 waits for v0
		"clicks":      {5000, "c0", ReasonAlignment},
		"view_src":    {1000, "v0", ReasonSlowest},
		"views":       {1000, "v0", ReasonSlowest},
		"joined":      {1000, "v0", ReasonSlowest}, // min(5000, 1000, join's own 4000)
		"counts":      {800, "k0", ReasonSlowest},  // count's own 800 is below joined
		"view_counts": {1000, "v0", ReasonSlowest},
		"other_src":   {9000, "o0", ReasonSlowest}, // alone in group h: never ahead of itself
	}
	for sid, w := range want {
		s := st.Streams[sid]
		if !s.Available || s.Watermark != w.w || s.Partition != w.holder || s.Reason != w.reason {
			t.Errorf("stream %s = %+v, want %d held by %s (%s)", sid, s, w.w, w.holder, w.reason)
		}
	}
	if g := st.Groups["g"]; g.Watermark != 1000 || g.Partition != "v0" {
		t.Errorf("group g = %+v, want 1000 held by v0", g)
	}
	if h := st.Groups["h"]; h.Watermark != 9000 {
		t.Errorf("group h = %+v, want 9000 (groups are independent)", h)
	}

	// A join partition without a job: joined and counts are unknown; views_only is not.
	parts[5].Reporting = false
	st = Streams(g, parts)
	for _, sid := range []string{"joined", "counts"} {
		if s := st.Streams[sid]; s.Available || s.Partition != "j1" || s.Reason != ReasonUnavailable {
			t.Errorf("stream %s = %+v, want unavailable by j1", sid, s)
		}
	}
	if s := st.Streams["view_counts"]; !s.Available || s.Watermark != 1000 {
		t.Errorf("view_counts = %+v, want 1000 (independent of the join)", s)
	}
}

// TestStreamWatermarksCycle checks that a cycle converges to the minimum around it.
func TestStreamWatermarksCycle(t *testing.T) {
	g := Graph{Computations: []Node{
		{ID: "a", Inputs: []string{"src_out", "b_out"}, Outputs: []string{"a_out"}},
		{ID: "b", Inputs: []string{"a_out"}, Outputs: []string{"b_out"}},
		{ID: "s", Sources: []string{"q"}, Outputs: []string{"src_out"}},
	}}
	st := Streams(g, []Partition{
		src("s0", "s", "q", 900, 0),
		{ID: "a0", Computation: "a", Reporting: true},
		{ID: "b0", Computation: "b", Reporting: true, Bound: 300},
	})
	for _, sid := range []string{"a_out", "b_out"} {
		if s := st.Streams[sid]; s.Watermark != 300 || s.Partition != "b0" {
			t.Errorf("%s = %+v, want 300 held by b0", sid, s)
		}
	}
}

// TestPartitionOf folds the reports of a partition's jobs: a job without a running status makes
// it unavailable, the smallest bound counts, and it is idle only when every job is, for the
// shortest time.
func TestPartitionOf(t *testing.T) {
	run := func(updated, bound, idleSince uint64) Report {
		return Report{Running: true, UpdatedAt: updated, Bound: bound, IdleSince: idleSince}
	}
	for _, c := range []struct {
		name      string
		completed bool
		reports   []Report
		want      Partition
	}{
		{"no job", false, nil, Partition{ID: "p"}},
		{"completed without a job: bounds nothing", true, nil, Partition{ID: "p", Reporting: true}},
		{"one job", false, []Report{run(100, 40, 0)}, Partition{ID: "p", Reporting: true, Bound: 40}},
		{"idle for 100 − 30", false, []Report{run(100, 40, 30)}, Partition{ID: "p", Reporting: true, Bound: 40, IdleFor: 70}},
		{"two jobs: smallest bound, shortest idle", false, []Report{run(100, 40, 30), run(90, 20, 80)}, Partition{ID: "p", Reporting: true, Bound: 20, IdleFor: 10}},
		{"one busy job: not idle", false, []Report{run(100, 40, 30), run(90, 20, 0)}, Partition{ID: "p", Reporting: true, Bound: 20}},
		{"a job not running: unavailable", false, []Report{run(100, 40, 0), {UpdatedAt: 5, Bound: 1}}, Partition{ID: "p", Bound: 40}},
	} {
		if got := PartitionOf("p", "", "", c.completed, c.reports); got != c.want {
			t.Errorf("%s: PartitionOf = %+v, want %+v", c.name, got, c.want)
		}
	}
}

// TestStreamWatermarksReadDelays: a read delay makes its source stream count in the group's
// watermark that much ahead, so the other sources of the group may read up to drift_bound
// ahead of it plus the delay.
func TestStreamWatermarksReadDelays(t *testing.T) {
	g := Graph{Computations: []Node{
		{ID: "clicks", Sources: []string{"c"}, Outputs: []string{"clicks"}, Group: "g", DriftBound: 100, ReadDelays: map[string]uint64{"c": 500}},
		{ID: "views", Sources: []string{"v"}, Outputs: []string{"views"}, Group: "g", DriftBound: 100},
	}}
	st := Streams(g, []Partition{src("c0", "clicks", "c", 1000, 0), src("v0", "views", "v", 1400, 0)})
	// min(1000 + 500, 1400) = 1400: views holds the group; clicks is not held (1500 − 1400 ≤ 100).
	if gw := st.Groups["g"]; gw.Watermark != 1400 || gw.Partition != "v0" {
		t.Errorf("group g = %+v, want 1400 held by v0", gw)
	}
	if s := st.Streams["c"]; s.Watermark != 1000 || s.Reason != ReasonSlowest {
		t.Errorf("stream c = %+v, want its own 1000, not shifted", s)
	}
	// clicks at 1100: 1600 − 1400 > 100, held by alignment.
	st = Streams(g, []Partition{src("c0", "clicks", "c", 1100, 0), src("v0", "views", "v", 1400, 0)})
	if s := st.Streams["c"]; s.Reason != ReasonAlignment {
		t.Errorf("stream c = %+v, want held by alignment", s)
	}
}
