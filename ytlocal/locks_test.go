package ytlocal_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yt"
	"go.ytsaurus.tech/yt/go/yterrors"

	"github.com/ytflow/yt-flow/ytlocal/ytlocaltest"
)

func inTx(id yt.TxID) *yt.TransactionOptions { return &yt.TransactionOptions{TransactionID: id} }

func TestWaitableLockAcquiredWhenHolderEnds(t *testing.T) {
	ctx := context.Background()
	yc := newClient(t, ytlocaltest.New(t))
	p := ypath.Path("//tmp/locked")
	_, err := yc.CreateNode(ctx, p, yt.NodeMap, nil)
	require.NoError(t, err)

	holder, err := yc.BeginTx(ctx, nil)
	require.NoError(t, err)
	waiter, err := yc.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = waiter.Abort() }()
	_, err = holder.LockNode(ctx, p, yt.LockExclusive, nil)
	require.NoError(t, err)

	_, err = waiter.LockNode(ctx, p, yt.LockExclusive, nil)
	require.True(t, yterrors.ContainsErrorCode(err, yterrors.CodeConcurrentTransactionLockConflict), "%v", err)

	_, err = waiter.LockNode(ctx, p, yt.LockExclusive, &yt.LockNodeOptions{Waitable: true})
	require.NoError(t, err)
	var locks []map[string]any
	require.NoError(t, yc.GetNode(ctx, p.Attr("locks"), &locks, nil))
	require.Len(t, locks, 2)
	require.Equal(t, "pending", locks[1]["state"])

	require.NoError(t, holder.Abort())
	require.NoError(t, yc.GetNode(ctx, p.Attr("locks"), &locks, nil))
	require.Len(t, locks, 1)
	require.Equal(t, "acquired", locks[0]["state"])
	require.Equal(t, waiter.ID().String(), locks[0]["transaction_id"])
}

func TestImplicitLocksConflictWithTransactions(t *testing.T) {
	ctx := context.Background()
	yc := newClient(t, ytlocaltest.New(t))
	p := ypath.Path("//tmp/doc")
	require.NoError(t, yc.SetNode(ctx, p, "v0", nil))

	tx, err := yc.StartTx(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, yc.SetNode(ctx, p, "v1", &yt.SetNodeOptions{TransactionOptions: inTx(tx)}))

	// The transaction holds an exclusive lock: outside writes and removal conflict.
	err = yc.SetNode(ctx, p, "v2", nil)
	require.True(t, yterrors.ContainsErrorCode(err, yterrors.CodeConcurrentTransactionLockConflict), "%v", err)
	err = yc.RemoveNode(ctx, p, nil)
	require.True(t, yterrors.ContainsErrorCode(err, yterrors.CodeConcurrentTransactionLockConflict), "%v", err)
	// Attributes under a different key and other children are fine.
	_, err = yc.CreateNode(ctx, ypath.Path("//tmp/other"), yt.NodeMap, nil)
	require.NoError(t, err)

	var v string
	require.NoError(t, yc.GetNode(ctx, p, &v, nil))
	require.Equal(t, "v0", v)
	require.NoError(t, yc.CommitTx(ctx, tx, nil))
	require.NoError(t, yc.GetNode(ctx, p, &v, nil))
	require.Equal(t, "v1", v)
	require.NoError(t, yc.SetNode(ctx, p, "v2", nil))
}

func TestDeadlineAbortsPingedTransaction(t *testing.T) {
	ctx := context.Background()
	yc := newClient(t, ytlocaltest.New(t))
	deadline := yson.Time(time.Now().Add(time.Second))
	timeout := yson.Duration(time.Minute)
	id, err := yc.StartTx(ctx, &yt.StartTxOptions{Deadline: &deadline, Timeout: &timeout})
	require.NoError(t, err)
	eventually(t, 30*time.Second, "deadline abort", func() bool {
		err := yc.PingTx(ctx, id, nil)
		if err == nil {
			return false
		}
		require.True(t, yterrors.ContainsErrorCode(err, yterrors.CodeNoSuchTransaction), "%v", err)
		return true
	})
}
