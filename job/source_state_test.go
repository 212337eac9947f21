// A source job's user state, kept per partition in partition_states.

package job

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytstore"
)

// numberLines numbers the rows of its source partition with the partition state "n".
type numberLines struct{}

func (numberLines) Invoke(inv *flow.Invocation) (*flow.Result, error) {
	var n int64
	if b, ok := inv.State["n"]; ok {
		if err := yson.Unmarshal(b, &n); err != nil {
			return nil, err
		}
	}
	res := &flow.Result{}
	for _, m := range inv.Messages {
		n++
		res.Outputs = append(res.Outputs, flow.Output{StreamID: "numbered", Payload: flow.Row{"data": m.Payload["data"], "seq": n}})
	}
	b, err := yson.Marshal(n)
	if err != nil {
		return nil, err
	}
	res.StateWrites = map[string][]byte{"n": b}
	return res, nil
}

func init() { flow.Register("test.NumberLines", numberLines{}) }

const numberSpec = `{
  computations = {
    number = {
      computation_class_name = "NYT::NFlow::TProcessFunctionSourceComputation";
      processing_function = "test.NumberLines";
      source_streams = {
        input = {
          source_class_name = "NYT::NFlow::TQueueSource";
          parameters = {queue_path = "//tmp/n/input"; consumer_path = "//tmp/n/consumer"};
        };
      };
      output_stream_ids = ["numbered"];
      sinks = {
        out = {
          sink_class_name = "NYT::NFlow::TSyncQueueSink";
          input_stream_ids = ["numbered"];
          parameters = {queue_path = "//tmp/n/out"};
        };
      };
    };
  };
  streams = {numbered = {schema = [{name = "data"; type = "string"}; {name = "seq"; type = "int64"}]}};
}`

// TestSourcePartitionState: a source function's state is the partition's; it survives a job
// replacement, and rows of one epoch see the writes of earlier rows.
func TestSourcePartitionState(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	srv, err := ytlocal.Start(ctx, ytlocal.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	const path = "//tmp/n/pipeline"
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: srv.Addr(), Path: path})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	require.NoError(t, st.CreatePipeline(ctx))
	require.NoError(t, st.SetSpecs(ctx, ytstore.SpecUpdate{Spec: yson.RawValue(numberSpec), SpecVersion: 1, TargetState: ytstore.TargetWorking}))
	data := schema.Schema{Columns: []schema.Column{{Name: "data", Type: schema.TypeString}}}
	out := schema.Schema{Columns: []schema.Column{{Name: "data", Type: schema.TypeString}, {Name: "seq", Type: schema.TypeInt64}}}
	for _, ut := range []ytstore.UserTable{
		{Path: "//tmp/n/input", Kind: ytstore.UserQueue, Schema: data},
		{Path: "//tmp/n/consumer", Kind: ytstore.UserConsumer, Queue: "//tmp/n/input"},
		{Path: "//tmp/n/out", Kind: ytstore.UserQueue, Schema: out},
	} {
		require.NoError(t, st.EnsureUserTable(ctx, ut))
	}
	leader, err := st.StartSession(ctx, "test leader", time.Minute)
	require.NoError(t, err)
	t.Cleanup(func() { _ = leader.Close() })
	w := NewWorker(Config{Proxy: srv.Addr(), Path: path, WorkerID: "w1", LeaseCheckPeriod: time.Second,
		EmptyBatchBackoff: 20 * time.Millisecond, PollPeriod: 50 * time.Millisecond})
	wctx, wcancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var runErr error
	go func() { defer close(done); runErr = w.Run(wctx) }()
	t.Cleanup(func() { wcancel(); <-done })
	select {
	case <-w.Ready():
	case <-done:
		t.Fatalf("worker stopped: %v", runErr)
	case <-ctx.Done():
		t.Fatal("worker not ready")
	}
	e := &wcEnv{t: t, ctx: ctx, store: st, leader: leader, worker: w}

	seqs := func() []int64 {
		rows, err := st.SelectRows(ctx, "seq from [//tmp/n/out]")
		require.NoError(t, err)
		var got []int64
		for _, r := range rows {
			got = append(got, r["seq"].(int64))
		}
		sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
		return got
	}
	require.NoError(t, st.InsertRows(ctx, "//tmp/n/input", []map[string]any{{"data": "a"}, {"data": "b"}, {"data": "c"}}))
	e.putJob("number-0", "number", "number-p0", 0)
	e.eventually("three numbered rows", func() bool { return len(seqs()) == 3 })
	assert.Equal(t, []int64{1, 2, 3}, seqs(), "rows of one epoch see earlier rows' state")

	e.deleteJob("number-0")
	e.eventually("number-0 to stop", func() bool { return w.runner("number-0") == nil })
	require.NoError(t, st.InsertRows(ctx, "//tmp/n/input", []map[string]any{{"data": "d"}}))
	e.putJob("number-1", "number", "number-p0", 0)
	e.eventually("the fourth row", func() bool { return len(seqs()) == 4 })
	assert.Equal(t, []int64{1, 2, 3, 4}, seqs(), "the replacement resumes from the committed partition state and offset")
}
