package ytlocal_test

import (
	"context"
	"fmt"
	"math/rand"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/migrate"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yt"
	"go.ytsaurus.tech/yt/go/yt/ythttp"
	"go.ytsaurus.tech/yt/go/yterrors"

	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytlocal/ytlocaltest"
	"github.com/ytflow/yt-flow/ytql"
)

type kvRow struct {
	Key   string `yson:"key,key"`
	Value int64  `yson:"value"`
}

type kvKey struct {
	Key string `yson:"key"`
}

func newDynClient(t *testing.T) (context.Context, yt.Client) {
	t.Helper()
	addr := ytlocaltest.New(t)
	yc, err := ythttp.NewClient(&yt.Config{Proxy: addr})
	require.NoError(t, err)
	t.Cleanup(yc.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx, yc
}

func newSortedTable(t *testing.T, ctx context.Context, yc yt.Client) ypath.Path {
	t.Helper()
	return newMountedTable(t, ctx, yc, schema.MustInfer(&kvRow{}))
}

// newMountedTable creates a dynamic table with schema s under //tmp and mounts it.
func newMountedTable(t testing.TB, ctx context.Context, yc yt.Client, s schema.Schema) ypath.Path {
	t.Helper()
	p := ypath.Path("//tmp/" + guid.New().String())
	require.NoError(t, migrate.Create(ctx, yc, p, s))
	require.NoError(t, migrate.MountAndWait(ctx, yc, p))
	return p
}

func lookupValue(t *testing.T, ctx context.Context, yc yt.Client, p ypath.Path, key string) (int64, bool) {
	t.Helper()
	row, ok := lookupRow[kvRow](t, ctx, yc, p, key)
	return row.Value, ok
}

// lookupRow looks up the row of a table keyed by one "key" column (zero T when missing).
func lookupRow[T any](t *testing.T, ctx context.Context, yc yt.Client, p ypath.Path, key string) (T, bool) {
	t.Helper()
	var row T
	r, err := yc.LookupRows(ctx, p, []any{&kvKey{key}}, nil)
	require.NoError(t, err)
	defer r.Close()
	if !r.Next() {
		require.NoError(t, r.Err())
		return row, false
	}
	require.NoError(t, r.Scan(&row))
	return row, true
}

func TestDynInsertLookupSelect(t *testing.T) {
	ctx, yc := newDynClient(t)
	p := newSortedTable(t, ctx, yc)
	require.NoError(t, yc.InsertRows(ctx, p, []any{&kvRow{"b", 2}, &kvRow{"a", 1}}, nil))
	v, ok := lookupValue(t, ctx, yc, p, "a")
	require.True(t, ok)
	assert.Equal(t, int64(1), v)

	r, err := yc.SelectRows(ctx, fmt.Sprintf("key, value FROM [%s] WHERE value > 0", p), nil)
	require.NoError(t, err)
	defer r.Close()
	var got []kvRow
	for r.Next() {
		var row kvRow
		require.NoError(t, r.Scan(&row))
		got = append(got, row)
	}
	require.NoError(t, r.Err())
	assert.Equal(t, []kvRow{{"a", 1}, {"b", 2}}, got)

	var state string
	require.NoError(t, yc.GetNode(ctx, p.Attr("tablet_state"), &state, nil))
	assert.Equal(t, "mounted", state)
	var rowCount int64
	require.NoError(t, yc.GetNode(ctx, p.Attr("row_count"), &rowCount, nil))
	assert.Equal(t, int64(2), rowCount)
}

// Invariant: a tablet commit whose prerequisite master transaction has ended fails
// with 1000 and writes nothing.
func TestDynPrerequisiteFencing(t *testing.T) {
	ctx, yc := newDynClient(t)
	p := newSortedTable(t, ctx, yc)

	commitWithPrerequisite := func(key string, master yt.TxID) error {
		txID, err := yc.StartTabletTx(ctx, &yt.StartTabletTxOptions{Type: yt.TxTypeTablet, Sticky: true})
		require.NoError(t, err)
		require.NoError(t, yc.InsertRows(ctx, p, []any{&kvRow{key, 1}}, &yt.InsertRowsOptions{
			TransactionOptions: &yt.TransactionOptions{TransactionID: txID},
		}))
		return yc.CommitTx(ctx, txID, &yt.CommitTxOptions{
			Sticky:              true,
			PrerequisiteOptions: &yt.PrerequisiteOptions{TransactionIDs: []yt.TxID{master}},
		})
	}

	leader, err := yc.BeginTx(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, commitWithPrerequisite("leader", leader.ID()))
	_, ok := lookupValue(t, ctx, yc, p, "leader")
	assert.True(t, ok)

	require.NoError(t, leader.Abort())
	err = commitWithPrerequisite("zombie", leader.ID())
	require.Error(t, err)
	assert.True(t, yterrors.ContainsErrorCode(err, yterrors.CodePrerequisiteCheckFailed), "%v", err)
	_, ok = lookupValue(t, ctx, yc, p, "zombie")
	assert.False(t, ok)
}

// Invariant: of two tablet transactions writing one row concurrently, the later
// committer fails with 1700 and none of its rows apply.
func TestDynConcurrentTabletTxConflict(t *testing.T) {
	ctx, yc := newDynClient(t)
	p := newSortedTable(t, ctx, yc)

	tx1, err := yc.BeginTabletTx(ctx, nil)
	require.NoError(t, err)
	tx2, err := yc.BeginTabletTx(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, tx1.InsertRows(ctx, p, []any{&kvRow{"k", 1}}, nil))
	require.NoError(t, tx2.InsertRows(ctx, p, []any{&kvRow{"k", 2}, &kvRow{"other", 2}}, nil))
	require.NoError(t, tx1.Commit())
	err = tx2.Commit()
	require.Error(t, err)
	assert.True(t, yterrors.ContainsErrorCode(err, yterrors.CodeTransactionLockConflict), "%v", err)

	v, ok := lookupValue(t, ctx, yc, p, "k")
	require.True(t, ok)
	assert.Equal(t, int64(1), v)
	_, ok = lookupValue(t, ctx, yc, p, "other")
	assert.False(t, ok)

	// Reads inside a transaction see its start snapshot.
	tx3, err := yc.BeginTabletTx(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, yc.InsertRows(ctx, p, []any{&kvRow{"k", 3}}, nil))
	r, err := tx3.LookupRows(ctx, p, []any{&kvKey{"k"}}, nil)
	require.NoError(t, err)
	require.True(t, r.Next())
	var row kvRow
	require.NoError(t, r.Scan(&row))
	assert.Equal(t, int64(1), row.Value)
	require.NoError(t, r.Close())
	require.NoError(t, tx3.Abort())
}

type queueRow struct {
	TabletIndex int    `yson:"$tablet_index"`
	Value       string `yson:"value"`
}

type seqRow struct {
	TabletIndex    int    `yson:"$tablet_index"`
	SequenceNumber int64  `yson:"$sequence_number"`
	Value          string `yson:"value"`
}

func newQueue(t *testing.T, ctx context.Context, yc yt.Client) (queue, producer, consumer ypath.Path) {
	t.Helper()
	dir := ypath.Path("//tmp/" + guid.New().String())
	queue, producer, consumer = dir.Child("queue"), dir.Child("producer"), dir.Child("consumer")
	require.NoError(t, migrate.Create(ctx, yc, queue, schema.MustInfer(&queueRow{})))
	require.NoError(t, migrate.MountAndWait(ctx, yc, queue))
	_, err := yc.CreateNode(ctx, producer, yt.NodeQueueProducer, nil)
	require.NoError(t, err)
	_, err = yc.CreateNode(ctx, consumer, yt.NodeQueueConsumer, nil)
	require.NoError(t, err)
	return
}

func requireCode(t *testing.T, err error, code yterrors.ErrorCode) {
	t.Helper()
	require.Error(t, err)
	require.True(t, yterrors.ContainsErrorCode(err, code), "want code %d, got %v", code, err)
}

func TestDynQueueProducerEpochsAndSequenceNumbers(t *testing.T) {
	ctx, yc := newDynClient(t)
	queue, producer, _ := newQueue(t, ctx, yc)

	s, err := yc.CreateQueueProducerSession(ctx, producer, queue, "s", nil)
	require.NoError(t, err)
	assert.Equal(t, int64(0), s.Epoch)
	assert.Equal(t, int64(-1), s.SequenceNumber)

	push := func(epoch int64, rows ...any) (*yt.PushQueueProducerResult, error) {
		return yc.PushQueueProducer(ctx, producer, queue, "s", epoch, rows, nil)
	}
	res, err := push(0, &seqRow{0, 1, "a"}, &seqRow{0, 2, "b"})
	require.NoError(t, err)
	assert.Equal(t, int64(2), res.LastSequenceNumber)
	res, err = push(0, &seqRow{0, 2, "b"}, &seqRow{0, 5, "c"})
	require.NoError(t, err)
	assert.Equal(t, int64(5), res.LastSequenceNumber)
	assert.Equal(t, int64(1), res.SkippedRowCount)

	_, err = push(1, &seqRow{0, 6, "x"})
	requireCode(t, err, yterrors.CodeQueueClientInvalidEpoch)
	_, err = push(0, &queueRow{0, "no sequence number"})
	requireCode(t, err, yterrors.CodeInvalidRowSequenceNumbers)

	s, err = yc.CreateQueueProducerSession(ctx, producer, queue, "s", nil)
	require.NoError(t, err)
	assert.Equal(t, int64(1), s.Epoch)
	assert.Equal(t, int64(5), s.SequenceNumber)
	_, err = push(0, &seqRow{0, 6, "zombie"})
	requireCode(t, err, yterrors.CodeZombieEpoch)

	r, err := yc.SelectRows(ctx, fmt.Sprintf("value FROM [%s]", queue), nil)
	require.NoError(t, err)
	var values []string
	for r.Next() {
		var row queueRow
		require.NoError(t, r.Scan(&row))
		values = append(values, row.Value)
	}
	require.NoError(t, r.Err())
	assert.Equal(t, []string{"a", "b", "c"}, values)
}

func TestDynQueueConsumerOffsets(t *testing.T) {
	ctx, yc := newDynClient(t)
	queue, _, consumer := newQueue(t, ctx, yc)
	require.NoError(t, yc.InsertRows(ctx, queue, []any{&queueRow{0, "a"}, &queueRow{0, "b"}}, nil))

	pull := func(offset int64) ([]string, error) {
		r, _, err := yc.PullQueueConsumer(ctx, consumer, queue, &yt.PullQueueConsumerOptions{
			PartitionIndex: ptrInt32(0), Offset: &offset,
		})
		if err != nil {
			return nil, err
		}
		defer r.Close()
		var out []string
		for r.Next() {
			var row queueRow
			require.NoError(t, r.Scan(&row))
			out = append(out, row.Value)
		}
		return out, r.Err()
	}
	_, err := pull(0)
	requireCode(t, err, yterrors.CodeAuthorizationError)
	require.NoError(t, yc.RegisterQueueConsumer(ctx, queue, consumer, &yt.RegisterQueueConsumerOptions{Vital: ptrBool(true)}))
	got, err := pull(1)
	require.NoError(t, err)
	assert.Equal(t, []string{"b"}, got)

	advance := func(old, new int64) error {
		return yc.AdvanceQueueConsumer(ctx, consumer, queue, &yt.AdvanceQueueConsumerOptions{
			PartitionIndex: ptrInt32(0), OldOffset: &old, NewOffset: &new,
		})
	}
	require.NoError(t, advance(0, 1))
	requireCode(t, advance(0, 2), yterrors.CodeConsumerOffsetConflict)
	require.NoError(t, advance(1, 2))
}

func ptrInt32(v int32) *int32 { return &v }
func ptrBool(v bool) *bool    { return &v }

func TestDynDurableAcrossRestart(t *testing.T) {
	for _, every := range []int{0, 3} {
		t.Run(fmt.Sprintf("snapshot_every_%d", every), func(t *testing.T) { testDynDurable(t, every) })
	}
}

// startDurable starts a server on data directory dir with a client; both stop at cleanup.
func startDurable(t *testing.T, ctx context.Context, dir string, snapshotEvery int) (*ytlocal.Server, yt.Client) {
	t.Helper()
	srv, err := ytlocal.Start(ctx, ytlocal.Config{DataDir: dir, SnapshotEvery: snapshotEvery})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	yc, err := ythttp.NewClient(&yt.Config{Proxy: srv.Addr()})
	require.NoError(t, err)
	t.Cleanup(yc.Stop)
	return srv, yc
}

// testDynDurable writes through every kind of dynamic-table record, restarts the
// server on the same data directory and checks the state; snapshotEvery > 0 makes
// the restart load a snapshot plus a log tail.
func testDynDurable(t *testing.T, snapshotEvery int) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := func() (*ytlocal.Server, yt.Client) { return startDurable(t, ctx, dir, snapshotEvery) }

	srv, yc := start()
	p := newSortedTable(t, ctx, yc)
	queue, producer, consumer := newQueue(t, ctx, yc)
	require.NoError(t, yc.InsertRows(ctx, p, []any{&kvRow{"a", 1}, &kvRow{"b", 2}}, nil))
	require.NoError(t, yc.DeleteRows(ctx, p, []any{&kvKey{"b"}}, nil))
	require.NoError(t, yc.RegisterQueueConsumer(ctx, queue, consumer, &yt.RegisterQueueConsumerOptions{Vital: ptrBool(false)}))
	_, err := yc.CreateQueueProducerSession(ctx, producer, queue, "s", nil)
	require.NoError(t, err)
	_, err = yc.PushQueueProducer(ctx, producer, queue, "s", 0, []any{&seqRow{0, 7, "q"}}, nil)
	require.NoError(t, err)
	old, next := int64(0), int64(1)
	require.NoError(t, yc.AdvanceQueueConsumer(ctx, consumer, queue, &yt.AdvanceQueueConsumerOptions{
		PartitionIndex: ptrInt32(0), OldOffset: &old, NewOffset: &next,
	}))
	// An ordered table resharded, trimmed and frozen; a sorted table altered; a removed table.
	ordered := ypath.Path("//tmp/" + guid.New().String())
	require.NoError(t, migrate.Create(ctx, yc, ordered, schema.MustInfer(&queueRow{})))
	two := 2
	require.NoError(t, yc.ReshardTable(ctx, ordered, &yt.ReshardTableOptions{TabletCount: &two}))
	require.NoError(t, migrate.MountAndWait(ctx, yc, ordered))
	require.NoError(t, yc.InsertRows(ctx, ordered, []any{&queueRow{1, "x"}, &queueRow{1, "y"}}, nil))
	trimRows(t, srv.Addr(), ordered, 1, 1)
	require.NoError(t, migrate.FreezeAndWait(ctx, yc, ordered))
	require.NoError(t, migrate.UnmountAndWait(ctx, yc, p))
	wider := schema.MustInfer(&struct {
		Key   string `yson:"key,key"`
		Value int64  `yson:"value"`
		Note  string `yson:"note"`
	}{})
	require.NoError(t, yc.AlterTable(ctx, p, &yt.AlterTableOptions{Schema: &wider}))
	require.NoError(t, migrate.MountAndWait(ctx, yc, p))
	gone := newSortedTable(t, ctx, yc)
	require.NoError(t, yc.InsertRows(ctx, gone, []any{&kvRow{"g", 1}}, nil))
	require.NoError(t, yc.RemoveNode(ctx, gone, nil))
	require.NoError(t, srv.Close())

	_, yc = start()
	v, ok := lookupValue(t, ctx, yc, p, "a")
	require.True(t, ok)
	assert.Equal(t, int64(1), v)
	_, ok = lookupValue(t, ctx, yc, p, "b")
	assert.False(t, ok)

	res, err := yc.PushQueueProducer(ctx, producer, queue, "s", 0, []any{&seqRow{0, 7, "q"}}, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(1), res.SkippedRowCount, "the session's sequence number survived")
	requireCode(t, yc.AdvanceQueueConsumer(ctx, consumer, queue, &yt.AdvanceQueueConsumerOptions{
		PartitionIndex: ptrInt32(0), OldOffset: &old, NewOffset: &next,
	}), yterrors.CodeConsumerOffsetConflict)
	r, _, err := yc.PullQueueConsumer(ctx, consumer, queue, &yt.PullQueueConsumerOptions{PartitionIndex: ptrInt32(0), Offset: &old})
	require.NoError(t, err, "the registration survived")
	require.True(t, r.Next())
	require.NoError(t, r.Close())

	var state string
	require.NoError(t, yc.GetNode(ctx, ordered.Attr("tablet_state"), &state, nil))
	assert.Equal(t, "frozen", state)
	var tablets []struct {
		Trimmed int64 `yson:"trimmed_row_count"`
		Total   int64 `yson:"total_row_count"`
	}
	require.NoError(t, yc.GetNode(ctx, ordered.Attr("tablets"), &tablets, nil))
	require.Len(t, tablets, 2)
	assert.Equal(t, int64(1), tablets[1].Trimmed)
	assert.Equal(t, int64(2), tablets[1].Total)
	sel, err := yc.SelectRows(ctx, fmt.Sprintf("key, note FROM [%s]", p), nil)
	require.NoError(t, err, "the altered schema survived")
	require.True(t, sel.Next())
	require.NoError(t, sel.Close())
	ok, err = yc.NodeExists(ctx, gone, nil)
	require.NoError(t, err)
	assert.False(t, ok)
}

func TestDynAlterStaticTableToDynamic(t *testing.T) {
	ctx, yc := newDynClient(t)
	p := ypath.Path("//tmp/" + guid.New().String())
	sc := schema.MustInfer(&kvRow{})
	_, err := yc.CreateNode(ctx, p, yt.NodeTable, &yt.CreateNodeOptions{Attributes: map[string]any{"schema": sc}})
	require.NoError(t, err)
	err = yc.InsertRows(ctx, p, []any{&kvRow{"a", 1}}, nil)
	require.Error(t, err, "a static table takes no insert_rows")
	w, err := yc.WriteTable(ctx, p, nil)
	require.NoError(t, err)
	require.NoError(t, w.Write(&kvRow{"static", 7}))
	require.NoError(t, w.Commit())

	require.NoError(t, yc.AlterTable(ctx, p, &yt.AlterTableOptions{Dynamic: ptrBool(true)}))
	var dynamic bool
	require.NoError(t, yc.GetNode(ctx, p.Attr("dynamic"), &dynamic, nil))
	assert.True(t, dynamic)
	require.NoError(t, migrate.MountAndWait(ctx, yc, p))
	v, ok := lookupValue(t, ctx, yc, p, "static")
	require.True(t, ok, "static rows become dynamic rows")
	assert.Equal(t, int64(7), v)
	require.NoError(t, yc.InsertRows(ctx, p, []any{&kvRow{"a", 1}}, nil))
	v, ok = lookupValue(t, ctx, yc, p, "a")
	require.True(t, ok)
	assert.Equal(t, int64(1), v)

	// The schema of a mounted dynamic table cannot change; unmounted it can.
	wider := schema.MustInfer(&struct {
		Key   string `yson:"key,key"`
		Value int64  `yson:"value"`
		Note  string `yson:"note"`
	}{})
	requireCode(t, yc.AlterTable(ctx, p, &yt.AlterTableOptions{Schema: &wider}), yterrors.CodeInvalidTabletState)
	require.NoError(t, migrate.UnmountAndWait(ctx, yc, p))
	require.NoError(t, yc.AlterTable(ctx, p, &yt.AlterTableOptions{Schema: &wider}))
	require.NoError(t, migrate.MountAndWait(ctx, yc, p))
	v, ok = lookupValue(t, ctx, yc, p, "a")
	require.True(t, ok, "rows survive the schema change")
	assert.Equal(t, int64(1), v)
}

func TestDynOrderedTabletsAttributes(t *testing.T) {
	ctx, yc := newDynClient(t)
	p := ypath.Path("//tmp/" + guid.New().String())
	require.NoError(t, migrate.Create(ctx, yc, p, schema.MustInfer(&queueRow{})))
	tabletCount := 3
	require.NoError(t, yc.ReshardTable(ctx, p, &yt.ReshardTableOptions{TabletCount: &tabletCount}))
	require.NoError(t, migrate.MountAndWait(ctx, yc, p))
	requireCode(t, yc.ReshardTable(ctx, p, &yt.ReshardTableOptions{TabletCount: &tabletCount}), yterrors.CodeInvalidTabletState)
	require.NoError(t, yc.InsertRows(ctx, p, []any{&queueRow{1, "a"}, &queueRow{1, "b"}, &queueRow{2, "c"}}, nil))

	var count int64
	require.NoError(t, yc.GetNode(ctx, p.Attr("tablet_count"), &count, nil))
	assert.Equal(t, int64(3), count)
	var tablets []struct {
		Index    int64 `yson:"index"`
		RowCount int64 `yson:"total_row_count"`
	}
	require.NoError(t, yc.GetNode(ctx, p.Attr("tablets"), &tablets, nil))
	require.Len(t, tablets, 3)
	assert.Equal(t, int64(2), tablets[1].RowCount)
	assert.Equal(t, int64(1), tablets[2].RowCount)

	// Unmounted tables reject writes with 1702; frozen ones reject writes but serve reads.
	require.NoError(t, migrate.FreezeAndWait(ctx, yc, p))
	require.Error(t, yc.InsertRows(ctx, p, []any{&queueRow{0, "x"}}, nil))
	r, err := yc.SelectRows(ctx, fmt.Sprintf("value FROM [%s] WHERE [$tablet_index] = 1", p), nil)
	require.NoError(t, err)
	require.True(t, r.Next())
	require.NoError(t, r.Close())
	require.NoError(t, migrate.UnmountAndWait(ctx, yc, p))
	requireCode(t, yc.InsertRows(ctx, p, []any{&queueRow{0, "x"}}, nil), yterrors.CodeTabletNotMounted)
}

func TestDynRemoveDropsTable(t *testing.T) {
	ctx, yc := newDynClient(t)
	p := newSortedTable(t, ctx, yc)
	require.NoError(t, yc.InsertRows(ctx, p, []any{&kvRow{"a", 1}}, nil))
	require.NoError(t, yc.RemoveNode(ctx, p, nil))
	requireCode(t, yc.InsertRows(ctx, p, []any{&kvRow{"a", 1}}, nil), yterrors.CodeResolveError)

	// A new table at the same path starts empty.
	p2 := p
	require.NoError(t, migrate.Create(ctx, yc, p2, schema.MustInfer(&kvRow{})))
	require.NoError(t, migrate.MountAndWait(ctx, yc, p2))
	_, ok := lookupValue(t, ctx, yc, p2, "a")
	assert.False(t, ok)
}

func TestDynComputedKeyColumnAndQueryChecks(t *testing.T) {
	ctx, yc := newDynClient(t)
	p := ypath.Path("//tmp/" + guid.New().String())
	sc := schema.Schema{Columns: []schema.Column{
		{Name: "hash", Type: schema.TypeUint64, SortOrder: schema.SortAscending, Expression: "farm_hash(word)"},
		{Name: "word", Type: schema.TypeString, SortOrder: schema.SortAscending},
		{Name: "count", Type: schema.TypeInt64},
	}}
	require.NoError(t, migrate.Create(ctx, yc, p, sc))
	require.NoError(t, migrate.MountAndWait(ctx, yc, p))
	require.NoError(t, yc.InsertRows(ctx, p, []any{map[string]any{"word": "hello", "count": 3}}, nil))

	r, err := yc.LookupRows(ctx, p, []any{map[string]any{"word": "hello"}}, nil)
	require.NoError(t, err)
	require.True(t, r.Next())
	var row map[string]any
	require.NoError(t, r.Scan(&row))
	require.NoError(t, r.Close())
	assert.Equal(t, map[string]any{"hash": ytql.FarmHash("hello"), "word": "hello", "count": int64(3)}, row)

	// Queries are checked against the schema before rows are read.
	_, err = yc.SelectRows(ctx, fmt.Sprintf("* FROM [%s] WHERE missing = 1", p), nil)
	require.Error(t, err)
	_, err = yc.SelectRows(ctx, fmt.Sprintf("* FROM [%s] WHERE hash = count", p), nil)
	require.Error(t, err, "uint64 and int64 columns do not compare")

	// A computed column whose expression does not fit the schema is rejected.
	bad := ypath.Path("//tmp/" + guid.New().String())
	sc.Columns[0].Expression = "farm_hash(nope)"
	_, err = yc.CreateNode(ctx, bad, yt.NodeTable, &yt.CreateNodeOptions{Attributes: map[string]any{"dynamic": true, "schema": sc}})
	if err == nil {
		err = yc.MountTable(ctx, bad, nil)
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nope")
}

// trimRows calls trim_rows, which the Go SDK does not expose, over plain HTTP.
func trimRows(t *testing.T, addr string, p ypath.Path, tablet, count int) {
	t.Helper()
	body := fmt.Sprintf("{path=%q;tablet_index=%d;trimmed_row_count=%d}", p, tablet, count)
	rsp, err := http.Post("http://"+addr+"/api/v4/trim_rows", "application/x-yt-yson-text", strings.NewReader(body))
	require.NoError(t, err)
	defer rsp.Body.Close()
	require.Equal(t, http.StatusOK, rsp.StatusCode, rsp.Header.Get("X-YT-Error"))
}

func TestDynTrimRows(t *testing.T) {
	addr := ytlocaltest.New(t)
	yc, err := ythttp.NewClient(&yt.Config{Proxy: addr})
	require.NoError(t, err)
	t.Cleanup(yc.Stop)
	ctx := context.Background()
	p := newMountedTable(t, ctx, yc, schema.MustInfer(&queueRow{}))
	require.NoError(t, yc.InsertRows(ctx, p, []any{&queueRow{0, "a"}, &queueRow{0, "b"}, &queueRow{0, "c"}}, nil))

	trimRows(t, addr, p, 0, 2)
	r, err := yc.SelectRows(ctx, fmt.Sprintf("[$row_index], value FROM [%s]", p), nil)
	require.NoError(t, err)
	var rows []map[string]any
	for r.Next() {
		var row map[string]any
		require.NoError(t, r.Scan(&row))
		rows = append(rows, row)
	}
	require.NoError(t, r.Err())
	assert.Equal(t, []map[string]any{{"$row_index": int64(2), "value": "c"}}, rows)

	var tablets []struct {
		Trimmed int64 `yson:"trimmed_row_count"`
	}
	require.NoError(t, yc.GetNode(ctx, p.Attr("tablets"), &tablets, nil))
	require.Len(t, tablets, 1)
	assert.Equal(t, int64(2), tablets[0].Trimmed)

	// Remount keeps the trimmed prefix and the numbering.
	require.NoError(t, migrate.UnmountAndWait(ctx, yc, p))
	require.NoError(t, migrate.MountAndWait(ctx, yc, p))
	require.NoError(t, yc.InsertRows(ctx, p, []any{&queueRow{0, "d"}}, nil))
	var count int64
	require.NoError(t, yc.GetNode(ctx, p.Attr("row_count"), &count, nil))
	assert.Equal(t, int64(2), count)
}

// Invariant: consuming input (advance_queue_consumer) and producing output
// (push_queue_producer) in one tablet transaction is all-or-nothing.
func TestDynConsumeAndProduceInOneTabletTx(t *testing.T) {
	ctx, yc := newDynClient(t)
	in, _, consumer := newQueue(t, ctx, yc)
	out, producer, _ := newQueue(t, ctx, yc)
	require.NoError(t, yc.RegisterQueueConsumer(ctx, in, consumer, &yt.RegisterQueueConsumerOptions{Vital: ptrBool(true)}))
	require.NoError(t, yc.InsertRows(ctx, in, []any{&queueRow{0, "m0"}, &queueRow{0, "m1"}}, nil))
	_, err := yc.CreateQueueProducerSession(ctx, producer, out, "job", nil)
	require.NoError(t, err)

	step := func(commit bool) error {
		txID, err := yc.StartTabletTx(ctx, &yt.StartTabletTxOptions{Type: yt.TxTypeTablet, Sticky: true})
		require.NoError(t, err)
		txOpts := &yt.TransactionOptions{TransactionID: txID}
		old, next := int64(0), int64(2)
		if err := yc.AdvanceQueueConsumer(ctx, consumer, in, &yt.AdvanceQueueConsumerOptions{
			PartitionIndex: ptrInt32(0), OldOffset: &old, NewOffset: &next, TransactionOptions: txOpts,
		}); err != nil {
			return err
		}
		seq := int64(0)
		if _, err := yc.PushQueueProducer(ctx, producer, out, "job", 0, []any{&queueRow{0, "M0"}, &queueRow{0, "M1"}},
			&yt.PushQueueProducerOptions{SequenceNumber: &seq, TransactionOptions: txOpts}); err != nil {
			return err
		}
		if !commit {
			return yc.AbortTx(ctx, txID, nil)
		}
		return yc.CommitTx(ctx, txID, &yt.CommitTxOptions{Sticky: true})
	}
	outRows := func() int {
		var n int64
		require.NoError(t, yc.GetNode(ctx, out.Attr("row_count"), &n, nil))
		return int(n)
	}

	require.NoError(t, step(false))
	assert.Equal(t, 0, outRows(), "an aborted step produces nothing")
	require.NoError(t, step(true))
	assert.Equal(t, 2, outRows())
	// A replay of the same step is rejected by the consumer offset and adds nothing.
	requireCode(t, step(true), yterrors.CodeConsumerOffsetConflict)
	assert.Equal(t, 2, outRows())
}

type pruneRow struct {
	C string `yson:"c,key"`
	H uint64 `yson:"h,key"`
	S string `yson:"s,key"`
	V int64  `yson:"v"`
}

// TestDynSelectKeyPruningMatchesFullScan runs random queries twice: as written
// (key-range pruning applies) and with the WHERE clause OR-ed with %false (which
// disables pruning); the results must be identical.
func TestDynSelectKeyPruningMatchesFullScan(t *testing.T) {
	ctx, yc := newDynClient(t)
	p := newMountedTable(t, ctx, yc, schema.MustInfer(&pruneRow{}))
	rng := rand.New(rand.NewSource(1))
	var rows []any
	for i := 0; i < 300; i++ {
		rows = append(rows, &pruneRow{C: string(rune('a' + rng.Intn(4))), H: uint64(rng.Intn(10)), S: string(rune('p' + rng.Intn(3))), V: int64(i)})
	}
	require.NoError(t, yc.InsertRows(ctx, p, rows, nil))

	atoms := []string{
		"c = 'b'", "c in ('a', 'c')", "c = {pc}", "'c' = c", "c >= 'b'", "c < 'c'",
		"h = 3u", "h in (1u, 5u, 7u)", "h >= 2u", "h < 7", "3u < h", "h = {ph}",
		"s = 'q'", "s in ('p', 'r')", "v = 5", "v > 100", "not c = 'a'", "h != 4u", "v % 2 = 0",
	}
	placeholders := map[string]any{"pc": "d", "ph": uint64(6)}
	run := func(q string) []pruneRow {
		r, err := yc.SelectRows(ctx, q, &yt.SelectRowsOptions{PlaceholderValues: placeholders})
		require.NoError(t, err, q)
		defer r.Close()
		var out []pruneRow
		for r.Next() {
			var row pruneRow
			require.NoError(t, r.Scan(&row))
			out = append(out, row)
		}
		require.NoError(t, r.Err())
		return out
	}
	for i := 0; i < 150; i++ {
		var conj []string
		for n := 1 + rng.Intn(4); n > 0; n-- {
			conj = append(conj, atoms[rng.Intn(len(atoms))])
		}
		where := strings.Join(conj, " and ")
		tail := []string{"", " limit 7", " order by v desc limit 5"}[rng.Intn(3)]
		pruned := fmt.Sprintf("* from [%s] where %s%s", p, where, tail)
		full := fmt.Sprintf("* from [%s] where (%s) or %%false%s", p, where, tail)
		assert.Equal(t, run(full), run(pruned), pruned)
	}
}

func TestDynTabletTxLeaseExpires(t *testing.T) {
	var offset atomic.Int64 // the test moves the server clock forward
	srv := ytlocaltest.Start(t, ytlocal.Config{Now: func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }})
	yc, err := ythttp.NewClient(&yt.Config{Proxy: srv.Addr()})
	require.NoError(t, err)
	t.Cleanup(yc.Stop)
	ctx := context.Background()
	p := newSortedTable(t, ctx, yc)

	timeout := yson.Duration(10 * time.Second)
	txID, err := yc.StartTabletTx(ctx, &yt.StartTabletTxOptions{Type: yt.TxTypeTablet, Sticky: true, Timeout: &timeout})
	require.NoError(t, err)
	require.NoError(t, yc.InsertRows(ctx, p, []any{&kvRow{"late", 1}}, &yt.InsertRowsOptions{
		TransactionOptions: &yt.TransactionOptions{TransactionID: txID},
	}))
	offset.Store(int64(8 * time.Second))
	require.NoError(t, yc.PingTx(ctx, txID, nil), "a ping within the timeout renews the lease")
	offset.Store(int64(16 * time.Second))
	require.NoError(t, yc.PingTx(ctx, txID, nil))
	offset.Store(int64(27 * time.Second))
	requireCode(t, yc.PingTx(ctx, txID, nil), yterrors.CodeNoSuchTransaction)
	requireCode(t, yc.CommitTx(ctx, txID, &yt.CommitTxOptions{Sticky: true}), yterrors.CodeNoSuchTransaction)
	_, ok := lookupValue(t, ctx, yc, p, "late")
	assert.False(t, ok)
}

func TestDynLockRowsReadTableAndQueueCleanup(t *testing.T) {
	ctx, yc := newDynClient(t)
	sc := schema.MustInfer(&kvRow{})
	sc.Columns[1].Lock = "value_lock"
	p := newMountedTable(t, ctx, yc, sc)
	require.NoError(t, yc.InsertRows(ctx, p, []any{&kvRow{"b", 2}, &kvRow{"a", 1}}, nil))

	// A shared strong lock taken by a committed transaction breaks an older writer.
	writer, err := yc.BeginTabletTx(ctx, nil)
	require.NoError(t, err)
	locker, err := yc.BeginTabletTx(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, locker.LockRows(ctx, p, []string{"value_lock"}, yt.LockTypeSharedStrong, []any{&kvKey{"a"}}, nil))
	require.NoError(t, locker.Commit())
	require.NoError(t, writer.InsertRows(ctx, p, []any{&kvRow{"a", 5}}, nil))
	requireCode(t, writer.Commit(), yterrors.CodeTransactionLockConflict)

	// read_table of a dynamic table returns its rows in key order.
	r, err := yc.ReadTable(ctx, p, nil)
	require.NoError(t, err)
	var got []kvRow
	for r.Next() {
		var row kvRow
		require.NoError(t, r.Scan(&row))
		got = append(got, row)
	}
	require.NoError(t, r.Err())
	require.NoError(t, r.Close())
	assert.Equal(t, []kvRow{{"a", 1}, {"b", 2}}, got)

	// Remount and unfreeze keep the table usable.
	require.NoError(t, yc.RemountTable(ctx, p, nil))
	require.NoError(t, migrate.FreezeAndWait(ctx, yc, p))
	require.NoError(t, migrate.UnfreezeAndWait(ctx, yc, p))
	require.NoError(t, yc.InsertRows(ctx, p, []any{&kvRow{"c", 3}}, nil))

	queue, producer, consumer := newQueue(t, ctx, yc)
	require.NoError(t, yc.RegisterQueueConsumer(ctx, queue, consumer, &yt.RegisterQueueConsumerOptions{Vital: ptrBool(true)}))
	require.NoError(t, yc.UnregisterQueueConsumer(ctx, queue, consumer, nil))
	zero := int64(0)
	_, _, err = yc.PullQueueConsumer(ctx, consumer, queue, &yt.PullQueueConsumerOptions{PartitionIndex: ptrInt32(0), Offset: &zero})
	requireCode(t, err, yterrors.CodeAuthorizationError)
	_, err = yc.CreateQueueProducerSession(ctx, producer, queue, "s", nil)
	require.NoError(t, err)
	require.NoError(t, yc.RemoveQueueProducerSession(ctx, producer, queue, "s", nil))
	_, err = yc.PushQueueProducer(ctx, producer, queue, "s", 0, []any{&seqRow{0, 1, "x"}}, nil)
	require.Error(t, err, "the session is gone")
}
