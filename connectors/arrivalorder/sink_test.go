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
