package statictable_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/connectors/connectortest"
	"github.com/ytflow/yt-flow/ytstore"
)

// TestStaticTableSourceConformance: the static table source delivers every row of a directory of hourly
// tables exactly once while workers are killed after reads, after commits and between
// partitions. The directory also holds a table the name filter leaves out and a map node
// skip_non_table_nodes skips; each table is cut into two read ranges.
func TestStaticTableSourceConformance(t *testing.T) {
	connectortest.RunSource(t, connectortest.Source{
		Class: "static_table",
		Setup: func(ctx context.Context, st *ytstore.Store, root string, rows int) (string, []schema.Column, error) {
			dir := root + "/logs"
			sc := schema.Schema{Columns: []schema.Column{{Name: "id", Type: schema.TypeUint64}, {Name: "text", Type: schema.TypeString}}}
			const tables = 4
			start := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
			for i := range tables {
				var batch []map[string]any
				for id := i; id < rows; id += tables {
					batch = append(batch, map[string]any{"id": uint64(id), "text": fmt.Sprint("row ", id)})
				}
				name := start.Add(time.Duration(i) * time.Hour).Format("2006-01-02T15:04:05")
				if err := st.WriteStaticTable(ctx, dir+"/"+name, sc, batch); err != nil {
					return "", nil, err
				}
			}
			if err := st.WriteStaticTable(ctx, dir+"/unfiltered", sc, []map[string]any{{"id": uint64(rows)}}); err != nil {
				return "", nil, err
			}
			if err := st.WriteStaticTable(ctx, dir+"/2027-01-01T00:00:00/nested", sc, nil); err != nil {
				return "", nil, err
			}
			params := fmt.Sprintf(`{tables_path = %q; table_name_filter = "^\\d{4}-"; skip_non_table_nodes = %%true;
				range_row_count = %d; finite = %%true}`, dir, (rows/tables+1)/2)
			return params, []schema.Column{{Name: "text", Type: schema.TypeString}}, nil
		},
	})
}
