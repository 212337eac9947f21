package statictable

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/ytlocal/ytlocaltest"
	"github.com/ytflow/yt-flow/ytstore"
)

// TestStaticTableSourceOnServer lists a directory on ytlocal through the class's constructors: a new
// table adds partitions and keeps the others; symlinks are followed or ignored; a node that
// is not a static table is an error unless skipped; a table whose name is out of order is
// an error naming both tables; a reader reads its range and then nothing, paced by
// max_rows_per_second and bounded by min_event_timestamp.
func TestStaticTableSourceOnServer(t *testing.T) {
	ctx := context.Background()
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: ytlocaltest.New(t), Path: "//home/p/pipe"})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	sc := schema.Schema{Columns: []schema.Column{{Name: "id", Type: schema.TypeUint64}}}
	write := func(path string, n int) {
		var rows []map[string]any
		for i := range n {
			rows = append(rows, map[string]any{"id": uint64(i)})
		}
		require.NoError(t, st.WriteStaticTable(ctx, path, sc, rows))
	}
	ctors, ok := connector.SourceOf(SourceClass)
	require.True(t, ok)
	env := connector.Env{Store: st, SourcePartition: -1}
	params := func(extra string) *SourceParams {
		p := &SourceParams{TablesPath: "//logs", EventTimestamp: Locator{"key", "iso8601"},
			SystemTimestamp: Locator{"key", "iso8601"}, RangeRowCount: 4, Finite: true}
		p.IgnoreSymlinks = strings.Contains(extra, "ignore_symlinks")
		p.SkipNonTableNodes = strings.Contains(extra, "skip")
		return p
	}
	list := func(p *SourceParams) ([]int64, error) { return ctors.Partitions(ctx, env, p) }

	write("//logs/2026-12-06T01", 6)
	first, err := list(params(""))
	require.NoError(t, err)
	require.Len(t, first, 2)
	write("//logs/2026-12-06T02", 3)
	second, err := list(params(""))
	require.NoError(t, err)
	require.Equal(t, first, second[:2])
	require.Equal(t, PartitionIndex(time.Date(2026, 12, 6, 2, 0, 0, 0, time.UTC), 0), second[2])

	// A reader of the second range of the first table: rows 4 and 5, then nothing.
	rd, err := ctors.Source(connector.Env{Store: st, SourcePartition: first[1]}, params(""))
	require.NoError(t, err)
	rows, err := rd.Read(ctx, nil, 10)
	require.NoError(t, err)
	require.Len(t, rows, 2)
	require.Equal(t, uint64(4), rows[0].Columns["id"])
	require.Equal(t, int64(1), rows[1].Offset)
	require.Equal(t, uint64(time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC).UnixMicro()), rows[0].Timestamp)
	rows, err = rd.Read(ctx, rows[1].Next, 10)
	require.NoError(t, err)
	require.Empty(t, rows)
	require.Equal(t, "static table //logs/2026-12-06T01 rows [4, 6)", rd.String())

	// max_rows_per_second is shared by the 3 partitions listed: one row a second for this
	// reader, on its clock; an event bound outside the table reads nothing.
	clock := time.Unix(5000, 0)
	paced := &reader{store: st, params: params(""), index: first[0], now: func() time.Time { return clock },
		dyn: &SourceDynamic{MaxRowsPerSecond: 3, MaxBytesPerSecond: unlimited}}
	rows, err = paced.Read(ctx, nil, 10)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	clock = clock.Add(2 * time.Second)
	rows, err = paced.Read(ctx, rows[0].Next, 10)
	require.NoError(t, err)
	require.Len(t, rows, 1, "the bucket holds one second")
	require.Equal(t, int64(1), rows[0].Offset)
	late := &reader{store: st, params: params(""), index: first[0], now: time.Now,
		dyn: &SourceDynamic{MinEventTimestamp: time.Date(2026, 12, 6, 2, 0, 0, 0, time.UTC), MaxRowsPerSecond: unlimited, MaxBytesPerSecond: unlimited}}
	rows, err = late.Read(ctx, nil, 10)
	require.NoError(t, err)
	require.Empty(t, rows, "a table before min_event_timestamp")

	// A link is followed (and must have its own place in the order), or ignored.
	write("//data/x", 1)
	_, err = st.NodeInfo(ctx, "//data/x")
	require.NoError(t, err)
	require.NoError(t, st.Link(ctx, "//data/x", "//logs/2026-12-06T03"))
	withLink, err := list(params(""))
	require.NoError(t, err)
	require.Len(t, withLink, 4)
	ignored, err := list(params("ignore_symlinks"))
	require.NoError(t, err)
	require.Equal(t, second, ignored)

	// A map node is an error unless skipped.
	write("//logs/2026-12-06T04/inner", 1)
	_, err = list(params("ignore_symlinks"))
	require.ErrorContains(t, err, "//logs/2026-12-06T04 is a map_node, not a static table")
	skipped, err := list(params("ignore_symlinks skip"))
	require.NoError(t, err)
	require.Equal(t, second, skipped)

	// Event timestamps out of the table order (by name) name both tables.
	p := params("ignore_symlinks skip")
	p.EventTimestamp = Locator{"row_count", ""} // 6 then 3 rows: not increasing
	_, err = list(p)
	require.ErrorContains(t, err, "table //logs/2026-12-06T02 (1970-01-01T00:00:03Z) follows table //logs/2026-12-06T01 (1970-01-01T00:00:06Z)")

	// An explicit list reads the tables given, in the order given.
	explicit := params("")
	explicit.TablesPath, explicit.Tables = "", []string{"//logs/2026-12-06T02", "//logs/2026-12-06T03"}
	ix, err := list(explicit)
	require.NoError(t, err)
	require.True(t, slices.Equal(ix, withLink[2:]), "%v vs %v", ix, withLink)
	explicit.Tables = []string{"//logs/2026-12-06T03", "//logs/2026-12-06T02"}
	_, err = list(explicit)
	require.ErrorContains(t, err, "table //logs/2026-12-06T02")
}
