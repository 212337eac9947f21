package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/connectors/servicelog"
	"github.com/ytflow/yt-flow/ytql"
	"github.com/ytflow/yt-flow/ytstore"
)

// serviceLogConfig reads the totals table ROOT/totals with a service log source (three hash
// ranges, a cycle a second) into ReportTotals (examples/totals), whose rows — each with the
// start of its cycle — a keyed passthrough appends to the queue ROOT/report in its epochs.
const serviceLogConfig = `{
    path = "ROOT/pipeline";
    spec = {
        computations = {
            report = {
                computation_class_name = "NYT::NFlow::TProcessFunctionSourceComputation";
                processing_function = "ReportTotals";
                source_streams = {totals = {
                    source_class_name = "NYT::NFlow::TServiceLogSource";
                    parameters = {table_joiner = {fetchers = [{table_path = "ROOT/totals"}]}};
                }};
                output_stream_ids = ["report"];
            };
            store = {
                computation_class_name = "NYT::NFlow::TPassthroughComputation";
                group_by_schema = [
                    {name = "hash"; type = "uint64"; required = %true};
                    {name = "user"; type = "string"; required = %true};
                ];
                input_stream_ids = ["report"];
                output_stream_ids = ["stored"];
                sinks = {out = {sink_class_name = "NYT::NFlow::TSyncQueueSink"; input_stream_ids = ["stored"]; parameters = {queue_path = "ROOT/report"}}};
            };
        };
        streams = {
            report = {schema = [{name = "hash"; type = "uint64"; required = %true}; {name = "user"; type = "string"; required = %true};
                {name = "total"; type = "int64"}; {name = "events"; type = "int64"}; {name = "cycle"; type = "uint64"}]};
            stored = {schema = [{name = "hash"; type = "uint64"; required = %true}; {name = "user"; type = "string"; required = %true};
                {name = "total"; type = "int64"}; {name = "events"; type = "int64"}; {name = "cycle"; type = "uint64"}]};
        };
    };
    dynamic_spec = {computations = {
        report = {batch_duration = 50; max_rows_per_batch = 100;
            source_streams = {totals = {parameters = {desired_partition_count = 3; desired_cycle_time = "1s"}}}};
        store = {batch_duration = 50; parameters = {desired_partition_count = 2}};
    }};
}`

// TestServiceLogEndToEnd: a service log source re-reads a table of 1500 keys, a cycle a
// second per hash range, while the real binary runs as processes; a worker is killed with
// SIGKILL during the second cycles, the controller during the third, and after the fifth the
// worker of store's upper partition is frozen for two cycles of the middle range. In the
// report — every row with the start of its cycle — no cycle holds a key twice, and once the
// pipeline is stopped (`yt-flow stop --wait`: everything read is processed) each cycle of a
// hash range but the last holds every key of the range, and every range completed at least
// three cycles. Completeness is checked on the stopped pipeline only: the report comes
// through the two partitions of the keyed passthrough, which split the middle hash range
// (270 and 230 of its 500 keys) and advance independently, so while it runs a cycle may show
// one partition's keys and the next cycle's rows already (the freeze makes that happen). A
// cycle is a hash range's: under load two ranges may start cycles in the same microsecond.
func TestServiceLogEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e fault test")
	}
	const keys = 1500
	c := NewCluster(t)
	r := NewRun(t, c, "servicelog", serviceLogConfig, func(r *Run) {
		ctx := context.Background()
		if err := r.Store.EnsureUserTable(ctx, ytstore.UserTable{Path: r.Root + "/totals", Kind: ytstore.UserSortedTable, Schema: totalsSchema}); err != nil {
			t.Fatal(err)
		}
		var rows []map[string]any
		for i := range keys {
			u := fmt.Sprintf("u%04d", i)
			rows = append(rows, map[string]any{"hash": ytql.FarmHash(u), "user": u, "total": int64(i), "events": int64(1)})
		}
		if err := r.Store.InsertRows(ctx, r.Root+"/totals", rows); err != nil {
			t.Fatal(err)
		}
		if err := r.Store.EnsureUserTable(ctx, ytstore.UserTable{Path: r.Root + "/report", Kind: ytstore.UserQueue, Schema: schema.Schema{Columns: []schema.Column{
			{Name: "hash", Type: schema.TypeUint64}, {Name: "user", Type: schema.TypeString}, {Name: "total", Type: schema.TypeInt64},
			{Name: "events", Type: schema.TypeInt64}, {Name: "cycle", Type: schema.TypeUint64},
		}}}); err != nil {
			t.Fatal(err)
		}
	})
	// Each key belongs to the hash range of its first key column.
	rangeOfHash := func(h uint64) int {
		for i := range int64(3) {
			lo, hi, err := servicelog.HashRange(servicelog.PartitionIndex(3, i))
			if err != nil {
				t.Fatal(err)
			}
			if h >= lo && (hi == 0 || h < hi) {
				return int(i)
			}
		}
		t.Fatalf("hash %d in no range", h)
		return -1
	}
	members := make([]map[string]bool, 3)
	rangeOf := map[string]int{}
	for i := range keys {
		u := fmt.Sprintf("u%04d", i)
		rn := rangeOfHash(ytql.FarmHash(u))
		if members[rn] == nil {
			members[rn] = map[string]bool{}
		}
		members[rn][u] = true
		rangeOf[u] = rn
	}
	// A cycle is one hash range's (a partition's): two ranges may start cycles in the same
	// microsecond.
	type cycleID struct {
		rn    int
		start uint64
	}
	// report reads the queue: the cycles, each with its keys and how often each came.
	report := func() (map[cycleID]map[string]int, int) {
		rows, err := r.Store.SelectRows(context.Background(), fmt.Sprintf("user, cycle FROM [%s/report]", r.Root))
		if err != nil {
			return nil, 0
		}
		cycles := map[cycleID]map[string]int{}
		for _, row := range rows {
			u := row["user"].(string)
			rn, ok := rangeOf[u]
			if !ok {
				t.Fatalf("report row of unknown key %q", u)
			}
			start, _ := row["cycle"].(uint64)
			id := cycleID{rn: rn, start: start}
			if cycles[id] == nil {
				cycles[id] = map[string]int{}
			}
			cycles[id][u]++
		}
		return cycles, len(rows)
	}
	// waitCycles waits until every hash range has reported rows of n cycles.
	waitCycles := func(n int) {
		r.WaitFor(3*time.Minute, func() (bool, string) {
			cycles, _ := report()
			seen := make([]int, 3)
			for id := range cycles {
				seen[id.rn]++
			}
			return slices.Min(seen) >= n, fmt.Sprintf("cycles seen per hash range %v, waiting for %d each", seen, n)
		})
	}
	// violations checks the report's cycles: no cycle holds a key twice and, with
	// complete, each cycle of a hash range but the last holds every key of the range and every
	// range has at least 4 cycles.
	violations := func(cycles map[cycleID]map[string]int, complete bool) []string {
		starts := make([][]uint64, 3)
		for id := range cycles {
			starts[id.rn] = append(starts[id.rn], id.start)
		}
		var bad []string
		for rn, ss := range starts {
			slices.Sort(ss)
			if complete && len(ss) < 4 {
				bad = append(bad, fmt.Sprintf("range %d: %d cycles seen, want at least 4 (3 complete)", rn, len(ss)))
			}
			for i, start := range ss {
				users := cycles[cycleID{rn: rn, start: start}]
				for u, n := range users {
					if n > 1 {
						bad = append(bad, fmt.Sprintf("range %d cycle %d: key %s %d times", rn, start, u, n))
					}
				}
				if complete && i < len(ss)-1 && len(users) != len(members[rn]) {
					bad = append(bad, fmt.Sprintf("range %d cycle %d (%d of %d): %d keys, want all %d", rn, start, i+1, len(ss), len(users), len(members[rn])))
				}
			}
		}
		sort.Strings(bad)
		return bad
	}
	r.Start(3)
	waitCycles(2)
	r.KillWorker()
	waitCycles(3)
	r.KillController()
	waitCycles(5)
	// Hold store's upper partition back while the middle range goes on cycling: freeze its
	// worker (unless that worker reads the middle range too) for two more cycles of it. The
	// running report then shows cycles of the middle range with the lower partition's keys
	// only; the stopped one has them complete.
	var running map[cycleID]map[string]int // the report while running (while frozen)
	if w := laggingStoreWorker(t, r); w != nil {
		seen := func() int {
			cycles, _ := report()
			n := 0
			for id := range cycles {
				if id.rn == 1 {
					n++
				}
			}
			return n
		}
		before := seen()
		if err := w.Freeze(); err != nil {
			t.Fatal(err)
		}
		r.WaitFor(3*time.Minute, func() (bool, string) {
			n := seen()
			return n >= before+2, fmt.Sprintf("middle range: %d cycles, waiting for %d with store's upper partition frozen", n, before+2)
		})
		running, _ = report()
		if err := w.Resume(); err != nil {
			t.Fatal(err)
		}
	} else {
		running, _ = report()
	}
	if bad := violations(running, false); len(bad) > 0 {
		t.Fatalf("a key twice in a cycle while running:\n%v", bad[:min(len(bad), 20)])
	}
	stop := Start(t, "stop", "stop", "--proxy", r.C.Proxy, "--path", r.Path, "--wait", "--timeout", "3m")
	r.WaitFor(4*time.Minute, func() (bool, string) {
		return stop.Exited(), "yt-flow stop --wait still waiting; pipeline state " + r.State()
	})
	if err, _ := stop.Wait(time.Second); err != nil {
		t.Fatalf("yt-flow stop: %v\n%s", err, stop.Log())
	}
	if s := r.State(); s != "stopped" {
		t.Fatalf("after yt-flow stop --wait: pipeline state %q", s)
	}
	cycles, total := report()
	if bad := violations(cycles, true); len(bad) > 0 {
		t.Fatalf("every key once per cycle violated:\n%v", bad[:min(len(bad), 20)])
	}
	// The findings of the completeness check on the running report (cycles incomplete while
	// store's partitions were apart), for the record: the stopped report has none.
	lagging := len(violations(running, true))
	t.Logf("%d report rows, %d cycles over 3 ranges, %d processes killed; %d findings on the running report, none once stopped", total, len(cycles), r.Kills, lagging)
}

// laggingStoreWorker returns the worker running store's upper partition (hash from 2^63),
// or nil when that worker also reads the middle hash range of the service log (or is not
// one of the run's live workers).
func laggingStoreWorker(t *testing.T, r *Run) *Proc {
	t.Helper()
	jobs, err := r.Store.Jobs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var store, middle string
	for _, j := range jobs {
		switch {
		case j.ComputationID == "store" && j.LowerKey == 1<<63:
			store = j.WorkerID
		case j.ComputationID == "report" && j.SourcePartition == servicelog.PartitionIndex(3, 1):
			middle = j.WorkerID
		}
	}
	if store == "" || store == middle || r.workers[store] == nil {
		t.Logf("store's upper partition on %q, the middle range read on %q: nothing frozen", store, middle)
		return nil
	}
	t.Logf("SIGSTOP %s (store's upper partition) for two cycles of the middle range", store)
	return r.workers[store]
}
