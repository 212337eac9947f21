package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/ytql"
	"github.com/ytflow/yt-flow/ytstore"
)

// totalsSchema is the external state table of KeepTotals: keyed like its group_by_schema.
var totalsSchema = schema.Schema{UniqueKeys: true, Columns: []schema.Column{
	{Name: "hash", Type: schema.TypeUint64, SortOrder: schema.SortAscending},
	{Name: "user", Type: schema.TypeString, SortOrder: schema.SortAscending},
	{Name: "total", Type: schema.TypeInt64},
	{Name: "events", Type: schema.TypeInt64},
}}

// externalStateConfig feeds the events table through KeepTotals (examples/totals), which
// keeps per-user totals in the external state table ROOT/totals.
const externalStateConfig = `{
    path = "ROOT/pipeline";
    spec = {
        computations = {
            read = {
                computation_class_name = "NYT::NFlow::TSwiftPassthroughOrderedSourceComputation";
                source_streams = {events = {
                    source_class_name = "NYT::NFlow::NStaticTableConnector::TSource";
                    parameters = {tables = ["ROOT/events/2026-12-06T00:00:00"]; finite = %true};
                }};
                output_stream_ids = ["rows"];
            };
            keep = {
                computation_class_name = "NYT::NFlow::TProcessFunctionComputation";
                processing_function = "KeepTotals";
                group_by_schema = [
                    {name = "hash"; type = "uint64"; required = %true; expression = "farm_hash(user)"};
                    {name = "user"; type = "string"; required = %true};
                ];
                input_stream_ids = ["rows"];
                external_state_managers = {"/totals" = {
                    external_state_manager_class_name = "NYT::NFlow::TSimpleExternalStateManager";
                    parameters = {path = "ROOT/totals"};
                }};
            };
        };
        streams = {rows = {schema = [{name = "user"; type = "string"; required = %true}; {name = "amount"; type = "int64"; required = %true}]}};
    };
    dynamic_spec = {computations = {
        read = {batch_duration = 50; max_rows_per_batch = 100};
        keep = {batch_duration = 50; max_rows_per_batch = 100; parameters = {desired_partition_count = 3}};
    }};
}`

// TestExternalStateEndToEnd: KeepTotals keeps per-user totals in an external state table
// while the real binary runs as processes; a worker is killed with SIGKILL a quarter of the
// way, the controller half-way. When the pipeline completes, the table equals the model the
// test computes from the events: every user's total and event count, closed accounts absent.
func TestExternalStateEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e fault test")
	}
	sd := seed(t)
	rng := rand.New(rand.NewPCG(sd, 37))
	const events, users = 8000, 300
	type acc struct{ total, events int64 }
	model := map[string]*acc{}
	var rows []map[string]any
	for range events {
		u := fmt.Sprintf("u%03d", rng.IntN(users))
		a := int64(rng.IntN(100))
		if rng.IntN(40) == 0 {
			a = -1
		}
		rows = append(rows, map[string]any{"user": u, "amount": a})
		if a < 0 {
			delete(model, u)
			continue
		}
		if model[u] == nil {
			model[u] = &acc{}
		}
		model[u].total += a
		model[u].events++
	}
	c := NewCluster(t)
	r := NewRun(t, c, "extstate", externalStateConfig, func(r *Run) {
		ctx := context.Background()
		sc := schema.Schema{Columns: []schema.Column{{Name: "user", Type: schema.TypeString}, {Name: "amount", Type: schema.TypeInt64}}}
		if err := r.Store.WriteStaticTable(ctx, r.Root+"/events/2026-12-06T00:00:00", sc, rows); err != nil {
			t.Fatal(err)
		}
		if err := r.Store.EnsureUserTable(ctx, ytstore.UserTable{Path: r.Root + "/totals", Kind: ytstore.UserSortedTable, Schema: totalsSchema}); err != nil {
			t.Fatal(err)
		}
	})
	counted := func() int64 {
		got, err := r.Store.SelectRows(context.Background(), fmt.Sprintf("sum(events) AS n FROM [%s/totals] GROUP BY 1", r.Root))
		if err != nil || len(got) == 0 {
			return 0
		}
		return toInt(got[0]["n"])
	}
	r.Start(3)
	r.WaitFor(3*time.Minute, func() (bool, string) {
		n := counted()
		return n >= events/4 || r.State() == "completed", fmt.Sprintf("%d events counted, waiting for %d", n, events/4)
	})
	t.Logf("%d of %d events counted, state %q: killing a worker", counted(), events, r.State())
	r.KillWorker()
	r.WaitFor(3*time.Minute, func() (bool, string) {
		n := counted()
		return n >= events/2 || r.State() == "completed", fmt.Sprintf("%d events counted, waiting for %d", n, events/2)
	})
	t.Logf("%d of %d events counted, state %q: killing the controller", counted(), events, r.State())
	r.KillController()
	r.WaitCompleted(5 * time.Minute)

	got, err := r.Store.SelectRows(context.Background(), fmt.Sprintf("hash, user, total, events FROM [%s/totals]", r.Root))
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	seen := map[string]bool{}
	for _, row := range got {
		u := row["user"].(string)
		seen[u] = true
		want := model[u]
		switch {
		case want == nil:
			bad = append(bad, fmt.Sprintf("%s: row {total %d; events %d}, want none (closed)", u, toInt(row["total"]), toInt(row["events"])))
		case toInt(row["total"]) != want.total || toInt(row["events"]) != want.events:
			bad = append(bad, fmt.Sprintf("%s: {total %d; events %d}, want {%d; %d}", u, toInt(row["total"]), toInt(row["events"]), want.total, want.events))
		}
		if h, _ := row["hash"].(uint64); h != ytql.FarmHash(u) {
			bad = append(bad, fmt.Sprintf("%s: hash %v, want farm_hash(user)", u, row["hash"]))
		}
	}
	for u := range model {
		if !seen[u] {
			bad = append(bad, fmt.Sprintf("%s: no row, want {%d; %d}", u, model[u].total, model[u].events))
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Fatalf("the totals table differs from the model in %d users:\n%v", len(bad), bad[:min(len(bad), 20)])
	}
	t.Logf("%d events, %d users in the table (model %d), %d processes killed", events, len(got), len(model), r.Kills)
}
