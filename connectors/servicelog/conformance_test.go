package servicelog_test

import (
	"context"
	"fmt"
	"testing"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/connectors/connectortest"
	"github.com/ytflow/yt-flow/ytstore"
)

// spread is the first key column of row id: spread over [0, 2^64) as a hash is.
func spread(id uint64) uint64 { return id * 0x9E3779B97F4A7C15 }

// TestServiceLogSourceConformance: a finite service log (one cycle) joining two sorted
// tables delivers every key exactly once while workers are killed after reads, after commits
// and between partitions (five hash ranges); keys only the first table has are there too,
// with ispresent telling which table had them.
func TestServiceLogSourceConformance(t *testing.T) {
	connectortest.RunSource(t, connectortest.Source{
		Class: "service_log",
		Setup: func(ctx context.Context, st *ytstore.Store, root string, rows int) (string, []schema.Column, error) {
			a, b := root+"/state", root+"/extra"
			key := []schema.Column{{Name: "hash", Type: schema.TypeUint64, SortOrder: schema.SortAscending}, {Name: "id", Type: schema.TypeUint64, SortOrder: schema.SortAscending}}
			for _, tb := range []struct {
				path string
				col  string
			}{{a, "text"}, {b, "note"}} {
				sc := schema.Schema{UniqueKeys: true, Columns: append(append([]schema.Column{}, key...), schema.Column{Name: tb.col, Type: schema.TypeString})}
				if err := st.EnsureUserTable(ctx, ytstore.UserTable{Path: tb.path, Kind: ytstore.UserSortedTable, Schema: sc}); err != nil {
					return "", nil, err
				}
			}
			var ra, rb []map[string]any
			for i := range rows {
				id := uint64(i)
				ra = append(ra, map[string]any{"hash": spread(id), "id": id, "text": fmt.Sprint("row ", id)})
				if id%2 == 0 {
					rb = append(rb, map[string]any{"hash": spread(id), "id": id, "note": fmt.Sprint("note ", id)})
				}
			}
			if err := st.InsertRows(ctx, a, ra); err != nil {
				return "", nil, err
			}
			if err := st.InsertRows(ctx, b, rb); err != nil {
				return "", nil, err
			}
			params := fmt.Sprintf(`{finite = %%true; table_joiner = {fetchers = [{table_path = %q}; {table_path = %q; prefix = "b_"}]}}`, a, b)
			return params, []schema.Column{
				{Name: "hash", Type: schema.TypeUint64}, {Name: "text", Type: schema.TypeString},
				{Name: "b_note", Type: schema.TypeString}, {Name: "ispresent", Type: schema.TypeAny},
			}, nil
		},
	})
}
