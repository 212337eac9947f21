package controller_test

import (
	"context"
	"fmt"
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

// TestEventTimeTimersFollowTheWatermark runs the controller and a worker on ytlocal with a
// source whose event timestamps come from a payload column (event_timestamp_assigner, in
// seconds of 2001: far behind the wall clock) and a keyed computation whose event_time
// timers are due 10 s of event time after each message. A timer fires once the published
// @event_watermark passes its trigger, not by the wall clock: the timer of "a" has not fired
// when "b", 5 s of event time later, is processed (with wall-clock timers it would have
// fired in that very epoch, timers first), and both fire once "c", 20 s later, is read.
func TestEventTimeTimersFollowTheWatermark(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv, err := ytlocal.Start(ctx, ytlocal.Config{})
	require.NoError(t, err)
	defer func() { _ = srv.Close() }() // last: the controller and worker stop first
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	const path = "//tmp/et/pipeline"
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: srv.Addr(), Path: path})
	require.NoError(t, err)
	defer st.Close()
	require.NoError(t, st.CreatePipeline(ctx))
	require.NoError(t, st.SetSpecs(ctx, ytstore.SpecUpdate{Spec: yson.RawValue(eventTimeSpec), SpecVersion: 1, TargetState: ytstore.TargetWorking}))
	result := schema.Schema{UniqueKeys: true, Columns: []schema.Column{
		{Name: "key", Type: schema.TypeString, SortOrder: schema.SortAscending}, {Name: "at", Type: schema.TypeInt64}}}
	for _, ut := range []ytstore.UserTable{
		{Path: "//tmp/et/input", Kind: ytstore.UserQueue, Schema: schema.Schema{Columns: []schema.Column{
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
	w := job.NewWorker(job.Config{Proxy: srv.Addr(), Path: path, WorkerID: "w1", EmptyBatchBackoff: 20 * time.Millisecond,
		PollPeriod: 50 * time.Millisecond, StatusPeriod: 50 * time.Millisecond})
	wg.Go(func() { _ = w.Run(ctx) })

	const t0 = int64(1_000_000_000) // seconds
	rows := func(table string) map[string]int64 {
		out := map[string]int64{}
		got, err := st.SelectRows(ctx, "key, at from ["+table+"]")
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
	published := func() uint64 {
		a, err := st.Attributes(ctx)
		if err != nil || a.EventWatermark == nil {
			return 0
		}
		return *a.EventWatermark
	}
	write := func(key string, ts int64) {
		require.NoError(t, st.InsertRows(ctx, "//tmp/et/input", []map[string]any{{"key": key, "ts": ts}}))
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		require.Eventually(t, cond, 2*time.Minute, 20*time.Millisecond, what)
	}
	micros := func(s int64) int64 { return s * 1_000_000 }

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
