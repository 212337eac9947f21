package app

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ytflow/yt-flow/status"
	"github.com/ytflow/yt-flow/ytstore"
)

// TestStatusWatermarks checks `yt-flow status --watermarks`: per stream, the published
// watermark, its lag behind wall time, what the statuses give now and the partition holding it
// back with the reason — the slowest source partition for lines and words, and for counts a
// partition without a reporting job (unavailable), which keeps its published value.
func TestStatusWatermarks(t *testing.T) {
	const now = uint64(1_800_000_000_000_000)
	const sec = uint64(1_000_000)
	s := &pipelineStatus{Snapshot: &status.Snapshot{
		Attrs: &ytstore.Attributes{Spec: []byte(statusTestSpec), PipelineState: "working", TargetState: "working",
			EventWatermarks: &ytstore.EventWatermarks{Streams: map[string]uint64{"lines": now - 3660*sec, "words": now - 3660*sec, "counts": now - 7300*sec}}},
		Partitions: []ytstore.Partition{
			{PartitionID: "count/0of2", ComputationID: "count", State: ytstore.PartitionActive},
			{PartitionID: "count/1of2", ComputationID: "count", State: ytstore.PartitionActive},
			{PartitionID: "split/src/lines/0", ComputationID: "split", SourceID: "lines", State: ytstore.PartitionActive},
			{PartitionID: "split/src/lines/1", ComputationID: "split", SourceID: "lines", State: ytstore.PartitionActive},
		},
		Jobs: []ytstore.Job{
			{JobID: "c0", ComputationID: "count", PartitionID: "count/0of2"},
			{JobID: "c1", ComputationID: "count", PartitionID: "count/1of2"},
			{JobID: "s0", ComputationID: "split", PartitionID: "split/src/lines/0"},
			{JobID: "s1", ComputationID: "split", PartitionID: "split/src/lines/1"},
		},
		Statuses: map[string]ytstore.JobStatus{
			"c0": {JobID: "c0", State: "running", UpdatedAt: now, EventWatermark: ytstore.OptionalUint64(now - 7200*sec)},
			"s0": {JobID: "s0", State: "running", UpdatedAt: now, EventWatermark: ytstore.OptionalUint64(now - 3600*sec)},
			"s1": {JobID: "s1", State: "running", UpdatedAt: now, EventWatermark: ytstore.OptionalUint64(now - 600*sec)},
		},
		Alive: map[string]bool{}, Leases: map[string]bool{}, Now: now,
	}}
	var buf bytes.Buffer
	if err := s.writeWatermarks(&buf, "//p"); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"event watermarks (3)",
		"  KIND    NAME    PUBLISHED                LAG      NOW                      HELD BY            WHY",
		"  stream  counts  2027-01-15 05:58:20.000  2h1m40s  -                        count/1of2         unavailable: no running job reports for it",
		"  stream  lines   2027-01-15 06:59:00.000  1h1m0s   2027-01-15 07:00:00.000  split/src/lines/0  slowest partition",
		"  stream  words   2027-01-15 06:59:00.000  1h1m0s   2027-01-15 07:00:00.000  split/src/lines/0  slowest partition",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
