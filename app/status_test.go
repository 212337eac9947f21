package app

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ytflow/yt-flow/status"
	"github.com/ytflow/yt-flow/ytstore"
)

const statusTestSpec = `{
    computations = {
        split = {
            computation_class_name = "NYT::NFlow::TProcessFunctionSourceComputation";
            processing_function = "SplitWords";
            source_streams = {lines = {source_class_name = "NYT::NFlow::TQueueSource"; parameters = {queue_path = "//q/in"; consumer_path = "//q/c"}}};
            output_stream_ids = ["words"];
        };
        count = {
            computation_class_name = "NYT::NFlow::TProcessFunctionComputation";
            processing_function = "CountWords";
            group_by_schema = [{name = "hash"; type = "uint64"; required = %true; expression = "farm_hash(word)"}; {name = "word"; type = "string"; required = %true}];
            input_stream_ids = ["words"];
            output_stream_ids = ["counts"];
            sinks = {out = {sink_class_name = "NYT::NFlow::TAsyncQueueSink"; input_stream_ids = ["counts"]; parameters = {queue_path = "//q/out"; producer_path = "//q/p"}}};
        };
    };
    streams = {
        words = {schema = [{name = "word"; type = "string"; required = %true}]};
        counts = {schema = [{name = "hash"; type = "uint64"}; {name = "word"; type = "string"}; {name = "count"; type = "int64"}]};
    };
}`

// TestStatusShowsLagAndWatermark checks the flow part of `yt-flow status`:
// the SystemWatermark and the EventWatermark with their lags, per computation the partitions, jobs,
// buffered input, held messages, lag (age of the oldest held message) and
// last commit, and per stream its producer, consumers, in-flight count and
// lag, in aligned columns.
func TestStatusShowsLagAndWatermark(t *testing.T) {
	const now = uint64(1_800_000_000_000_000)
	const sec = uint64(1_000_000)
	eventWM := now - 3600*sec
	s := &pipelineStatus{&status.Snapshot{
		Attrs: &ytstore.Attributes{Spec: []byte(statusTestSpec), PipelineState: "working", TargetState: "working", SystemWatermark: now - 90*sec,
			EventWatermark: &eventWM, Partitioning: map[string]ytstore.PartitionCount{"count": {Current: 2, ByLoad: true, Optimal: 3,
				Driver: "messages_per_second", MessagesPerSecond: 25000, BytesPerSecond: 1e6, CPULoad: 0.05, Reason: "cooling down 10s after the last repartitioning",
				HeavyHitters: []uint64{42}}}},
		Partitions: []ytstore.Partition{
			{PartitionID: "count/0of2", ComputationID: "count", State: ytstore.PartitionActive},
			{PartitionID: "count/1of2", ComputationID: "count", State: ytstore.PartitionActive},
			{PartitionID: "count/0of1", ComputationID: "count", State: ytstore.PartitionDraining},
			{PartitionID: "split/src/lines/0", ComputationID: "split", SourceID: "lines", State: ytstore.PartitionActive},
		},
		Jobs: []ytstore.Job{
			{JobID: "c0", ComputationID: "count", PartitionID: "count/0of2"},
			{JobID: "c1", ComputationID: "count", PartitionID: "count/1of2"},
			{JobID: "s0", ComputationID: "split", PartitionID: "split/src/lines/0"},
		},
		Statuses: map[string]ytstore.JobStatus{
			"c0": {JobID: "c0", State: "running", InputLag: 7, InFlight: 12, SystemWatermark: now - 65*sec, LastCommitTS: now - 2*sec},
			"c1": {JobID: "c1", State: "running", InputLag: 3, InFlight: 3, SystemWatermark: now - 5*sec, LastCommitTS: now - sec},
			"s0": {JobID: "s0", State: "running", InFlight: 40, SystemWatermark: now - 12*sec, LastCommitTS: now - 3*sec},
		},
		Alive: map[string]bool{}, Leases: map[string]bool{}, Now: now, Backlog: map[string]int64{"lines": 123},
	}}
	var buf bytes.Buffer
	if err := s.write(&buf, "//p"); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"system watermark  2027-01-15 07:58:30.000 UTC (lag 1m30s)",
		"event watermark   2027-01-15 07:00:00.000 UTC (lag 1h0m0s)",
		"computations (2)",
		"  COMPUTATION  PARTITIONS      JOBS  INPUT LAG  IN FLIGHT  LAG   LAST COMMIT",
		"  count        3 (1 retiring)  2     10         15         1m5s  1s ago",
		"  split        1               1     0          40         12s   3s ago",
		"streams (3)",
		"  STREAM  FROM          TO        IN FLIGHT  LAG",
		"  counts  count         sink out  5          1m5s",
		"  lines   queue //q/in  split     123        -",
		"  words   split         count     40         12s",
		"partitioning (1)",
		"  COMPUTATION  PARTITIONS  OPTIMAL  BY                   MSG/S    BYTES/S  CPU   TIMERS  REASON",
		"  count        2           3        messages_per_second  25000.0  1000000  0.05  0       cooling down 10s after the last repartitioning; heavy hitters (key hashes no partition count spreads): [42]",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("status lacks line %q:\n%s", want, out)
		}
	}
}
