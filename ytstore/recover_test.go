package ytstore

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yt"
)

// TestRecoverSDK: a panic inside an SDK call (the pinned SDK's InsertRowBatch panics on the
// nil writer it can return) becomes an error of the write, and a failed write leaves the
// epoch uncommitted: its partition token, dedup rows and states are not there, and the same
// epoch commits afterwards.
func TestRecoverSDK(t *testing.T) {
	err := recoverSDK(func() error {
		var w io.WriteCloser // what the SDK's row-batch race hands its table writer
		return w.Close()
	})
	require.ErrorIs(t, err, errSDKPanic)
	assert.Contains(t, err.Error(), "nil pointer")
	assert.NoError(t, recoverSDK(func() error { return nil }))
	sentinel := errors.New("insert refused")
	assert.ErrorIs(t, recoverSDK(func() error { return sentinel }), sentinel)

	s, ctx := epochStore(t)
	lease, err := s.StartLease(ctx, "job-1", time.Minute)
	require.NoError(t, err)
	timers := s.child(TableTimers)
	require.NoError(t, s.yc.UnmountTable(ctx, timers, nil))
	require.Error(t, s.CommitEpoch(ctx, sampleEpoch("p1", lease, 100)), "a write into an unmounted table fails the epoch")
	_, found, err := s.PartitionToken(ctx, "p1")
	require.NoError(t, err)
	assert.False(t, found, "a failed write leaves the epoch uncommitted")
	states, err := s.LoadStates(ctx, "c", []uint64{7})
	require.NoError(t, err)
	assert.Empty(t, states, "nothing of a failed epoch is written")

	require.NoError(t, s.yc.MountTable(ctx, timers, nil))
	require.NoError(t, s.CommitEpoch(ctx, sampleEpoch("p1", lease, 100)), "the epoch computed again commits")
	token, found, err := s.PartitionToken(ctx, "p1")
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, uint64(100), token)
}

// racyClient is the real client with the SDK's InsertRowBatch race forced: the batch is
// applied, and then the call panics on a nil writer, as the pinned SDK does when the
// round trip wins its select (recoverSDK).
type racyClient struct {
	yt.Client
	panics atomic.Int64
}

func (c *racyClient) InsertRowBatch(ctx context.Context, p ypath.Path, b yt.RowBatch, o *yt.InsertRowsOptions) error {
	if err := c.Client.InsertRowBatch(ctx, p, b, o); err != nil {
		return err
	}
	c.panics.Add(1)
	var w io.WriteCloser
	return w.Close()
}

// TestInsertBatchResendsAfterSDKPanic: when every batch insert of an epoch panics after it
// was applied, the epoch still commits once, with each row as written: the rows sent
// again through InsertRows overwrite themselves in the same tablet transaction.
func TestInsertBatchResendsAfterSDKPanic(t *testing.T) {
	s, ctx := epochStore(t)
	racy := &racyClient{Client: s.yc}
	s.yc = racy
	lease, err := s.StartLease(ctx, "job-1", time.Minute)
	require.NoError(t, err)

	require.NoError(t, s.CommitEpoch(ctx, sampleEpoch("p1", lease, 100)))
	require.Positive(t, racy.panics.Load(), "the epoch's writes went through InsertRowBatch")
	assert.Equal(t, racy.panics.Load(), s.sdkPanics.Load(), "each panicked batch was sent again")

	requireSampleCommitted(ctx, t, s, 100)
	states, err := s.LoadStates(ctx, "c", []uint64{7})
	require.NoError(t, err)
	require.Len(t, states, 1)
	assert.Equal(t, []byte("2"), states[0].State)

	// The next epoch of the partition commits over the resent rows.
	require.NoError(t, s.CommitEpoch(ctx, sampleEpoch("p1", lease, 101)))
	token, _, err := s.PartitionToken(ctx, "p1")
	require.NoError(t, err)
	assert.Equal(t, uint64(101), token)
}

// TestSinkBatchIntoQueueNotSentAgain: a sync sink's batch into a queue (an ordered table,
// where rows sent again would be appended twice) that the SDK panics on fails the epoch's
// write instead of being sent again; the epoch computed again writes each row once.
func TestSinkBatchIntoQueueNotSentAgain(t *testing.T) {
	s, ctx := epochStore(t)
	qs := schema.Schema{Columns: []schema.Column{{Name: "word", Type: schema.TypeString}, {Name: "n", Type: schema.TypeInt64}}}
	require.NoError(t, s.EnsureUserTable(ctx, UserTable{Path: "//tmp/visits", Kind: UserQueue, Schema: qs}))
	plain := s.yc
	racy := &racyClient{Client: plain}
	s.yc = racy
	lease, err := s.StartLease(ctx, "job-1", time.Minute)
	require.NoError(t, err)
	w := func() *EpochWrite {
		e := sampleEpoch("p1", lease, 100)
		e.Sinks = []SinkWrite{{Path: "//tmp/visits", Rows: []map[string]any{{"word": "a", "n": int64(1)}, {"word": "b", "n": int64(2)}}}}
		return e
	}

	err = s.CommitEpoch(ctx, w())
	require.ErrorIs(t, err, errSDKPanic, "the queue's batch is not sent again")
	_, found, err := s.PartitionToken(ctx, "p1")
	require.NoError(t, err)
	assert.False(t, found, "the epoch did not commit")
	rows, err := s.SelectRows(ctx, "word FROM [//tmp/visits]")
	require.NoError(t, err)
	assert.Empty(t, rows, "nothing of the failed epoch is in the queue")

	s.yc = plain
	require.NoError(t, s.CommitEpoch(ctx, w()), "the epoch computed again commits")
	rows, err = s.SelectRows(ctx, "word FROM [//tmp/visits]")
	require.NoError(t, err)
	assert.Len(t, rows, 2, "each row once")
}

// TestSortedTables: the tables whose rows insertBatch may send again are the sorted ones;
// controller_logs, the ordered one, is not among them.
func TestSortedTables(t *testing.T) {
	for _, d := range tables() {
		assert.Equal(t, !d.ordered, sortedTables[d.name], d.name)
	}
	assert.False(t, sortedTables[TableControllerLogs])
	assert.True(t, sortedTables[TableStates])
}
