package ytstore

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
