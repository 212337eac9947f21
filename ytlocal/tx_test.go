package ytlocal_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yt"
	"go.ytsaurus.tech/yt/go/yterrors"

	"github.com/ytflow/yt-flow/ytlocal/ytlocaltest"
)

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestUnpingedTransactionExpires(t *testing.T) {
	ctx := context.Background()
	yc := newClient(t, ytlocaltest.New(t))

	timeout := yson.Duration(2 * time.Second)
	id, err := yc.StartTx(ctx, &yt.StartTxOptions{Timeout: &timeout})
	require.NoError(t, err)
	_, err = yc.CreateNode(ctx, ypath.Path("//tmp/staged"), yt.NodeMap, &yt.CreateNodeOptions{
		TransactionOptions: &yt.TransactionOptions{TransactionID: id}})
	require.NoError(t, err)

	// The server's timer aborts the transaction without any further request.
	eventually(t, 30*time.Second, "transaction expiry", func() bool {
		ok, err := yc.NodeExists(ctx, ypath.Path("//sys/transactions").Child(id.String()), nil)
		require.NoError(t, err)
		return !ok
	})
	err = yc.PingTx(ctx, id, nil)
	require.Error(t, err)
	require.True(t, yterrors.ContainsErrorCode(err, yterrors.CodeNoSuchTransaction), "%v", err)
	ok, err := yc.NodeExists(ctx, ypath.Path("//tmp/staged"), nil)
	require.NoError(t, err)
	require.False(t, ok, "changes of an expired transaction must be discarded")
}

func TestPingKeepsTransactionAlive(t *testing.T) {
	ctx := context.Background()
	yc := newClient(t, ytlocaltest.New(t))
	// Pings every 50 ms keep a 3 s transaction alive for longer than its timeout.
	timeout := yson.Duration(3 * time.Second)
	id, err := yc.StartTx(ctx, &yt.StartTxOptions{Timeout: &timeout})
	require.NoError(t, err)
	start := time.Now()
	for time.Since(start) < 4*time.Second {
		require.NoError(t, yc.PingTx(ctx, id, nil))
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, yc.CommitTx(ctx, id, nil))
}

func TestParentCommitAbortsNestedTransactions(t *testing.T) {
	ctx := context.Background()
	yc := newClient(t, ytlocaltest.New(t))

	parent, err := yc.StartTx(ctx, nil)
	require.NoError(t, err)
	child, err := yc.StartTx(ctx, &yt.StartTxOptions{TransactionOptions: &yt.TransactionOptions{TransactionID: parent}})
	require.NoError(t, err)
	_, err = yc.CreateNode(ctx, ypath.Path("//tmp/from-child"), yt.NodeMap, &yt.CreateNodeOptions{
		TransactionOptions: &yt.TransactionOptions{TransactionID: child}})
	require.NoError(t, err)
	_, err = yc.CreateNode(ctx, ypath.Path("//tmp/from-parent"), yt.NodeMap, &yt.CreateNodeOptions{
		TransactionOptions: &yt.TransactionOptions{TransactionID: parent}})
	require.NoError(t, err)

	require.NoError(t, yc.CommitTx(ctx, parent, nil))

	err = yc.PingTx(ctx, child, nil)
	require.True(t, yterrors.ContainsErrorCode(err, yterrors.CodeNoSuchTransaction), "%v", err)
	ok, err := yc.NodeExists(ctx, ypath.Path("//tmp/from-parent"), nil)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = yc.NodeExists(ctx, ypath.Path("//tmp/from-child"), nil)
	require.NoError(t, err)
	require.False(t, ok, "the aborted nested transaction's changes must not be committed")
}

func TestNestedCommitIsVisibleToParentOnly(t *testing.T) {
	ctx := context.Background()
	yc := newClient(t, ytlocaltest.New(t))
	parent, err := yc.StartTx(ctx, nil)
	require.NoError(t, err)
	child, err := yc.StartTx(ctx, &yt.StartTxOptions{TransactionOptions: &yt.TransactionOptions{TransactionID: parent}})
	require.NoError(t, err)
	require.NoError(t, yc.SetNode(ctx, ypath.Path("//tmp/x"), int64(7), &yt.SetNodeOptions{
		TransactionOptions: &yt.TransactionOptions{TransactionID: child}}))
	require.NoError(t, yc.CommitTx(ctx, child, nil))

	var v int64
	require.NoError(t, yc.GetNode(ctx, ypath.Path("//tmp/x"), &v, &yt.GetNodeOptions{
		TransactionOptions: &yt.TransactionOptions{TransactionID: parent}}))
	require.Equal(t, int64(7), v)
	ok, err := yc.NodeExists(ctx, ypath.Path("//tmp/x"), nil)
	require.NoError(t, err)
	require.False(t, ok)
	require.NoError(t, yc.AbortTx(ctx, parent, nil))
	ok, err = yc.NodeExists(ctx, ypath.Path("//tmp/x"), nil)
	require.NoError(t, err)
	require.False(t, ok)
}

func TestDeadPrerequisiteFailsWithCode1000(t *testing.T) {
	ctx := context.Background()
	yc := newClient(t, ytlocaltest.New(t))

	leader, err := yc.StartTx(ctx, nil)
	require.NoError(t, err)
	prereq := &yt.PrerequisiteOptions{TransactionIDs: []yt.TxID{leader}}
	_, err = yc.CreateNode(ctx, ypath.Path("//tmp/ok"), yt.NodeMap, &yt.CreateNodeOptions{PrerequisiteOptions: prereq})
	require.NoError(t, err)

	require.NoError(t, yc.AbortTx(ctx, leader, nil))
	_, err = yc.CreateNode(ctx, ypath.Path("//tmp/fenced"), yt.NodeMap, &yt.CreateNodeOptions{PrerequisiteOptions: prereq})
	require.Error(t, err)
	require.True(t, yterrors.ContainsErrorCode(err, yterrors.CodePrerequisiteCheckFailed), "%v", err)
	err = yc.SetNode(ctx, ypath.Path("//tmp/ok/@a"), 1, &yt.SetNodeOptions{PrerequisiteOptions: prereq})
	require.True(t, yterrors.ContainsErrorCode(err, yterrors.CodePrerequisiteCheckFailed), "%v", err)

	unknown := yt.TxID(guid.New())
	err = yc.RemoveNode(ctx, ypath.Path("//tmp/ok"), &yt.RemoveNodeOptions{
		PrerequisiteOptions: &yt.PrerequisiteOptions{TransactionIDs: []yt.TxID{unknown}}})
	require.True(t, yterrors.ContainsErrorCode(err, yterrors.CodePrerequisiteCheckFailed), "%v", err)

	ok, err := yc.NodeExists(ctx, ypath.Path("//tmp/fenced"), nil)
	require.NoError(t, err)
	require.False(t, ok)
	ok, err = yc.NodeExists(ctx, ypath.Path("//tmp/ok"), nil)
	require.NoError(t, err)
	require.True(t, ok)
}

func TestDependentTransactionAbortedWithPrerequisite(t *testing.T) {
	ctx := context.Background()
	yc := newClient(t, ytlocaltest.New(t))

	for _, commit := range []bool{true, false} {
		leader, err := yc.StartTx(ctx, nil)
		require.NoError(t, err)
		dep, err := yc.StartTx(ctx, &yt.StartTxOptions{PrerequisiteTransactionIDs: []yt.TxID{leader}})
		require.NoError(t, err)
		var ids []string
		require.NoError(t, yc.GetNode(ctx, ypath.Path("#"+leader.String()+"/@dependent_transaction_ids"), &ids, nil))
		require.Equal(t, []string{dep.String()}, ids)

		if commit {
			require.NoError(t, yc.CommitTx(ctx, leader, nil))
		} else {
			require.NoError(t, yc.AbortTx(ctx, leader, nil))
		}
		err = yc.PingTx(ctx, dep, nil)
		require.True(t, yterrors.ContainsErrorCode(err, yterrors.CodeNoSuchTransaction), "commit=%v: %v", commit, err)
	}

	_, err := yc.StartTx(ctx, &yt.StartTxOptions{PrerequisiteTransactionIDs: []yt.TxID{yt.TxID(guid.New())}})
	require.True(t, yterrors.ContainsErrorCode(err, yterrors.CodePrerequisiteCheckFailed), "%v", err)
}

func TestTransactionObjectAttributes(t *testing.T) {
	ctx := context.Background()
	yc := newClient(t, ytlocaltest.New(t))
	id, err := yc.StartTx(ctx, &yt.StartTxOptions{Attributes: map[string]any{"title": "leader"}})
	require.NoError(t, err)
	var title string
	require.NoError(t, yc.GetNode(ctx, ypath.Path("#"+id.String()+"/@title"), &title, nil))
	require.Equal(t, "leader", title)
	require.NoError(t, yc.AbortTx(ctx, id, nil))
	err = yc.GetNode(ctx, ypath.Path("#"+id.String()+"/@title"), &title, nil)
	require.True(t, yterrors.ContainsResolveError(err), "%v", err)
}

// TestTabletTxIDCarriesStartTimestamp: a tablet transaction's id holds its start timestamp
// where YTsaurus puts it (TimestampFromTransactionId: the two high words of the id) and the
// atomic tablet transaction type in the low half of the second word; the timestamp comes
// from the oracle of generate_timestamp, between the ones drawn before and after it, and
// is the snapshot the transaction reads at.
func TestTabletTxIDCarriesStartTimestamp(t *testing.T) {
	ctx := context.Background()
	yc := newClient(t, ytlocaltest.New(t))
	path := newMountedTable(t, ctx, yc, schema.MustInfer(&benchRow{}))
	require.NoError(t, yc.InsertRows(ctx, path, []any{&benchRow{Key: 1, Value: "before"}}, nil))

	var last uint64
	for range 3 {
		before, err := yc.GenerateTimestamp(ctx, nil)
		require.NoError(t, err)
		tx, err := yc.BeginTabletTx(ctx, nil)
		require.NoError(t, err)
		after, err := yc.GenerateTimestamp(ctx, nil)
		require.NoError(t, err)

		_, typ, lo, hi := guid.GUID(tx.ID()).Parts()
		require.Equal(t, uint32(2), typ&0xffff, "object type of %s: want AtomicTabletTransaction", tx.ID())
		start := uint64(hi)<<32 | uint64(lo)
		require.Greater(t, start, uint64(before), "start timestamp of %s", tx.ID())
		require.Less(t, start, uint64(after), "start timestamp of %s", tx.ID())
		require.Greater(t, start, last)
		last = start

		// A row committed after the transaction started is not in its snapshot.
		require.NoError(t, yc.InsertRows(ctx, path, []any{&benchRow{Key: 1, Value: "after"}}, nil))
		r, err := tx.LookupRows(ctx, path, []any{&benchKey{Key: 1}}, nil)
		require.NoError(t, err)
		require.True(t, r.Next())
		var got benchRow
		require.NoError(t, r.Scan(&got))
		require.NoError(t, r.Close())
		require.Equal(t, "before", got.Value, "the transaction reads at its start timestamp")
		require.NoError(t, tx.Abort())
		require.NoError(t, yc.InsertRows(ctx, path, []any{&benchRow{Key: 1, Value: "before"}}, nil))
	}
}
