package servicelog

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytstore"
)

// TestCycleEveryKeyOnce: a non-finite reader of one hash range, on ytlocal, emits every key
// of its range once per cycle, across three cycles and with re-reads from an earlier
// committed position (a restart) in the middle of a cycle; the next cycle waits for
// desired_cycle_time; values changed between cycles are seen by the next cycle. A table whose
// first key column is not a uint64 is refused, naming the table and the fetcher's path.
func TestCycleEveryKeyOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := ytlocal.Start(ctx, ytlocal.Config{})
	require.NoError(t, err)
	defer func() { _ = srv.Close() }()
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: srv.Addr(), Path: "//p"})
	require.NoError(t, err)
	defer st.Close()

	sc := schema.Schema{UniqueKeys: true, Columns: []schema.Column{
		{Name: "hash", Type: schema.TypeUint64, SortOrder: schema.SortAscending},
		{Name: "v", Type: schema.TypeInt64},
	}}
	require.NoError(t, st.EnsureUserTable(ctx, ytstore.UserTable{Path: "//state", Kind: ytstore.UserSortedTable, Schema: sc}))
	const keys = 300
	write := func(v int64) {
		var rows []map[string]any
		for i := range uint64(keys) {
			rows = append(rows, map[string]any{"hash": i * 0x9E3779B97F4A7C15, "v": v})
		}
		require.NoError(t, st.InsertRows(ctx, "//state", rows))
	}
	write(0)

	now := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	p := &Params{Fetchers: []Fetcher{{TablePath: "//state", Attempts: 1}}}
	// Range 1 of 2: the keys whose hash has the top bit set.
	r := &reader{st: st, params: p, dyn: &Dynamic{DesiredPartitionCount: 2, DesiredCycleTime: time.Minute}, index: PartitionIndex(2, 1), now: func() time.Time { return now }}
	inRange := 0
	for i := range uint64(keys) {
		if i*0x9E3779B97F4A7C15 >= 1<<63 {
			inRange++
		}
	}
	require.Positive(t, inRange)

	var pos connector.Position
	lastOffset := int64(-1)
	for cycle := range int64(3) {
		cycleStart := now
		seen := map[uint64]int{}
		restarted := false
		for {
			rows, err := r.Read(ctx, pos, 40)
			require.NoError(t, err)
			if len(rows) == 0 {
				break
			}
			if !restarted && len(seen) > inRange/2 {
				// A restart: the last read was not committed; read again from pos.
				restarted = true
				continue
			}
			for _, row := range rows {
				require.Greater(t, row.Offset, lastOffset, "offsets increase")
				lastOffset = row.Offset
				require.Equal(t, cycle, row.Offset>>32, "the offset's cycle")
				require.Equal(t, uint64(cycleStart.UnixMicro()), row.Timestamp, "a row's time is its cycle's start")
				h := row.Columns["hash"].(uint64)
				require.GreaterOrEqual(t, h, uint64(1)<<63, "key out of range")
				require.Equal(t, cycle, row.Columns["v"], "cycle %d reads the values written before it", cycle)
				seen[h]++
			}
			pos = rows[len(rows)-1].Next
		}
		require.True(t, restarted)
		require.Len(t, seen, inRange, "cycle %d: every key of the range", cycle)
		for h, n := range seen {
			require.Equal(t, 1, n, "cycle %d: key %d once", cycle, h)
		}
		// The next cycle waits for desired_cycle_time since this one started.
		write(cycle + 1)
		now = now.Add(59 * time.Second)
		rows, err := r.Read(ctx, pos, 40)
		require.NoError(t, err)
		require.Empty(t, rows, "cycle %d: the next cycle starts a minute after this one started", cycle)
		now = now.Add(time.Second)
	}

	// A first key column that is not a uint64.
	bad := schema.Schema{UniqueKeys: true, Columns: []schema.Column{{Name: "name", Type: schema.TypeString, SortOrder: schema.SortAscending}, {Name: "v", Type: schema.TypeInt64}}}
	require.NoError(t, st.EnsureUserTable(ctx, ytstore.UserTable{Path: "//bad", Kind: ytstore.UserSortedTable, Schema: bad}))
	rb := &reader{st: st, params: &Params{Fetchers: []Fetcher{{TablePath: "//bad", Attempts: 1}}}, dyn: defaultDynamic(), index: PartitionIndex(1, 0), now: time.Now}
	_, err = rb.Read(ctx, nil, 10)
	require.ErrorIs(t, err, ErrKeySchema)
	require.ErrorContains(t, err, "//bad (table_joiner/fetchers/0/table_path): first key column name is utf8, want uint64")
}
