package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/ytstore"
)

// auditSchema is the external state table of AuditEvents (examples/totals).
var auditSchema = schema.Schema{UniqueKeys: true, Columns: []schema.Column{
	{Name: "hash", Type: schema.TypeUint64, SortOrder: schema.SortAscending},
	{Name: "user", Type: schema.TypeString, SortOrder: schema.SortAscending},
	{Name: "events", Type: schema.TypeInt64},
	{Name: "behind", Type: schema.TypeInt64},
}}

// stateJoinerConfig counts events per user in CountEvents' internal state; AuditEvents reads
// that state through a state joiner and keeps the largest count read in ROOT/audit.
const stateJoinerConfig = `{
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
            count = {
                computation_class_name = "NYT::NFlow::TProcessFunctionComputation";
                processing_function = "CountEvents";
                group_by_schema = [
                    {name = "hash"; type = "uint64"; required = %true; expression = "farm_hash(user)"};
                    {name = "user"; type = "string"; required = %true};
                ];
                input_stream_ids = ["rows"];
                output_stream_ids = ["counted"];
            };
            audit = {
                computation_class_name = "NYT::NFlow::TProcessFunctionComputation";
                processing_function = "AuditEvents";
                group_by_schema = [
                    {name = "hash"; type = "uint64"; required = %true; expression = "farm_hash(user)"};
                    {name = "user"; type = "string"; required = %true};
                ];
                input_stream_ids = ["counted"];
                state_joiners = {"/events" = {computation_id = "count"; state_name = "events"; join_on = {}}};
                external_state_managers = {"/audit" = {
                    external_state_manager_class_name = "NYT::NFlow::TSimpleExternalStateManager";
                    parameters = {path = "ROOT/audit"};
                }};
            };
        };
        streams = {
            rows = {schema = [{name = "user"; type = "string"; required = %true}; {name = "amount"; type = "int64"; required = %true}]};
            counted = {schema = [{name = "user"; type = "string"; required = %true}; {name = "events"; type = "int64"; required = %true}]};
        };
    };
    dynamic_spec = {computations = {
        read = {batch_duration = 50; max_rows_per_batch = 100};
        count = {batch_duration = 50; max_rows_per_batch = 100; parameters = {desired_partition_count = 2}};
        audit = {batch_duration = 50; max_rows_per_batch = 100; parameters = {desired_partition_count = 2}};
    }};
}`

// TestStateJoinerEndToEnd: AuditEvents reads CountEvents' internal state through a state
// joiner while the real binary runs as processes; a worker is killed with SIGKILL a third of
// the way, the controller two thirds. When the pipeline completes, every user's audited
// count equals its number of events (the joiner read the final committed count), and no
// message read a count below the one it carried (behind 0: reads see committed state, also
// across the restarts).
func TestStateJoinerEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e fault test")
	}
	sd := seed(t)
	rng := rand.New(rand.NewPCG(sd, 38))
	const events, users = 3000, 150
	model := map[string]int64{}
	var rows []map[string]any
	for range events {
		u := fmt.Sprintf("u%03d", rng.IntN(users))
		rows = append(rows, map[string]any{"user": u, "amount": int64(rng.IntN(100))})
		model[u]++
	}
	c := NewCluster(t)
	r := NewRun(t, c, "statejoin", stateJoinerConfig, func(r *Run) {
		ctx := context.Background()
		sc := schema.Schema{Columns: []schema.Column{{Name: "user", Type: schema.TypeString}, {Name: "amount", Type: schema.TypeInt64}}}
		if err := r.Store.WriteStaticTable(ctx, r.Root+"/events/2026-12-06T00:00:00", sc, rows); err != nil {
			t.Fatal(err)
		}
		if err := r.Store.EnsureUserTable(ctx, ytstore.UserTable{Path: r.Root + "/audit", Kind: ytstore.UserSortedTable, Schema: auditSchema}); err != nil {
			t.Fatal(err)
		}
	})
	audited := func() int64 {
		got, err := r.Store.SelectRows(context.Background(), fmt.Sprintf("sum(events) AS n FROM [%s/audit] GROUP BY 1", r.Root))
		if err != nil || len(got) == 0 {
			return 0
		}
		return toInt(got[0]["n"])
	}
	r.Start(3)
	r.WaitFor(3*time.Minute, func() (bool, string) {
		n := audited()
		return n >= events/3 || r.State() == "completed", fmt.Sprintf("%d events audited, waiting for %d", n, events/3)
	})
	r.KillWorker()
	r.WaitFor(3*time.Minute, func() (bool, string) {
		n := audited()
		return n >= 2*events/3 || r.State() == "completed", fmt.Sprintf("%d events audited, waiting for %d", n, 2*events/3)
	})
	r.KillController()
	r.WaitCompleted(5 * time.Minute)

	got, err := r.Store.SelectRows(context.Background(), fmt.Sprintf("user, events, behind FROM [%s/audit]", r.Root))
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	seen := map[string]bool{}
	for _, row := range got {
		u := row["user"].(string)
		seen[u] = true
		if e, b := toInt(row["events"]), toInt(row["behind"]); e != model[u] || b != 0 {
			bad = append(bad, fmt.Sprintf("%s: {events %d; behind %d}, want {%d; 0}", u, e, b, model[u]))
		}
	}
	for u, n := range model {
		if !seen[u] {
			bad = append(bad, fmt.Sprintf("%s: no row, want {events %d}", u, n))
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Fatalf("the audit table differs from the model in %d users:\n%s", len(bad), strings.Join(bad[:min(len(bad), 20)], "\n"))
	}
	t.Logf("%d events, %d users audited, %d processes killed", events, len(got), r.Kills)
}
