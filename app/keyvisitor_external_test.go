package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/ytstore"
)

// VisitTotals is the visit-only computation of TestKeyVisitorExternalNames: every visit adds 1
// to the visits column of the key's row of the external state /totals.
func init() {
	flow.Register("VisitTotals", flow.Process{OnVisit: func(ctx *flow.Context, v *flow.Visit) error {
		ext := flow.ExternalStateOf(ctx, "/totals")
		row, ok := ext.Get()
		if !ok {
			return fmt.Errorf("key %v: visited without a row in /totals", ctx.Key())
		}
		n, _ := row["visits"].(int64)
		ext.Set(flow.Row{"visits": n + 1})
		return nil
	}})
}

const externalVisitSpec = `{
    path = "//home/kvext/pipeline";
    spec = {computations = {visitor = {
        computation_class_name = "NYT::NFlow::TProcessFunctionComputation";
        processing_function = "VisitTotals";
        group_by_schema = [{name = "hash"; type = "uint64"; required = %true}; {name = "user"; type = "string"; required = %true}];
        key_visitor_streams = {visits = {external_names = ["/totals"]}};
        external_state_managers = {"/totals" = {
            external_state_manager_class_name = "NYT::NFlow::TSimpleExternalStateManager";
            parameters = {path = "//home/kvext/totals"};
        }};
    }}};
    dynamic_spec = {computations = {visitor = {
        key_visitor_streams = {visits = {parameters = {period = 1000; max_scan_rows_per_iteration = 7}}};
        batch_duration = 100; empty_batch_backoff = 100;
        parameters = {desired_partition_count = 2};
    }}};
}`

const externalVisitSetup = `{
    tables = [{
        path = "//home/kvext/totals"; kind = sorted_table;
        schema = [
            {name = hash; type = uint64; sort_order = ascending};
            {name = user; type = string; sort_order = ascending};
            {name = visits; type = int64};
        ];
    }];
    inputs = [{table = "//home/kvext/totals"; file = "totals.yson"; format = yson}];
}`

// TestKeyVisitorExternalNames: a visit-only computation whose key visitor names an external
// state (external_names = ["/totals"]) and no internal state visits the key of every row of
// the user's table, 150 rows over two partitions, three users per key hash, scanned 7 rows at
// a time (a hash is never split between scans), once per pass: after each of two runs on the
// same data (period 1 s, interrupted two passes on) each row's visits column equals the
// passes its partition's committed cursor went past it.
func TestKeyVisitorExternalNames(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a pipeline end to end")
	}
	dir := t.TempDir()
	var rows []string
	seed := map[uint64]int64{}
	for i := range 150 {
		h := uint64(i/3)*(1<<58) + 12345 // three users per hash, over both partitions
		user := fmt.Sprintf("u%03d", i)
		rows = append(rows, fmt.Sprintf("{hash = %du; user = %q; visits = 0}", h, user))
		seed[h] = 0
	}
	files := map[string]string{"pipeline.yson": externalVisitSpec, "local.yson": externalVisitSetup, "totals.yson": strings.Join(rows, ";\n") + ";\n"}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runVisits(t, filepath.Join(dir, "pipeline.yson"), filepath.Join(dir, "local.yson"), "//home/kvext/pipeline", seed,
		func(ctx context.Context, st *ytstore.Store) (map[uint64]int64, error) {
			got, err := st.SelectRows(ctx, "hash, user, visits FROM [//home/kvext/totals]")
			if err != nil {
				return nil, err
			}
			if len(got) != 150 {
				return nil, fmt.Errorf("%d rows in the table, want 150", len(got))
			}
			out := map[uint64]int64{}
			for _, r := range got {
				h, _ := r["hash"].(uint64)
				n, _ := r["visits"].(int64)
				if v, ok := out[h]; ok && v != n {
					return nil, fmt.Errorf("hash %d: users visited %d and %d times", h, v, n)
				}
				out[h] = n
			}
			return out, nil
		})
}
