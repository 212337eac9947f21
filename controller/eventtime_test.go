package controller_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/controller"
	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job"
	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytstore"
)

const gapMicros = 10_000_000 // the test's timers are due 10 s of event time after their message

func init() {
	// test.ArmTimer: every message is recorded in stream seen and arms an event_time timer
	// 10 s of event time later; a fired timer is recorded in stream fired.
	flow.Register("test.ArmTimer", flow.Process{
		OnMessage: func(ctx *flow.Context, msg *flow.Message) error {
			key, _ := ctx.Key()[1].(string)
			ctx.AddMessage("seen", flow.Row{"key": key, "at": int64(msg.EventTimestamp)})
			ctx.AddTimer("due", msg.EventTimestamp+gapMicros, nil)
			return nil
		},
		OnTimer: func(ctx *flow.Context, t *flow.Timer) error {
			key, _ := ctx.Key()[1].(string)
			ctx.AddMessage("fired", flow.Row{"key": key, "at": int64(t.Trigger)})
			return nil
		},
	})
}

const eventTimeSpec = `{
  computations = {
    read = {
      computation_class_name = "NYT::NFlow::TSwiftPassthroughOrderedSourceComputation";
      source_streams = {
        input = {
          source_class_name = "NYT::NFlow::TQueueSource";
          parameters = {queue_path = "//tmp/et/input"; consumer_path = "//tmp/et/consumer"};
        };
      };
      output_stream_ids = ["raw"];
      watermark_strategy = {event_timestamp_assigner = {column = "ts"; format = "seconds"}};
    };
    arm = {
      computation_class_name = "NYT::NFlow::TProcessFunctionComputation";
      processing_function = "test.ArmTimer";
      group_by_schema = [
        {name = "hash"; type = "uint64"; required = %true; expression = "farm_hash(key)"};
        {name = "key"; type = "string"; required = %true};
      ];
      input_stream_ids = ["raw"];
      output_stream_ids = ["seen"; "fired"];
      timer_streams = {due = {time_type = "event_time"}};
      sinks = {
        seen = {sink_class_name = "NYT::NFlow::NSortedDynamicTable::TSyncSink"; input_stream_ids = ["seen"]; parameters = {table_path = "//tmp/et/seen"}};
        fired = {sink_class_name = "NYT::NFlow::NSortedDynamicTable::TSyncSink"; input_stream_ids = ["fired"]; parameters = {table_path = "//tmp/et/fired"}};
      };
    };
  };
  streams = {
    raw = {schema = [{name = "key"; type = "string"; required = %true}; {name = "ts"; type = "int64"}]};
    seen = {schema = [{name = "key"; type = "string"}; {name = "at"; type = "int64"}]};
    fired = {schema = [{name = "key"; type = "string"}; {name = "at"; type = "int64"}]};
  };
}`

// eventTimeEnv runs the controller and a worker on ytlocal for spec (eventTimeSpec or a
// variant) over an input queue of tablets tablets; everything stops when the test ends.
type eventTimeEnv struct {
	t   *testing.T
	ctx context.Context
	st  *ytstore.Store
	w   *job.Worker
}

func startEventTimeEnv(t *testing.T, spec string, tablets int, tweak ...func(*job.Config)) *eventTimeEnv {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	srv, err := ytlocal.Start(ctx, ytlocal.Config{})
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		_ = srv.Close() // last: the controller and worker stop first
	})
	const path = "//tmp/et/pipeline"
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: srv.Addr(), Path: path})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	require.NoError(t, st.CreatePipeline(ctx))
	require.NoError(t, st.SetSpecs(ctx, ytstore.SpecUpdate{Spec: yson.RawValue(spec), SpecVersion: 1, TargetState: ytstore.TargetWorking}))
	result := schema.Schema{UniqueKeys: true, Columns: []schema.Column{
		{Name: "key", Type: schema.TypeString, SortOrder: schema.SortAscending}, {Name: "at", Type: schema.TypeInt64}}}
	for _, ut := range []ytstore.UserTable{
		{Path: "//tmp/et/input", Kind: ytstore.UserQueue, TabletCount: tablets, Schema: schema.Schema{Columns: []schema.Column{
			{Name: "key", Type: schema.TypeString}, {Name: "ts", Type: schema.TypeInt64}}}},
		{Path: "//tmp/et/consumer", Kind: ytstore.UserConsumer, Queue: "//tmp/et/input"},
		{Path: "//tmp/et/seen", Kind: ytstore.UserSortedTable, Schema: result},
		{Path: "//tmp/et/fired", Kind: ytstore.UserSortedTable, Schema: result},
	} {
		require.NoError(t, st.EnsureUserTable(ctx, ut))
	}
	wg.Go(func() {
		_ = controller.Run(ctx, controller.Config{Proxy: srv.Addr(), Path: path, Address: "ctl", Period: 50 * time.Millisecond})
	})
	cfg := job.Config{Proxy: srv.Addr(), Path: path, WorkerID: "w1", EmptyBatchBackoff: 20 * time.Millisecond,
		PollPeriod: 50 * time.Millisecond, StatusPeriod: 50 * time.Millisecond}
	for _, f := range tweak {
		f(&cfg)
	}
	w := job.NewWorker(cfg)
	wg.Go(func() { _ = w.Run(ctx) })
	return &eventTimeEnv{t: t, ctx: ctx, st: st, w: w}
}

// eventTimeSpecWith is eventTimeSpec with more keys in the source's watermark_strategy.
func eventTimeSpecWith(t *testing.T, more string) string {
	const assigner = `watermark_strategy = {event_timestamp_assigner = {column = "ts"; format = "seconds"}};`
	spec := strings.Replace(eventTimeSpec, assigner, strings.TrimSuffix(assigner, "};")+"; "+more+"};", 1)
	require.NotEqual(t, eventTimeSpec, spec)
	return spec
}

// rows reads a result table as key → at.
func (e *eventTimeEnv) rows(table string) map[string]int64 {
	out := map[string]int64{}
	got, err := e.st.SelectRows(e.ctx, "key, at from ["+table+"]")
	if err != nil {
		return out
	}
	for _, r := range got {
		k, _ := r["key"].(string)
		at, _ := r["at"].(int64)
		out[k] = at
	}
	return out
}

// published is @event_watermark (0 before the first publication).
func (e *eventTimeEnv) published() uint64 {
	a, err := e.st.Attributes(e.ctx)
	if err != nil || a.EventWatermark == nil {
		return 0
	}
	return *a.EventWatermark
}

// write appends one input row to the queue's tablet.
func (e *eventTimeEnv) write(key string, ts int64, tablet int) {
	require.NoError(e.t, e.st.InsertRows(e.ctx, "//tmp/et/input", []map[string]any{{"key": key, "ts": ts, "$tablet_index": int64(tablet)}}))
}

func (e *eventTimeEnv) waitFor(what string, cond func() bool) {
	e.t.Helper()
	require.Eventually(e.t, cond, 2*time.Minute, 20*time.Millisecond, what)
}

func micros(s int64) int64 { return s * 1_000_000 }

const t0 = int64(1_000_000_000) // seconds of 2001: far behind the wall clock

// TestEventTimeTimersFollowTheWatermark runs the controller and a worker on ytlocal with a
// source whose event timestamps come from a payload column (event_timestamp_assigner, in
// seconds of 2001: far behind the wall clock) and a keyed computation whose event_time
// timers are due 10 s of event time after each message. A timer fires once the published
// @event_watermark passes its trigger, not by the wall clock: the timer of "a" has not fired
// when "b", 5 s of event time later, is processed (with wall-clock timers it would have
// fired in that very epoch, timers first), and both fire once "c", 20 s later, is read.
func TestEventTimeTimersFollowTheWatermark(t *testing.T) {
	e := startEventTimeEnv(t, eventTimeSpec, 1)
	rows, published, waitFor := e.rows, e.published, e.waitFor
	write := func(key string, ts int64) { e.write(key, ts, 0) }

	write("a", t0)
	waitFor("a seen", func() bool { return rows("//tmp/et/seen")["a"] == micros(t0) })
	write("b", t0+5)
	waitFor("b seen", func() bool { return rows("//tmp/et/seen")["b"] == micros(t0+5) })
	waitFor("event watermark at b", func() bool { return published() >= uint64(micros(t0+5)) })
	assert.Less(t, published(), uint64(micros(t0+10)), "nothing read is 10 s of event time past a")
	assert.Empty(t, rows("//tmp/et/fired"), "no timer is due at the event watermark, whatever the wall clock says")

	write("c", t0+20)
	waitFor("a and b fired", func() bool {
		f := rows("//tmp/et/fired")
		return f["a"] == micros(t0+10) && f["b"] == micros(t0+15)
	})
	assert.GreaterOrEqual(t, published(), uint64(micros(t0+15)))
	_, cFired := rows("//tmp/et/fired")["c"]
	assert.False(t, cFired, fmt.Sprintf("c's timer is due at %d s, past every event read", t0+30))
}

// TestEventTimeIdlePartition: over a queue of two tablets of which only the first is written,
// the second tablet's source job has read nothing, so its estimate is the beginning of time
// and the EventWatermark cannot pass it: event_time timers would never fire before the
// pipeline completes. With watermark_generator.idle_partitions (1 s, max_ratio 0.5) the job
// reports itself idle and the controller leaves it out once it has been idle for a second:
// the published watermark reaches what the first tablet read and the timer of "a" fires.
func TestEventTimeIdlePartition(t *testing.T) {
	e := startEventTimeEnv(t, eventTimeSpecWith(t, `watermark_generator = {out_of_orderness_bound = 0; idle_partitions = {duration = 1000; max_ratio = 0.5}}`), 2)

	e.write("a", t0, 0)
	e.write("c", t0+20, 0)
	e.waitFor("a fired", func() bool { return e.rows("//tmp/et/fired")["a"] == micros(t0+10) })
	assert.GreaterOrEqual(t, e.published(), uint64(micros(t0+20)), "the idle tablet does not hold the watermark at the beginning of time")
	statuses, err := e.st.JobStatuses(e.ctx)
	require.NoError(t, err)
	idle := 0
	for _, st := range statuses {
		if st.EventIdleSince != 0 {
			idle++
		}
	}
	assert.Positive(t, idle, "a job reports itself idle: %+v", statuses)
	_, cFired := e.rows("//tmp/et/fired")["c"]
	assert.False(t, cFired, "c's timer is due past every event read")
}

// TestEventTimeLateDataPartition: over a queue of two tablets, the second lags 100 s of event
// time behind the first. Without a rule the lagging tablet holds the EventWatermark, so the
// timer of "a" (due 10 s after it, on the lagging tablet) waits; with
// watermark_generator.late_data_partitions (value 100, delay 10 s) the watermark is the most
// advanced tablet's estimate minus 10 s, "a" has become late data and its timer fires.
func TestEventTimeLateDataPartition(t *testing.T) {
	e := startEventTimeEnv(t, eventTimeSpecWith(t, `watermark_generator = {out_of_orderness_bound = 0; late_data_partitions = {value = 100.0; delay = 10000}}`), 2)

	e.write("a", t0, 1)
	e.waitFor("a seen", func() bool { return e.rows("//tmp/et/seen")["a"] == micros(t0) })
	e.write("c", t0+100, 0)
	e.waitFor("a fired", func() bool { return e.rows("//tmp/et/fired")["a"] == micros(t0+10) })
	assert.GreaterOrEqual(t, e.published(), uint64(micros(t0+90)), "the most advanced tablet minus the delay")
	_, cFired := e.rows("//tmp/et/fired")["c"]
	assert.False(t, cFired, "c's timer is due past every event read")
}

// TestEventTimeAlignment: with watermark_alignment (drift_bound 100 s) a source job more than
// 100 s of event time ahead of the pipeline EventWatermark reads nothing more until the
// watermark catches up: tablet 0 is at +500 s while tablet 1 is at +0, so the row written to
// tablet 0 at +600 s stays unread through epochs that hold it back; once tablet 1 reaches
// +550 s the watermark is +500 s and it is read.
func TestEventTimeAlignment(t *testing.T) {
	e := startEventTimeEnv(t, eventTimeSpecWith(t, `watermark_generator = {out_of_orderness_bound = 0}; watermark_alignment = {drift_bound = 100000}`), 2)
	holds := func() int64 {
		var n int64
		for _, st := range e.w.Stats() {
			if st.ComputationID == "read" {
				n += st.AlignmentHolds
			}
		}
		return n
	}

	e.write("a1", t0+500, 0)
	e.write("b1", t0, 1)
	e.waitFor("a1 and b1 seen", func() bool { s := e.rows("//tmp/et/seen"); return s["a1"] != 0 && s["b1"] != 0 })
	e.waitFor("tablet 0 held back", func() bool { return holds() > 0 })
	e.write("a2", t0+600, 0)
	after := holds()
	e.waitFor("epochs after a2 held back", func() bool { return holds() >= after+3 })
	_, a2Seen := e.rows("//tmp/et/seen")["a2"]
	assert.False(t, a2Seen, "a row 600 s ahead is not read while the watermark is at +0")
	assert.Less(t, e.published(), uint64(micros(t0+100)))

	e.write("b2", t0+550, 1)
	e.waitFor("a2 seen once the watermark caught up", func() bool { return e.rows("//tmp/et/seen")["a2"] == micros(t0+600) })
}

// TestEventTimeFastPath: with a status period of an hour, statuses and watermark reads come
// only from the watermark's fast path (a pipeline with event_time timers: at every layout
// poll), and the timers still follow the published watermark: nothing fires before the
// watermark passes a's trigger, and a fires once c moved it there.
func TestEventTimeFastPath(t *testing.T) {
	e := startEventTimeEnv(t, eventTimeSpec, 1, func(c *job.Config) { c.StatusPeriod = time.Hour })
	rows, published, waitFor := e.rows, e.published, e.waitFor
	write := func(key string, ts int64) { e.write(key, ts, 0) }

	write("a", t0)
	waitFor("a seen", func() bool { return rows("//tmp/et/seen")["a"] == micros(t0) })
	write("b", t0+5)
	waitFor("event watermark at b, from statuses of the fast path", func() bool { return published() >= uint64(micros(t0+5)) })
	assert.Empty(t, rows("//tmp/et/fired"), "no timer is due at the event watermark")
	write("c", t0+20)
	waitFor("a fired: the worker read the published watermark on the fast path", func() bool {
		return rows("//tmp/et/fired")["a"] == micros(t0+10)
	})
}
