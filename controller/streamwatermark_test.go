package controller

import (
	"math"
	"testing"
	"time"

	"github.com/ytflow/yt-flow/ytstore"
)

// TestStreamWatermarkTracker follows per-stream watermarks of read → count over rounds of
// statuses: the two-observation rule per stream, never back, an unavailable partition that
// stalls only the streams downstream of it, idle source partitions and an alignment group.
func TestStreamWatermarkTracker(t *testing.T) {
	top := Topology{Computations: []Computation{
		{ID: "count", Inputs: []string{"words"}, Outputs: []string{"counts"}},
		{ID: "read", Sources: []Source{{ID: "q"}}, Outputs: []string{"words"}, AlignmentGroup: "g", DriftBound: time.Minute,
			IdlePartitions: &IdleRule{Duration: 10 * time.Second, MaxRatio: 0.5}},
	}}
	parts := []ytstore.Partition{
		{PartitionID: "count/0", ComputationID: "count"},
		{PartitionID: "read/q/0", ComputationID: "read", SourceID: "q"},
		{PartitionID: "read/q/1", ComputationID: "read", SourceID: "q"},
	}
	jobs := []ytstore.Job{{JobID: "c", PartitionID: "count/0"}, {JobID: "r0", PartitionID: "read/q/0"}, {JobID: "r1", PartitionID: "read/q/1"}}
	st := func(id string, updated, ew, idleSince uint64) ytstore.JobStatus {
		return ytstore.JobStatus{JobID: id, State: ytstore.JobRunning, UpdatedAt: updated, EventWatermark: ytstore.OptionalUint64(ew), EventIdleSince: ytstore.OptionalUint64(idleSince)}
	}
	const sec = 1_000_000
	tr := NewStreamWatermarkTracker(&ytstore.EventWatermarks{Streams: map[string]uint64{"q": 50}}, top)
	type want struct{ q, words, counts, g uint64 }
	steps := []struct {
		name     string
		statuses []ytstore.JobStatus
		want     want // 0: not published
	}{
		{"first observation is pending", []ytstore.JobStatus{st("c", 1*sec, 0, 0), st("r0", 1*sec, 500, 0), st("r1", 1*sec, 700, 0)}, want{q: 50}},
		{"min of both observations", []ytstore.JobStatus{st("c", 2*sec, 300, 0), st("r0", 2*sec, 600, 0), st("r1", 2*sec, 800, 0)}, want{500, 500, 300, 500}},
		{"a job that has not reported again: nothing moves", []ytstore.JobStatus{st("c", 2*sec, 0, 0), st("r0", 3*sec, 900, 0), st("r1", 3*sec, 900, 0)}, want{500, 500, 300, 500}},
		// pending is still the second round (600, 800): min(600, 900).
		{"never back", []ytstore.JobStatus{st("c", 4*sec, 100, 0), st("r0", 4*sec, 900, 0), st("r1", 4*sec, 950, 0)}, want{600, 600, 300, 600}},
		// r0 idle since 1 s, reported at 20 s: idle 19 s ≥ 10 s, 1 of 2 may be left out.
		{"idle partition left out", []ytstore.JobStatus{st("c", 20*sec, 0, 0), st("r0", 20*sec, 900, 1*sec), st("r1", 20*sec, 2000, 0)}, want{900, 900, 300, 900}},
		{"idle partition left out, second look", []ytstore.JobStatus{st("c", 21*sec, 0, 0), st("r0", 21*sec, 900, 1*sec), st("r1", 21*sec, 2100, 0)}, want{2000, 2000, 2000, 2000}},
		{"count unavailable: its stream waits, the source's advances", []ytstore.JobStatus{st("r0", 22*sec, 900, 1*sec), st("r1", 22*sec, 3000, 0)}, want{2100, 2100, 2000, 2100}},
		{"everything exhausted", []ytstore.JobStatus{st("c", 30*sec, 0, 0), st("r0", 30*sec, 0, 0), st("r1", 30*sec, 0, 0)}, want{3000, 3000, 2000, 3000}},
		{"everything exhausted, second look", []ytstore.JobStatus{st("c", 31*sec, 0, 0), st("r0", 31*sec, 0, 0), st("r1", 31*sec, 0, 0)}, want{math.MaxUint64, math.MaxUint64, math.MaxUint64, math.MaxUint64}},
	}
	for i, s := range steps {
		w, _ := tr.Observe(parts, jobs, s.statuses)
		got := want{w.Streams["q"], w.Streams["words"], w.Streams["counts"], w.Groups["g"]}
		if got != s.want {
			t.Fatalf("step %d (%s): q, words, counts, group g = %+v, want %+v", i, s.name, got, s.want)
		}
	}
}
