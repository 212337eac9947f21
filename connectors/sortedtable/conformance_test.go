package sortedtable_test

import (
	"context"
	"fmt"
	"testing"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/connectors/connectortest"
	"github.com/ytflow/yt-flow/ytstore"
)

// TestSinkConformance: rows upserted in the epoch transaction are in the table exactly once
// while workers are killed between the write and the commit.
func TestSinkConformance(t *testing.T) {
	connectortest.RunSink(t, connectortest.Sink{
		Class: "sorted_table",
		Setup: func(ctx context.Context, st *ytstore.Store, root string) (string, error) {
			table := root + "/out"
			err := st.EnsureUserTable(ctx, ytstore.UserTable{Path: table, Kind: ytstore.UserSortedTable, Schema: schema.Schema{Columns: []schema.Column{
				{Name: "id", Type: schema.TypeUint64, SortOrder: schema.SortAscending},
				{Name: "seen", Type: schema.TypeBoolean},
			}}})
			return fmt.Sprintf("{table_path = %q}", table), err
		},
		ReadBack: func(ctx context.Context, st *ytstore.Store, root string) ([]uint64, error) {
			rows, err := st.SelectRows(ctx, fmt.Sprintf("id FROM [%s]", root+"/out"))
			var ids []uint64
			for _, r := range rows {
				id, ok := r["id"].(uint64)
				if !ok {
					return nil, fmt.Errorf("id %v (%T)", r["id"], r["id"])
				}
				ids = append(ids, id)
			}
			return ids, err
		},
	})
}
