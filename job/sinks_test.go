// Timers and async sinks, system_time timers, the timers a completing job fires, and
// groupByDest.

package job

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytstore"
)

// echoLater counts messages per key in state "n" and sets a timer due at once; when the
// timer fires it emits {data, n} to stream "out". So every output comes from a timer.
type echoLater struct{}

func (echoLater) Invoke(inv *flow.Invocation) (*flow.Result, error) {
	var n int64
	if b, ok := inv.State["n"]; ok {
		if err := yson.Unmarshal(b, &n); err != nil {
			return nil, err
		}
	}
	res := &flow.Result{}
	for _, t := range inv.Timers {
		res.Outputs = append(res.Outputs, flow.Output{StreamID: "out", Payload: flow.Row{"data": inv.Key[1], "n": n}, ParentIDs: []string{t.MessageID}})
	}
	if len(inv.Messages) > 0 {
		n += int64(len(inv.Messages))
		b, err := yson.Marshal(n)
		if err != nil {
			return nil, err
		}
		res.StateWrites = map[string][]byte{"n": b}
		res.Timers = []flow.Timer{{StreamID: "later", Trigger: inv.Now}}
	}
	return res, nil
}

func init() { flow.Register("test.EchoLater", echoLater{}) }

const sinksSpec = `{
  computations = {
    read = {
      computation_class_name = "NYT::NFlow::TSwiftPassthroughOrderedSourceComputation";
      source_streams = {
        input = {
          source_class_name = "NYT::NFlow::TQueueSource";
          parameters = {queue_path = "//tmp/s/input"; consumer_path = "//tmp/s/consumer"; finite = %true};
        };
      };
      output_stream_ids = ["raw"];
    };
    echo = {
      computation_class_name = "NYT::NFlow::TProcessFunctionComputation";
      processing_function = "test.EchoLater";
      group_by_schema = [
        {name = "hash"; type = "uint64"; required = %true; expression = "farm_hash(data)"};
        {name = "data"; type = "string"; required = %true};
      ];
      input_stream_ids = ["raw"];
      output_stream_ids = ["out"];
      timer_streams = {later = {time_type = "current_time"}};
      sinks = {
        exact = {
          sink_class_name = "NYT::NFlow::TAsyncQueueSink";
          input_stream_ids = ["out"];
          parameters = {queue_path = "//tmp/s/out"; producer_path = "//tmp/s/producer"};
        };
        best = {
          sink_class_name = "NYT::NFlow::TAsyncQueueSink";
          input_stream_ids = ["out"];
          parameters = {queue_path = "//tmp/s/best"; producer_path = "//tmp/s/producer"};
          at_most_once_strategy = {enabled = %true; total_queue_bytes_limit = 1000000};
        };
      };
    };
  };
  streams = {
    raw = {schema = [{name = "data"; type = "string"; required = %true}]};
    out = {schema = [{name = "data"; type = "string"}; {name = "n"; type = "int64"}]};
  };
}`

// startSinksEnv starts ytlocal, the pipeline of specText (sinksSpec or a variant), its user
// tables with three input rows, one worker, and the read and echo jobs.
func startSinksEnv(t *testing.T, specText string) *wcEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	srv, err := ytlocal.Start(ctx, ytlocal.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	const path = "//tmp/s/pipeline"
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: srv.Addr(), Path: path})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	require.NoError(t, st.CreatePipeline(ctx))
	require.NoError(t, st.SetSpecs(ctx, ytstore.SpecUpdate{Spec: yson.RawValue(specText), SpecVersion: 1, TargetState: ytstore.TargetWorking}))
	data := schema.Schema{Columns: []schema.Column{{Name: "data", Type: schema.TypeString}}}
	out := schema.Schema{Columns: []schema.Column{{Name: "data", Type: schema.TypeString}, {Name: "n", Type: schema.TypeInt64}}}
	for _, ut := range []ytstore.UserTable{
		{Path: "//tmp/s/input", Kind: ytstore.UserQueue, Schema: data},
		{Path: "//tmp/s/consumer", Kind: ytstore.UserConsumer, Queue: "//tmp/s/input"},
		{Path: "//tmp/s/out", Kind: ytstore.UserQueue, Schema: out},
		{Path: "//tmp/s/best", Kind: ytstore.UserQueue, Schema: out},
		{Path: "//tmp/s/producer", Kind: ytstore.UserProducer},
	} {
		require.NoError(t, st.EnsureUserTable(ctx, ut))
	}
	require.NoError(t, st.InsertRows(ctx, "//tmp/s/input", []map[string]any{{"data": "a"}, {"data": "b"}, {"data": "a"}}))

	leader, err := st.StartSession(ctx, "test leader", time.Minute)
	require.NoError(t, err)
	t.Cleanup(func() { _ = leader.Close() })
	w := NewWorker(Config{Proxy: srv.Addr(), Path: path, WorkerID: "w1", LeaseCheckPeriod: time.Second,
		EmptyBatchBackoff: 20 * time.Millisecond, PollPeriod: 50 * time.Millisecond, PushTimeout: time.Second,
		StatusPeriod: 100 * time.Millisecond})
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
	e.putJob("read-0", "read", "read-p0", 0)
	e.putJob("echo-0", "echo", "echo-p0", -1)
	return e
}

func (e *wcEnv) queueRows(q string) []string {
	e.t.Helper()
	rows, err := e.store.SelectRows(e.ctx, "data, n from ["+q+"]")
	require.NoError(e.t, err)
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%v=%v", r["data"], r["n"]))
	}
	sort.Strings(got)
	return got
}

func TestTimersAndAsyncSinks(t *testing.T) {
	e := startSinksEnv(t, sinksSpec)
	st, ctx, w := e.store, e.ctx, e.worker
	rowsOf := e.queueRows
	e.eventually("the exactly-once sink to receive both keys", func() bool { return len(rowsOf("//tmp/s/out")) >= 2 })
	e.eventually("the fired timers to be deleted", func() bool {
		timers, err := st.LoadTimers(ctx, "echo", 0, 0)
		require.NoError(t, err)
		return len(timers) == 0
	})
	e.eventually("the output store to drain", func() bool {
		outs, err := st.LoadOutputs(ctx, "echo-p0")
		require.NoError(t, err)
		return len(outs) == 0
	})
	assert.Equal(t, []string{"a=2", "b=1"}, rowsOf("//tmp/s/out"), "one output per fired timer, delivered once")
	e.eventually("the at-most-once sink to receive the rows", func() bool { return len(rowsOf("//tmp/s/best")) == 2 })
	assert.Equal(t, int64(0), w.Stats()["echo-0"].BestEffortDropped)

	// The finite source completes once it read the whole queue and delivered its outputs.
	e.eventually("the finite source job to report completed", func() bool {
		sts, err := st.JobStatuses(ctx)
		require.NoError(t, err)
		for _, s := range sts {
			if s.JobID == "read-0" && s.State == ytstore.JobCompleted {
				return true
			}
		}
		return false
	})
}

// TestSystemTimeTimers: a system_time timer fires only once the pipeline SystemWatermark
// passes its trigger.
func TestSystemTimeTimers(t *testing.T) {
	specText := strings.Replace(sinksSpec, `time_type = "current_time"`, `time_type = "system_time"`, 1)
	require.NotEqual(t, sinksSpec, specText)
	e := startSinksEnv(t, specText)
	e.eventually("both keys' timers stored", func() bool {
		timers, err := e.store.LoadTimers(e.ctx, "echo", 0, 0)
		require.NoError(t, err)
		return len(timers) == 2
	})
	assert.Empty(t, e.queueRows("//tmp/s/out"), "no timer fired: the system watermark is 0")

	require.NoError(t, e.store.SetSystemWatermark(e.ctx, e.leader, nowMicros()+1))
	e.eventually("the timers to fire", func() bool { return len(e.queueRows("//tmp/s/out")) == 2 })
	assert.Equal(t, []string{"a=2", "b=1"}, e.queueRows("//tmp/s/out"))
}

// TestCompletionFiresTimers: a job drained while the pipeline's target state is stopped
// keeps its pending timers and does not count them in flight; drained while the target is
// working (completion), it fires every pending timer whatever its clock says, and reports
// in_flight 0 only once none is left.
func TestCompletionFiresTimers(t *testing.T) {
	specText := strings.Replace(sinksSpec, `time_type = "current_time"`, `time_type = "system_time"`, 1)
	e := startSinksEnv(t, specText)
	storedTimers := func() int {
		timers, err := e.store.LoadTimers(e.ctx, "echo", 0, 0)
		require.NoError(t, err)
		return len(timers)
	}
	e.eventually("both keys' timers stored", func() bool { return storedTimers() == 2 })
	sawTarget := func(target string) func() bool {
		return func() bool {
			s := e.worker.targetState.Load()
			return s != nil && *s == target
		}
	}
	echoJob := func() ytstore.Job {
		jobs, err := e.store.Jobs(e.ctx)
		require.NoError(t, err)
		for _, j := range jobs {
			if j.JobID == "echo-0" {
				return j
			}
		}
		t.Fatal("job echo-0 is not in the layout")
		return ytstore.Job{}
	}
	echoStatus := func() ytstore.JobStatus {
		sts, err := e.store.JobStatuses(e.ctx)
		require.NoError(t, err)
		for _, s := range sts {
			if s.JobID == "echo-0" {
				return s
			}
		}
		return ytstore.JobStatus{}
	}

	// Stopping: the drained job keeps its timers for the next start.
	require.NoError(t, e.store.SetTargetState(e.ctx, ytstore.TargetStopped))
	e.eventually("the worker to read the stopped target", sawTarget(ytstore.TargetStopped))
	j := echoJob()
	j.Draining = true
	e.applyLayout(ytstore.LayoutChange{PutJobs: []ytstore.Job{j}})
	e.eventually("echo to report drained for stopping", func() bool {
		s := echoStatus()
		return s.Draining && s.InFlight == 0
	})
	assert.Equal(t, 2, storedTimers(), "a stopping job fires no timer")
	assert.Empty(t, e.queueRows("//tmp/s/out"))

	// Completing: the same drained job fires both timers although the system watermark is 0.
	require.NoError(t, e.store.SetTargetState(e.ctx, ytstore.TargetWorking))
	e.eventually("the fired timers to be deleted", func() bool { return storedTimers() == 0 })
	e.eventually("echo to report drained with nothing pending", func() bool {
		s := echoStatus()
		return s.Draining && s.InFlight == 0 && len(e.queueRows("//tmp/s/out")) == 2
	})
	assert.Equal(t, []string{"a=2", "b=1"}, e.queueRows("//tmp/s/out"))
}

// TestGroupByDestReusesBuffers: outputs are grouped by destination in first-seen order, a
// later call overwrites the groups of an earlier one (fewer destinations included), and
// once the buffers have grown, grouping allocates nothing.
func TestGroupByDestReusesBuffers(t *testing.T) {
	out := func(dest, id string) epoch.Out {
		return epoch.Out{Destination: epoch.Destination{ID: dest}, Message: flow.Message{MessageID: id}}
	}
	ids := func(g destMsgs) []string {
		var s []string
		for _, m := range g.msgs {
			s = append(s, m.MessageID)
		}
		return s
	}
	two := []epoch.Out{out("b", "1"), out("a", "2"), out("b", "3")}
	groups, n := groupByDest(nil, two)
	require.Equal(t, 2, n)
	assert.Equal(t, "b", groups[0].dest)
	assert.Equal(t, []string{"1", "3"}, ids(groups[0]))
	assert.Equal(t, "a", groups[1].dest)
	assert.Equal(t, []string{"2"}, ids(groups[1]))

	groups, n = groupByDest(groups, nil)
	assert.Equal(t, 0, n, "no outputs, no groups")
	groups, n = groupByDest(groups, []epoch.Out{out("c", "4")})
	require.Equal(t, 1, n)
	assert.Equal(t, "c", groups[0].dest)
	assert.Equal(t, []string{"4"}, ids(groups[0]))

	allocs := testing.AllocsPerRun(10, func() { groups, n = groupByDest(groups, two) })
	assert.Zero(t, allocs)
	assert.Equal(t, 2, n)
}
