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

// eventSessionsSpec: two swift passthrough sources over the queues ROOT/a and ROOT/b (event
// time from their ts column, in seconds) feeding one keyed SessionWindow whose event_time timer
// stream flush waits for both streams: a user's session (events of both streams less than the
// gap apart) is flushed to the queue ROOT/totals once the EventWatermark of both streams
// passed its last event plus the gap.
const eventSessionsSpec = `{
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
      sum = {
        computation_class_name = "NYT::NFlow::TProcessFunctionComputation";
        processing_function = "SessionWindow";
        processing_function_parameters = {session_gap_seconds = 60};
        group_by_schema = [
          {name = "hash"; type = "uint64"; required = %true; expression = "farm_hash(user)"};
          {name = "user"; type = "string"; required = %true};
        ];
        input_stream_ids = ["ea"; "eb"];
        output_stream_ids = ["totals"];
        timer_streams = {flush = {time_type = "event_time"; streams = ["ea"; "eb"]}};
        sinks = {out = {sink_class_name = "NYT::NFlow::TSyncQueueSink"; input_stream_ids = ["totals"];
          parameters = {queue_path = "ROOT/totals"}}};
      };
    };
    streams = {
      ea = {schema = [{name = "user"; type = "string"; required = %true}; {name = "amount"; type = "int64"; required = %true}; {name = "ts"; type = "int64"; required = %true}]};
      eb = {schema = [{name = "user"; type = "string"; required = %true}; {name = "amount"; type = "int64"; required = %true}; {name = "ts"; type = "int64"; required = %true}]};
      totals = {schema = [{name = "user"; type = "string"}; {name = "start"; type = "int64"}; {name = "total"; type = "int64"}; {name = "events"; type = "int64"}]};
    };
  };
  dynamic_spec = {computations = {
    ra = {batch_duration = 100; max_rows_per_batch = 20};
    rb = {batch_duration = 100; max_rows_per_batch = 20};
    sum = {batch_duration = 100};
  }};
}`

// TestEventTimeSessionsTwoStreamsUnderKill: 30 users, 20 sessions each of 6 events 10 s of
// event time apart, alternating between two input streams; sessions are 10 min apart and the
// gap is 60 s. The first 10 sessions are written, and once the watermark of both streams has
// fired the first 9 of every user (the 10th stays open, its timer pending), the worker is
// killed (SIGKILL); then the other 10 sessions and a closing event far ahead on each stream are
// written and a new worker takes over. The session window (SessionWindow of examples/sessions,
// an event_time timer over both streams) fires each session exactly once: the totals queue holds exactly one row per
// (user, session), with the session's first event time, its sum and 6 events.
func TestEventTimeSessionsTwoStreamsUnderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	const (
		users    = 30
		sessions = 20
		perSess  = 6
		t0       = int64(1_700_000_000) // s
	)
	c := NewCluster(t)
	root := c.Root("eventsessions")
	w := &WordCount{C: c, Root: root, Path: root + "/pipeline"}
	w.Store = c.Store(w.Path)
	ctx := context.Background()
	mk := func(ut ytstore.UserTable) {
		t.Helper()
		if err := w.Store.EnsureUserTable(ctx, ut); err != nil {
			t.Fatal(err)
		}
	}
	events := schema.Schema{Columns: []schema.Column{{Name: "user", Type: schema.TypeString}, {Name: "amount", Type: schema.TypeInt64}, {Name: "ts", Type: schema.TypeInt64}}}
	for _, q := range []string{"a", "b"} {
		mk(ytstore.UserTable{Path: root + "/" + q, Kind: ytstore.UserQueue, Schema: events})
		mk(ytstore.UserTable{Path: root + "/" + q + "_consumer", Kind: ytstore.UserConsumer, Queue: root + "/" + q})
	}
	mk(ytstore.UserTable{Path: root + "/totals", Kind: ytstore.UserQueue, Schema: schema.Schema{Columns: []schema.Column{
		{Name: "user", Type: schema.TypeString}, {Name: "start", Type: schema.TypeInt64}, {Name: "total", Type: schema.TypeInt64}, {Name: "events", Type: schema.TypeInt64}}}})
	// write writes sessions [from, to) of every user: session s of user u has events j = 0..5
	// at t0 + 600 s·s + 10 s·j + u, amount s+1, even j on stream a, odd j on b; each queue
	// stays in event-time order. closing adds an event of user "zz" an hour after the last
	// session on both streams, which moves their watermarks past every session.
	write := func(from, to int64, closing bool) {
		rows := map[string][]map[string]any{}
		for s := from; s < to; s++ {
			for j := range int64(perSess) {
				for u := range int64(users) {
					q := "a"
					if j%2 == 1 {
						q = "b"
					}
					rows[q] = append(rows[q], map[string]any{"user": fmt.Sprintf("u%02d", u), "amount": s + 1, "ts": t0 + 600*s + 10*j + u})
				}
			}
		}
		for _, q := range []string{"a", "b"} {
			if closing {
				rows[q] = append(rows[q], map[string]any{"user": "zz", "amount": int64(1), "ts": t0 + 600*sessions + 3600})
			}
			rs := rows[q]
			sort.SliceStable(rs, func(i, j int) bool { return rs[i]["ts"].(int64) < rs[j]["ts"].(int64) })
			if err := w.Store.InsertRows(ctx, root+"/"+q, rs); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(0, sessions/2, false)
	w.SpecFile = filepath.Join(t.TempDir(), "pipeline.yson")
	if err := os.WriteFile(w.SpecFile, []byte(strings.ReplaceAll(eventSessionsSpec, "ROOT", root)), 0o644); err != nil {
		t.Fatal(err)
	}
	w.StartPipeline(t)
	w.Controller(t, "controller")
	worker := w.Worker(t, "worker-1")

	totals := func() ([]map[string]any, error) {
		return w.Store.SelectRows(ctx, fmt.Sprintf("user, start, total, events FROM [%s/totals]", root))
	}
	// waitFired waits until at least n sessions fired.
	waitFired := func(n int) int {
		var got int
		Eventually(t, 3*time.Minute, func() (bool, string) {
			rs, err := totals()
			if err != nil {
				return false, err.Error()
			}
			got = len(rs)
			return got >= n, fmt.Sprintf("%d of %d sessions fired", got, n)
		})
		return got
	}
	before := waitFired(users * (sessions/2 - 1))
	worker.Kill()
	t.Logf("killed worker-1 after %d sessions fired; the last written session of each user is open", before)
	write(sessions/2, sessions, true)
	w.Worker(t, "worker-2")
	waitFired(users * sessions)
	got, err := totals()
	if err != nil {
		t.Fatal(err)
	}
	fired := map[[2]any]int{}
	bad := 0
	for _, r := range got {
		user, total, n := fmt.Sprint(r["user"]), toInt(r["total"]), toInt(r["events"])
		fired[[2]any{user, total}]++
		var u int64
		fmt.Sscanf(user, "u%d", &u)
		if n != perSess || total%perSess != 0 || total/perSess < 1 || total/perSess > sessions ||
			toInt(r["start"]) != (t0+600*(total/perSess-1)+u)*1_000_000 {
			if bad++; bad <= 5 {
				t.Errorf("total row %v: want %d events with amount 1..%d each, starting at the session's first event", r, perSess, sessions)
			}
		}
	}
	for u := range users {
		for s := range int64(sessions) {
			k := [2]any{fmt.Sprintf("u%02d", u), (s + 1) * perSess}
			if fired[k] != 1 {
				if bad++; bad <= 10 {
					t.Errorf("user %s session %d fired %d times, want once", k[0], s, fired[k])
				}
			}
		}
	}
	if len(got) != users*sessions {
		t.Errorf("%d totals, want %d (one per session)", len(got), users*sessions)
	}
	if before != users*(sessions/2-1) {
		t.Errorf("before the kill %d sessions fired, want the %d the watermark had passed (the last written open)", before, users*(sessions/2-1))
	}
}
