package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/connectors/arrivalorder"
)

// arrivalOrderConfig reads the static tables of ROOT/logs into a keyed passthrough whose
// arrival-order sink writes one-second slot tables into ROOT/out.
const arrivalOrderConfig = `{
    path = "ROOT/pipeline";
    spec = {
        computations = {
            read = {
                computation_class_name = "NYT::NFlow::TSwiftPassthroughOrderedSourceComputation";
                source_streams = {logs = {
                    source_class_name = "NYT::NFlow::NStaticTableConnector::TSource";
                    parameters = {tables_path = "ROOT/logs"; range_row_count = 1000; finite = %true};
                }};
                output_stream_ids = ["rows"];
            };
            store = {
                computation_class_name = "NYT::NFlow::TPassthroughComputation";
                group_by_schema = [
                    {name = "hash"; type = "uint64"; required = %true; expression = "farm_hash(id)"};
                    {name = "id"; type = "uint64"; required = %true};
                ];
                input_stream_ids = ["rows"];
                output_stream_ids = ["stored"];
                sinks = {out = {
                    sink_class_name = "NYT::NFlow::TArrivalOrderTableSink";
                    input_stream_ids = ["stored"];
                    parameters = {output_directory = "ROOT/out"; table_period = "1s"; table_ttl = "1h"};
                }};
            };
        };
        streams = {
            rows = {schema = [{name = "id"; type = "uint64"; required = %true}; {name = "text"; type = "string"}]};
            stored = {schema = [{name = "id"; type = "uint64"; required = %true}; {name = "text"; type = "string"}]};
        };
    };
    dynamic_spec = {computations = {
        read = {batch_duration = 50; max_rows_per_batch = 200};
        // A killed worker's master transaction holds the directory until it times out
        // (transaction_timeout, Flow's default 5m): 10s lets the other partition go on soon.
        store = {batch_duration = 50; max_rows_per_batch = 200; parameters = {desired_partition_count = 2};
            sinks = {out = {parameters = {transaction_timeout = 10000}}}};
    }};
}`

// TestArrivalOrderEndToEnd: hourly static tables flow through a keyed passthrough into the
// arrival-order sink while the real binary runs as processes: a worker is killed with
// SIGKILL a quarter of the way, the controller half-way. When the pipeline completes, every
// input row is in exactly one output table and the directory's @progress names exactly the
// slot tables there are, each with its @table_timestamp and @expiration_time.
func TestArrivalOrderEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e fault test")
	}
	c := NewCluster(t)
	const tables, perTable = 4, 3000
	total := tables * perTable
	r := NewRun(t, c, "arrivalorder", arrivalOrderConfig, func(r *Run) {
		sc := schema.Schema{Columns: []schema.Column{{Name: "id", Type: schema.TypeUint64}, {Name: "text", Type: schema.TypeString}}}
		start := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
		for i := range tables {
			var rows []map[string]any
			for j := range perTable {
				id := uint64(i*perTable + j)
				rows = append(rows, map[string]any{"id": id, "text": fmt.Sprint("row ", id)})
			}
			name := start.Add(time.Duration(i) * time.Hour).Format("2006-01-02T15:04:05")
			if err := r.Store.WriteStaticTable(context.Background(), r.Root+"/logs/"+name, sc, rows); err != nil {
				t.Fatal(err)
			}
		}
	})
	written := func() int64 {
		nodes, err := r.Store.ListDir(context.Background(), r.Root+"/out")
		if err != nil {
			return 0
		}
		var n int64
		for _, nd := range nodes {
			n += nd.RowCount()
		}
		return n
	}
	r.Start(3)
	r.WaitFor(3*time.Minute, func() (bool, string) {
		n := written()
		return n >= int64(total/4), fmt.Sprintf("%d of %d rows written", n, total/4)
	})
	t.Logf("%d of %d rows written, state %q: killing a worker", written(), total, r.State())
	r.KillWorker()
	r.WaitFor(3*time.Minute, func() (bool, string) {
		n := written()
		return n >= int64(total/2) || r.State() == "completed", fmt.Sprintf("%d of %d rows written", n, total/2)
	})
	t.Logf("%d of %d rows written, state %q: killing the controller", written(), total, r.State())
	r.KillController()
	r.WaitCompleted(5 * time.Minute)

	dir, err := arrivalorder.ReadDirectory(context.Background(), r.Store, r.Root+"/out")
	if err != nil {
		t.Fatal(err)
	}
	if err := dir.Check(); err != nil {
		t.Fatalf("@progress: %v", err)
	}
	seen := map[uint64]string{}
	var dup []string
	for _, tb := range dir.Tables {
		if tb.TableTimestamp == "" || tb.ExpirationTime == "" {
			t.Errorf("table %s: @table_timestamp %q, @expiration_time %q", tb.Name, tb.TableTimestamp, tb.ExpirationTime)
		}
		for _, row := range tb.Rows {
			id, _ := row["id"].(uint64)
			if prev, ok := seen[id]; ok {
				dup = append(dup, fmt.Sprintf("id %d in %s and %s", id, prev, tb.Name))
			}
			seen[id] = tb.Name
			if row["text"] != fmt.Sprint("row ", id) {
				t.Errorf("table %s: id %d has text %v", tb.Name, id, row["text"])
			}
		}
	}
	if len(dup) > 0 {
		t.Fatalf("%d rows in more than one output table, e.g. %v", len(dup), dup[:min(len(dup), 5)])
	}
	for id := range uint64(total) {
		if _, ok := seen[id]; !ok {
			t.Fatalf("row %d is in no output table (%d of %d are)", id, len(seen), total)
		}
	}
	if len(seen) != total {
		t.Fatalf("%d distinct ids in the output, want %d", len(seen), total)
	}
	t.Logf("%d rows in %d slot tables, %d partition frontiers, %d processes killed", total, len(dir.Tables), len(dir.Progress.Partitions), r.Kills)
}
