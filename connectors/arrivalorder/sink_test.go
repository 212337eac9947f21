package arrivalorder

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytstore"
)

// TestSinkRefusesForeignTables: on ytlocal, a delivery repeated in full writes nothing more;
// a slot table that exists without @table_timestamp and a directory another sink owns are
// refused with errors naming them, and nothing is written.
func TestSinkRefusesForeignTables(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := ytlocal.Start(ctx, ytlocal.Config{})
	require.NoError(t, err)
	defer func() { _ = srv.Close() }()
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: srv.Addr(), Path: "//p"})
	require.NoError(t, err)
	defer st.Close()

	now := time.Date(2026, 12, 6, 10, 0, 30, 0, time.UTC)
	sink := func(dir, name string) *Sink {
		p := &Params{OutputDirectory: dir, TablePeriod: time.Minute, TableTTL: time.Hour, TableNameFormat: "%H:%M"}
		return &Sink{dir: st, params: p, dyn: defaultDynamic(), partition: "p0", now: func() time.Time { return now },
			owner: Owner{Pipeline: "//p", Computation: "c", Sink: name}}
	}
	batch := []connector.Batch{{FirstSeq: 0, LastSeq: 1, Rows: []connector.Delivery{
		{MessageID: "a", SequenceNumber: 0, SystemTimestamp: uint64(now.UnixMicro()), Row: map[string]any{"id": uint64(0)}},
		{MessageID: "b", SequenceNumber: 1, SystemTimestamp: uint64(now.UnixMicro()), Row: map[string]any{"id": uint64(1)}},
	}}}
	n, err := sink("//out", "s").Deliver(ctx, batch)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	n, err = sink("//out", "s").Deliver(ctx, batch)
	require.NoError(t, err, "a repeated delivery")
	assert.Equal(t, 1, n)
	dir, err := ReadDirectory(ctx, st, "//out")
	require.NoError(t, err)
	require.NoError(t, dir.Check())
	require.Len(t, dir.Tables, 1)
	assert.Len(t, dir.Tables[0].Rows, 2, "the repeated delivery wrote nothing")

	_, err = sink("//out", "other").Deliver(ctx, batch)
	require.ErrorIs(t, err, ErrOwned)
	assert.ErrorContains(t, err, "arrival-order sink //out (partition p0): output directory is owned by another sink: pipeline //p computation c sink s, not pipeline //p computation c sink other")

	sc := schema.Schema{Columns: []schema.Column{{Name: "id", Type: schema.TypeUint64}}}
	require.NoError(t, st.WriteStaticTable(ctx, "//foreign/10:00", sc, []map[string]any{{"id": uint64(7)}}))
	_, err = sink("//foreign", "s").Deliver(ctx, batch)
	require.ErrorIs(t, err, ytstore.ErrForeignNode)
	assert.ErrorContains(t, err, "//foreign/10:00 has no @table_timestamp")
	rows, err := st.ReadTableRange(ctx, "//foreign/10:00", 0, 10)
	require.NoError(t, err)
	assert.Len(t, rows, 1, "nothing appended to the foreign table")
}

// TestSinkSplitsTransactions: with max_row_count (then max_data_weight) below a delivery,
// the batches commit in several transactions: when a later one fails (its slot table is
// foreign), the earlier ones stay written and Deliver counts them.
func TestSinkSplitsTransactions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := ytlocal.Start(ctx, ytlocal.Config{})
	require.NoError(t, err)
	defer func() { _ = srv.Close() }()
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: srv.Addr(), Path: "//p"})
	require.NoError(t, err)
	defer st.Close()
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		dir string
		dyn Dynamic
	}{
		{"//rows", Dynamic{MaxRowCount: 2, MaxDataWeight: 1 << 30, RetryBackoff: time.Second}},
		{"//bytes", Dynamic{MaxRowCount: 1000, MaxDataWeight: 20, RetryBackoff: time.Second}},
	} {
		// The third batch's slot (10:02) is a table the sink did not make.
		sc := schema.Schema{Columns: []schema.Column{{Name: "id", Type: schema.TypeUint64}}}
		require.NoError(t, st.WriteStaticTable(ctx, c.dir+"/10:02", sc, nil))
		var batches []connector.Batch
		for i := range int64(3) {
			at := uint64(t0.Add(time.Duration(i) * time.Minute).UnixMicro())
			batches = append(batches, connector.Batch{FirstSeq: 2 * i, LastSeq: 2*i + 1, Rows: []connector.Delivery{
				{MessageID: "m", SequenceNumber: 2 * i, SystemTimestamp: at, Row: map[string]any{"id": uint64(2 * i)}},
				{MessageID: "m", SequenceNumber: 2*i + 1, SystemTimestamp: at, Row: map[string]any{"id": uint64(2*i + 1)}},
			}})
		}
		dyn := c.dyn
		s := &Sink{dir: st, params: &Params{OutputDirectory: c.dir, TablePeriod: time.Minute, TableTTL: time.Hour, TableNameFormat: "%H:%M"},
			dyn: &dyn, partition: "p0", now: func() time.Time { return t0.Add(5 * time.Minute) }, owner: Owner{Pipeline: "//p", Computation: "c", Sink: "s"}}
		n, err := s.Deliver(ctx, batches)
		require.ErrorIs(t, err, ytstore.ErrForeignNode, c.dir)
		assert.Equal(t, 2, n, "%s: the first two batches committed on their own", c.dir)
		dir, err := ReadDirectory(ctx, st, c.dir)
		require.NoError(t, err)
		assert.Equal(t, int64(3), dir.Progress.Partitions["p0"].SequenceNumber, c.dir)
		var ids []uint64
		for _, tb := range dir.Tables {
			for _, r := range tb.Rows {
				ids = append(ids, r["id"].(uint64))
			}
		}
		assert.ElementsMatch(t, []uint64{0, 1, 2, 3}, ids, c.dir)
	}
}
