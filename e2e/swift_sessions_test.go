package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/ytstore"
)

// swiftSessionsSpec is the examples/sessions pipeline (queue source → swift map ParseEvents →
// keyed SumByUser with state and event-time timers → async queue sink) under root, with a
// finite source and a session gap long enough that every user is flushed exactly once, when
// the pipeline completes.
func swiftSessionsSpec(root string) string {
	return fmt.Sprintf(`{
  path = "%[1]s/pipeline";
  spec = {
    computations = {
      read = {
        computation_class_name = "NYT::NFlow::TSwiftPassthroughOrderedSourceComputation";
        source_streams = {input = {source_class_name = "NYT::NFlow::TQueueSource";
          parameters = {queue_path = "%[1]s/input"; consumer_path = "%[1]s/consumer"; finite = %%true}}};
        output_stream_ids = ["raw"];
      };
      parse = {
        computation_class_name = "NYT::NFlow::TProcessFunctionSwiftMapComputation";
        processing_function = "ParseEvents";
        group_by_schema = [
          {name = "hash"; type = "uint64"; required = %%true; expression = "farm_hash(data)"};
          {name = "data"; type = "string"; required = %%true};
        ];
        input_stream_ids = ["raw"];
        output_stream_ids = ["events"];
      };
      sum = {
        computation_class_name = "NYT::NFlow::TProcessFunctionComputation";
        processing_function = "SumByUser";
        processing_function_parameters = {session_gap_seconds = 36000};
        group_by_schema = [
          {name = "hash"; type = "uint64"; required = %%true; expression = "farm_hash(user)"};
          {name = "user"; type = "string"; required = %%true};
        ];
        input_stream_ids = ["events"];
        output_stream_ids = ["totals"];
        timer_streams = {flush = {time_type = "event_time"}};
        sinks = {output = {sink_class_name = "NYT::NFlow::TAsyncQueueSink"; input_stream_ids = ["totals"];
          parameters = {queue_path = "%[1]s/output"; producer_path = "%[1]s/producer"}}};
      };
    };
    streams = {
      raw = {schema = [{name = "data"; type = "string"; required = %%true}]};
      events = {schema = [{name = "user"; type = "string"; required = %%true}; {name = "amount"; type = "int64"; required = %%true}]};
      totals = {schema = [{name = "user"; type = "string"; required = %%true}; {name = "total"; type = "int64"; required = %%true};
        {name = "events"; type = "int64"; required = %%true}]};
    };
  };
  dynamic_spec = {computations = {
    read = {parameters = {desired_partition_count = 2}};
    parse = {parameters = {desired_partition_count = 2}};
    sum = {parameters = {desired_partition_count = 2}};
  }};
}`, root)
}

// TestSwiftSessionsUnderFaults runs the three-stage sessions pipeline with a swift middle
// stage over messages(100000) events of 100 users while workers (and with them swift jobs
// holding unacknowledged parents) are killed at random and replaced. The output queue must
// hold exactly one total per user, equal to the sum and count of the user's events: a
// recomputed swift output that reached the sum stage twice would count twice.
func TestSwiftSessionsUnderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e fault test")
	}
	sd := seed(t)
	rng := rand.New(rand.NewPCG(sd, 3))
	c := NewCluster(t)
	root := c.Root("swiftsessions")
	st := c.Store(root + "/pipeline")
	ctx := context.Background()
	for _, ut := range []ytstore.UserTable{
		{Path: root + "/input", Kind: ytstore.UserQueue, TabletCount: 2,
			Schema: schema.Schema{Columns: []schema.Column{{Name: "data", Type: schema.TypeString}}}},
		{Path: root + "/consumer", Kind: ytstore.UserConsumer, Queue: root + "/input"},
		{Path: root + "/output", Kind: ytstore.UserQueue, Schema: schema.Schema{Columns: []schema.Column{
			{Name: "user", Type: schema.TypeString}, {Name: "total", Type: schema.TypeInt64}, {Name: "events", Type: schema.TypeInt64}}}},
		{Path: root + "/producer", Kind: ytstore.UserProducer},
	} {
		if err := st.EnsureUserTable(ctx, ut); err != nil {
			t.Fatal(err)
		}
	}
	type total struct{ total, events int64 }
	want := map[string]total{}
	n := messages(100000)
	rows := make([]map[string]any, 0, 1000)
	for i := range n {
		user := fmt.Sprintf("u%03d", rng.IntN(100))
		amount := int64(i + 1)
		w := want[user]
		want[user] = total{w.total + amount, w.events + 1}
		rows = append(rows, map[string]any{"data": fmt.Sprintf("%s %d", user, amount), "$tablet_index": int64(i % 2)})
		if len(rows) == cap(rows) || i == n-1 {
			if err := st.InsertRows(ctx, root+"/input", rows); err != nil {
				t.Fatal(err)
			}
			rows = rows[:0]
		}
	}
	specFile := filepath.Join(t.TempDir(), "pipeline.yson")
	if err := os.WriteFile(specFile, []byte(swiftSessionsSpec(root)), 0o644); err != nil {
		t.Fatal(err)
	}
	wc := &WordCount{C: c, Root: root, Path: root + "/pipeline", SpecFile: specFile, Store: st}
	wc.StartPipeline(t)
	wc.Controller(t, "controller")
	workers := map[string]*Proc{}
	var all []*Proc // every worker started, killed ones included, for their logs
	next := 0
	add := func() {
		name := fmt.Sprintf("worker-%d", next)
		next++
		workers[name] = wc.Worker(t, name)
		all = append(all, workers[name])
	}
	for range 3 {
		add()
	}
	kills := 0
	deadline := time.Now().Add(3 * time.Minute)
	for wc.State() != "completed" {
		if time.Now().After(deadline) {
			t.Fatalf("pipeline not completed after 3 minutes (state %q, %d kills)", wc.State(), kills)
		}
		for name, p := range workers {
			if p.Exited() {
				delete(workers, name)
				add()
			}
		}
		if kills < 4 && rng.IntN(4) == 0 {
			names := make([]string, 0, len(workers))
			for name := range workers {
				names = append(names, name)
			}
			sort.Strings(names)
			name := names[rng.IntN(len(names))]
			workers[name].Kill()
			delete(workers, name)
			kills++
			add()
		}
		time.Sleep(250 * time.Millisecond) // the fault schedule's pace, not a wait for a condition
	}
	dups := 0
	for _, p := range all {
		for _, line := range strings.Split(p.Log(), "\n") {
			if strings.Contains(line, "duplicates dropped") && strings.Contains(line, `"computation": "sum"`) {
				dups++
			}
		}
	}
	// Recomputed swift outputs that had reached the sum stage before the restart are dropped
	// there by the dedup index; how many depends on where the kills fall.
	t.Logf("%d messages, %d worker kills, %d epochs of the sum stage dropped duplicates", n, kills, dups)

	out, err := st.SelectRows(ctx, fmt.Sprintf("user, total, events FROM [%s/output]", root))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]total{}
	for _, r := range out {
		u := r["user"].(string)
		got[u] = append(got[u], total{toInt(r["total"]), toInt(r["events"])})
	}
	var bad []string
	for u, w := range want {
		if g := got[u]; len(g) != 1 || g[0] != w {
			bad = append(bad, fmt.Sprintf("%s: got %v, want one total %v", u, g, w))
		}
	}
	for u := range got {
		if _, ok := want[u]; !ok {
			bad = append(bad, fmt.Sprintf("%s: unexpected user", u))
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Fatalf("sessions output not exact:\n%s", strings.Join(bad[:min(len(bad), 20)], "\n"))
	}
}
