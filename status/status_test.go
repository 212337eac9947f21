package status

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.ytsaurus.tech/yt/go/schema"

	_ "github.com/ytflow/yt-flow/connectors/all" // the queue source's end offsets
	"github.com/ytflow/yt-flow/ytlocal/ytlocaltest"
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

// TestReadBacklog computes the unread rows of a queue source stream on
// ytlocal from the queue's tablets and the offsets committed in
// partition_states.
func TestReadBacklog(t *testing.T) {
	ctx := context.Background()
	proxy := ytlocaltest.New(t)
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: proxy, Path: "//home/s/pipe"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if err := st.CreatePipeline(ctx); err != nil {
		t.Fatal(err)
	}
	err = st.EnsureUserTable(ctx, ytstore.UserTable{Path: "//q/in", Kind: ytstore.UserQueue, TabletCount: 2,
		Schema: schema.Schema{Columns: []schema.Column{{Name: "text", Type: schema.TypeString}}}})
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	for i := range 8 {
		rows = append(rows, map[string]any{"text": "x", "$tablet_index": int64(i / 6)}) // 6 rows in tablet 0, 2 in tablet 1
	}
	if err := st.InsertRows(ctx, "//q/in", rows); err != nil {
		t.Fatal(err)
	}
	parts := []ytstore.Partition{
		{PartitionID: "split/src/lines/0", ComputationID: "split", SourceID: "lines", SourcePartition: 0},
		{PartitionID: "split/src/lines/1", ComputationID: "split", SourceID: "lines", SourcePartition: 1},
	}
	lease, err := st.StartLease(ctx, "j", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.AbortLease(context.Background(), lease) })
	off := ytstore.SourcePosition{NextSeq: 4, Position: []byte{0, 0, 0, 0, 0, 0, 0, 4}}.Encode()
	token, err := st.GenerateTimestamp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = st.CommitEpoch(ctx, &ytstore.EpochWrite{PartitionID: parts[0].PartitionID, Lease: lease, Token: token, PartitionStates: map[string][]byte{ytstore.SourceStatePrefix + "lines": off}})
	if err != nil {
		t.Fatal(err)
	}
	attrs := &ytstore.Attributes{Spec: []byte(statusTestSpec)}
	got := ReadBacklog(ctx, st, attrs, parts)
	// tablet 0: 6 rows, offset 4 -> 2 unread; tablet 1: 2 rows, nothing read -> 2.
	if len(got) != 1 || got["lines"] != 4 {
		t.Fatalf("readBacklog = %v, want lines: 4", got)
	}
}

// TestCheckTarget: a completed pipeline takes no target; one without a spec cannot start
// but can be paused or stopped; anything else goes.
func TestCheckTarget(t *testing.T) {
	spec := []byte("{}")
	for _, c := range []struct {
		state  string
		spec   []byte
		target string
		ok     bool
	}{
		{ytstore.StateWorking, spec, ytstore.TargetPaused, true},
		{ytstore.StatePaused, spec, ytstore.TargetWorking, true},
		{"", spec, ytstore.TargetStopped, true},
		{ytstore.StateCompleted, spec, ytstore.TargetWorking, false},
		{ytstore.StateCompleted, spec, ytstore.TargetPaused, false},
		{ytstore.StateCompleted, spec, ytstore.TargetStopped, false},
		{"", nil, ytstore.TargetWorking, false},
		{"", nil, ytstore.TargetPaused, true},
		{ytstore.StateWorking, spec, "running", false},
	} {
		err := CheckTarget("//p", &ytstore.Attributes{PipelineState: c.state, Spec: c.spec}, c.target)
		var r *Refusal
		if (err == nil) != c.ok || (err != nil && !errors.As(err, &r)) {
			t.Errorf("state %q, spec %v, target %s: %v; want ok %v (refusals are *Refusal)", c.state, c.spec != nil, c.target, err, c.ok)
		}
	}
}
