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
// SIGKILL during the second cycles, the controller during the third. In the report — every
// row with the start of its cycle — each cycle of a hash range but the last holds every key
// of the range exactly once, the last holds no key twice, and every range completed at
// least three cycles.
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
	type cycle struct {
		start uint64
		users map[string]int
	}
	// report reads the queue: the cycles (by start) and each user's cycles.
	report := func() (map[uint64]*cycle, int) {
		rows, err := r.Store.SelectRows(context.Background(), fmt.Sprintf("user, cycle FROM [%s/report]", r.Root))
		if err != nil {
			return nil, 0
		}
		cycles := map[uint64]*cycle{}
		for _, row := range rows {
			start, _ := row["cycle"].(uint64)
			cy := cycles[start]
			if cy == nil {
				cy = &cycle{start: start, users: map[string]int{}}
				cycles[start] = cy
			}
			cy.users[row["user"].(string)]++
		}
		return cycles, len(rows)
	}
	// Each key belongs to the hash range of its first key column; group the cycles by range.
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
	for i := range keys {
		u := fmt.Sprintf("u%04d", i)
		rn := rangeOfHash(ytql.FarmHash(u))
		if members[rn] == nil {
			members[rn] = map[string]bool{}
		}
		members[rn][u] = true
	}
	// waitCycles waits until every hash range has reported rows of n cycles.
	waitCycles := func(n int) {
		r.WaitFor(3*time.Minute, func() (bool, string) {
			cycles, _ := report()
			seen := make([]int, 3)
			for _, cy := range cycles {
				for u := range cy.users {
					seen[rangeOfHash(ytql.FarmHash(u))]++
					break
				}
			}
			return slices.Min(seen) >= n, fmt.Sprintf("cycles seen per hash range %v, waiting for %d each", seen, n)
		})
	}
	r.Start(3)
	waitCycles(2)
	r.KillWorker()
	waitCycles(3)
	r.KillController()
	waitCycles(5)

	cycles, total := report()
	ranges := make([][]*cycle, 3)
	starts := make([]uint64, 0, len(cycles))
	for s := range cycles {
		starts = append(starts, s)
	}
	slices.Sort(starts)
	for _, s := range starts {
		cy := cycles[s]
		rn := -1
		for u := range cy.users {
			n := rangeOfHash(ytql.FarmHash(u))
			if rn >= 0 && rn != n {
				t.Fatalf("cycle %d mixes the keys of hash ranges %d and %d", s, rn, n)
			}
			rn = n
		}
		ranges[rn] = append(ranges[rn], cy)
	}
	var bad []string
	for rn, cs := range ranges {
		if len(cs) < 4 {
			bad = append(bad, fmt.Sprintf("range %d: %d cycles seen, want at least 4 (3 complete)", rn, len(cs)))
		}
		for i, cy := range cs {
			for u, n := range cy.users {
				if n > 1 {
					bad = append(bad, fmt.Sprintf("range %d cycle %d: key %s %d times", rn, cy.start, u, n))
				}
			}
			if i < len(cs)-1 && len(cy.users) != len(members[rn]) {
				bad = append(bad, fmt.Sprintf("range %d cycle %d (of %d): %d keys, want all %d", rn, cy.start, len(cs), len(cy.users), len(members[rn])))
			}
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Fatalf("every key once per cycle violated:\n%v", bad[:min(len(bad), 20)])
	}
	t.Logf("%d report rows, %d cycles over %d ranges, %d processes killed", total, len(cycles), len(ranges), r.Kills)
}
