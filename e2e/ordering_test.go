package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/ytstore"
)

// orderingSpec: two swift passthrough sources over the queues ROOT/a and ROOT/b (event time
// from their ts column, in seconds) feed the keyed EventOrder (examples/sessions), which
// numbers each user's events in the order it sees them and writes {user; seq; stream; ts} to
// the queue ROOT/order. input_ordering merges the streams ea and eb by event time, eb delayed
// by 5 s.
const orderingSpec = `{
  path = "ROOT/pipeline";
  spec = {
    computations = {
      ra = {
        computation_class_name = "NYT::NFlow::TSwiftPassthroughOrderedSourceComputation";
        source_streams = {a = {source_class_name = "NYT::NFlow::TQueueSource";
          parameters = {queue_path = "ROOT/a"; consumer_path = "ROOT/a_consumer"}}};
        output_stream_ids = ["ea"];
        watermark_strategy = {event_timestamp_assigner = {column = "ts"; format = "seconds"}; watermark_generator = {out_of_orderness_bound = 0}};
      };
      rb = {
        computation_class_name = "NYT::NFlow::TSwiftPassthroughOrderedSourceComputation";
        source_streams = {b = {source_class_name = "NYT::NFlow::TQueueSource";
          parameters = {queue_path = "ROOT/b"; consumer_path = "ROOT/b_consumer"}}};
        output_stream_ids = ["eb"];
        watermark_strategy = {event_timestamp_assigner = {column = "ts"; format = "seconds"}; watermark_generator = {out_of_orderness_bound = 0}};
      };
      merge = {
        computation_class_name = "NYT::NFlow::TProcessFunctionComputation";
        processing_function = "EventOrder";
        processing_function_parameters = {output = "order"};
        group_by_schema = [
          {name = "hash"; type = "uint64"; required = %true; expression = "farm_hash(user)"};
          {name = "user"; type = "string"; required = %true};
        ];
        input_stream_ids = ["ea"; "eb"];
        input_ordering = {time_type = "event_time"; stream_delays = {eb = "5s"}};
        output_stream_ids = ["order"];
        sinks = {out = {sink_class_name = "NYT::NFlow::TSyncQueueSink"; input_stream_ids = ["order"];
          parameters = {queue_path = "ROOT/order"}}};
      };
    };
    streams = {
      ea = {schema = [{name = "user"; type = "string"; required = %true}; {name = "ts"; type = "int64"; required = %true}]};
      eb = {schema = [{name = "user"; type = "string"; required = %true}; {name = "ts"; type = "int64"; required = %true}]};
      order = {schema = [{name = "user"; type = "string"}; {name = "seq"; type = "int64"}; {name = "stream"; type = "string"}; {name = "ts"; type = "int64"}]};
    };
  };
  dynamic_spec = {computations = {
    ra = {batch_duration = 100; max_rows_per_batch = 40};
    rb = {batch_duration = 100; max_rows_per_batch = 40};
    merge = {batch_duration = 100};
  }};
}`

// TestInputOrderingUnderKill: 20 users with 20 events each on stream a, at t0 + 10 s·k, and
// 20 on stream b, at t0 + 10 s·k − 2 s; b is delayed by 5 s in input_ordering, so each b_k
// (stabilized t0 + 10 s·k + 3 s) comes after a_k and before a_k+1 — the opposite of their
// raw event times. All of a and the first half of b are written; the merge must hold a's
// second half back behind b's watermark (its epochs count in ordering_holds). Once the
// function saw the first halves of both (a's beyond them stay held), the worker is killed (SIGKILL), the rest of b and a closing
// event an hour ahead on both streams are written, and a new worker takes over. Every user's
// events reach the function exactly once, in stabilized event-time order: the order queue holds
// for each user seq 0..39 once each, with (stream, ts) = a_0, b_0, a_1, b_1, ….
func TestInputOrderingUnderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	const (
		users = 20
		perK  = 20                   // events per user per stream
		t0    = int64(1_700_000_000) // s
	)
	c := NewCluster(t)
	root := c.Root("ordering")
	w := &WordCount{C: c, Root: root, Path: root + "/pipeline"}
	w.Store = c.Store(w.Path)
	ctx := context.Background()
	mk := func(ut ytstore.UserTable) {
		t.Helper()
		if err := w.Store.EnsureUserTable(ctx, ut); err != nil {
			t.Fatal(err)
		}
	}
	events := schema.Schema{Columns: []schema.Column{{Name: "user", Type: schema.TypeString}, {Name: "ts", Type: schema.TypeInt64}}}
	for _, q := range []string{"a", "b"} {
		mk(ytstore.UserTable{Path: root + "/" + q, Kind: ytstore.UserQueue, Schema: events})
		mk(ytstore.UserTable{Path: root + "/" + q + "_consumer", Kind: ytstore.UserConsumer, Queue: root + "/" + q})
	}
	mk(ytstore.UserTable{Path: root + "/order", Kind: ytstore.UserQueue, Schema: schema.Schema{Columns: []schema.Column{
		{Name: "user", Type: schema.TypeString}, {Name: "seq", Type: schema.TypeInt64}, {Name: "stream", Type: schema.TypeString}, {Name: "ts", Type: schema.TypeInt64}}}})
	rawTS := func(stream string, k int64) int64 {
		if stream == "ea" {
			return t0 + 10*k
		}
		return t0 + 10*k - 2
	}
	// write writes events k in [from, to) of every user to queue q, in event-time order.
	write := func(q string, from, to int64, closing bool) {
		var rows []map[string]any
		for k := from; k < to; k++ {
			for u := range users {
				rows = append(rows, map[string]any{"user": fmt.Sprintf("u%02d", u), "ts": rawTS("e"+q, k)})
			}
		}
		if closing {
			rows = append(rows, map[string]any{"user": "zz", "ts": t0 + 10*perK + 3600})
		}
		if err := w.Store.InsertRows(ctx, root+"/"+q, rows); err != nil {
			t.Fatal(err)
		}
	}
	write("a", 0, perK, false)
	write("b", 0, perK/2, false)
	w.SpecFile = filepath.Join(t.TempDir(), "pipeline.yson")
	if err := os.WriteFile(w.SpecFile, []byte(strings.ReplaceAll(orderingSpec, "ROOT", root)), 0o644); err != nil {
		t.Fatal(err)
	}
	w.StartPipeline(t)
	w.Controller(t, "controller")
	worker := w.Worker(t, "worker-1")

	seen := func() ([]map[string]any, error) {
		return w.Store.SelectRows(ctx, fmt.Sprintf("user, seq, stream, ts FROM [%s/order] WHERE user != \"zz\"", root))
	}
	waitSeen := func(n int) int {
		var got int
		Eventually(t, 3*time.Minute, func() (bool, string) {
			rs, err := seen()
			if err != nil {
				return false, err.Error()
			}
			got = len(rs)
			return got >= n, fmt.Sprintf("the function saw %d of %d events", got, n)
		})
		return got
	}
	// The first halves of both streams: a_k and b_k for k < perK/2.
	before := waitSeen(users * perK)
	// The wait shows on the worker's /stats: the merge's epochs held inputs back.
	keys, err := w.Store.TransportSecret(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stats, err := WorkerStats(WorkerAddr(t, worker), keys.Current)
	if err != nil {
		t.Fatal(err)
	}
	var holds int64
	for _, s := range stats {
		if s.ComputationID == "merge" {
			holds += s.OrderingHolds
		}
	}
	if holds == 0 {
		t.Errorf("the merge's jobs report no epoch in which input_ordering held an input back: %+v", stats)
	}
	worker.Kill()
	t.Logf("killed worker-1 after the function saw %d events; a's second half is held behind b's watermark", before)
	write("b", perK/2, perK, true)
	write("a", perK, perK, true) // the closing event of a
	w.Worker(t, "worker-2")
	waitSeen(users * 2 * perK)
	got, err := seen()
	if err != nil {
		t.Fatal(err)
	}
	byUser := map[string][]map[string]any{}
	for _, r := range got {
		u := fmt.Sprint(r["user"])
		byUser[u] = append(byUser[u], r)
	}
	bad := 0
	for u := range users {
		user := fmt.Sprintf("u%02d", u)
		rs := byUser[user]
		sort.SliceStable(rs, func(i, j int) bool { return toInt(rs[i]["seq"]) < toInt(rs[j]["seq"]) })
		if len(rs) != 2*perK {
			bad++
			t.Errorf("user %s: the function saw %d events, want %d (each once)", user, len(rs), 2*perK)
			continue
		}
		for i, r := range rs {
			k, stream := int64(i/2), "ea"
			if i%2 == 1 {
				stream = "eb"
			}
			want := fmt.Sprintf("seq %d: %s at %d", i, stream, rawTS(stream, k)*1_000_000)
			if g := fmt.Sprintf("seq %d: %s at %d", toInt(r["seq"]), r["stream"], toInt(r["ts"])); g != want {
				if bad++; bad <= 10 {
					t.Errorf("user %s: %s, want %s", user, g, want)
				}
			}
		}
	}
	if len(got) != users*2*perK {
		t.Errorf("%d order rows, want %d (every event once)", len(got), users*2*perK)
	}
	if before != users*perK {
		t.Errorf("before the kill the function saw %d events, want the %d that b's watermark let through", before, users*perK)
	}
}
