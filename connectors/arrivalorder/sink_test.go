package arrivalorder

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yt"
	"go.ytsaurus.tech/yt/go/yt/ythttp"

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

// txObserver runs UpdateDir on the real store, counting the transactions, and inside each
// reads the @timeout (ms) of every master transaction open on the server through the SDK
// client.
type txObserver struct {
	st       *ytstore.Store
	yc       yt.Client
	calls    int
	timeouts []int64
}

func (o *txObserver) UpdateDir(ctx context.Context, dir, attr string, timeout time.Duration, plan func(cur yson.RawValue) (ytstore.DirUpdate, error)) error {
	o.calls++
	return o.st.UpdateDir(ctx, dir, attr, timeout, func(cur yson.RawValue) (ytstore.DirUpdate, error) {
		var ids []string
		if err := o.yc.ListNode(ctx, ypath.Path("//sys/transactions"), &ids, nil); err != nil {
			return ytstore.DirUpdate{}, err
		}
		for _, id := range ids {
			var ms int64
			if err := o.yc.GetNode(ctx, ypath.Path("//sys/transactions").Child(id).Attr("timeout"), &ms, nil); err != nil {
				return ytstore.DirUpdate{}, err
			}
			o.timeouts = append(o.timeouts, ms)
		}
		return plan(cur)
	})
}

// TestSinkAppliesTransactionTimeoutAndDataWeight: on ytlocal, the sink's master transaction
// has the timeout transaction_timeout sets (7s, read from the server inside it); with
// data_weight_column a row weighs that column's value for max_data_weight — three batches of
// two rows of weight 20 and max_data_weight 100 take two transactions, where their YSON sizes
// would fit one — a null value weighs the row's YSON, and a negative one fails the delivery
// naming the message and the column, writing nothing.
func TestSinkAppliesTransactionTimeoutAndDataWeight(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := ytlocal.Start(ctx, ytlocal.Config{})
	require.NoError(t, err)
	defer func() { _ = srv.Close() }()
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: srv.Addr(), Path: "//p"})
	require.NoError(t, err)
	defer st.Close()
	yc, err := ythttp.NewClient(&yt.Config{Proxy: srv.Addr(), Token: "x"})
	require.NoError(t, err)
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	batches := func(weight any) []connector.Batch {
		var out []connector.Batch
		for i := range int64(3) {
			out = append(out, connector.Batch{FirstSeq: 2 * i, LastSeq: 2*i + 1, Rows: []connector.Delivery{
				{MessageID: "a", SequenceNumber: 2 * i, SystemTimestamp: uint64(t0.UnixMicro()), Row: map[string]any{"id": uint64(2 * i), "w": weight}},
				{MessageID: "b", SequenceNumber: 2*i + 1, SystemTimestamp: uint64(t0.UnixMicro()), Row: map[string]any{"id": uint64(2*i + 1), "w": weight}},
			}})
		}
		return out
	}
	deliver := func(dir, column string, weight any) (*txObserver, int, error) {
		o := &txObserver{st: st, yc: yc}
		s := &Sink{dir: o, params: &Params{OutputDirectory: dir, TablePeriod: time.Minute, TableTTL: time.Hour, TableNameFormat: "%H:%M", DataWeightColumn: column},
			dyn:       &Dynamic{MaxRowCount: 1000, MaxDataWeight: 100, TransactionTimeout: 7 * time.Second, RetryBackoff: time.Second},
			partition: "p0", now: func() time.Time { return t0.Add(5 * time.Minute) }, owner: Owner{Pipeline: "//p", Computation: "c", Sink: "s"}}
		n, err := s.Deliver(ctx, batches(weight))
		return o, n, err
	}

	o, n, err := deliver("//plain", "", int64(30))
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	assert.Equal(t, 1, o.calls, "without data_weight_column six small rows fit one transaction")
	assert.Contains(t, o.timeouts, int64(7000), "the sink's transaction has transaction_timeout")

	o, n, err = deliver("//weighted", "w", int64(20))
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	assert.Equal(t, 2, o.calls, "batches of weight 40: two fit 100, the third takes a second transaction")
	dir, err := ReadDirectory(ctx, st, "//weighted")
	require.NoError(t, err)
	require.NoError(t, dir.Check())
	rows := 0
	for _, tb := range dir.Tables {
		rows += len(tb.Rows)
	}
	assert.Equal(t, 6, rows)

	o, _, err = deliver("//nulls", "w", nil)
	require.NoError(t, err)
	assert.Equal(t, 1, o.calls, "a null weight is the row's YSON size")

	o, n, err = deliver("//negative", "w", int64(-1))
	require.ErrorIs(t, err, ErrBadDataWeight)
	assert.ErrorContains(t, err, `arrival-order sink //negative (partition p0): message a: data_weight_column "w": data weight must be a non-negative integer, got -1 (int64)`)
	assert.Zero(t, n)
	assert.Zero(t, o.calls, "nothing written")
}
