// Scenario tests of the commit loop: unknown outcomes, lost and live leases (runner.commit).

package job

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytstore"
)

// faultyCommits wraps the real store: for the first `lose` commits it reports the outcome as
// unknown, after really committing when apply is set (the reply was lost) or without
// committing (the request was lost).
type faultyCommits struct {
	*ytstore.Store
	lose    int
	apply   bool
	commits int
}

func (f *faultyCommits) CommitEpoch(ctx context.Context, w *ytstore.EpochWrite) error {
	f.commits++
	if f.commits > f.lose {
		return f.Store.CommitEpoch(ctx, w)
	}
	if f.apply {
		if err := f.Store.CommitEpoch(ctx, w); err != nil {
			return err
		}
	}
	return ytstore.ErrCommitUnknown
}

func commitEnv(t *testing.T) (*ytstore.Store, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	srv, err := ytlocal.Start(ctx, ytlocal.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: srv.Addr(), Path: "//tmp/p"})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	require.NoError(t, st.CreatePipeline(ctx))
	return st, ctx
}

func testRunner(st *ytstore.Store, c committer, partition, lease string) *runner {
	w := NewWorker(Config{})
	return &runner{w: w, loads: st, reads: st, commits: c, log: w.log, comp: &spec.Computation{ID: "c"},
		job: ytstore.Job{JobID: "j", PartitionID: partition, LeaseID: lease}}
}

func countWrite(partition, lease string, token uint64) *ytstore.EpochWrite {
	return &ytstore.EpochWrite{PartitionID: partition, Lease: lease, Token: token,
		Dedup:  []ytstore.DedupRow{{DedupKey: ytstore.DedupKey{ComputationID: "c", Key: []byte("k"), MessageID: "m1"}}},
		States: []ytstore.StateRow{{ComputationID: "c", Key: []byte("k"), Name: "n", State: []byte("1")}}}
}

// TestCommitUnknownRecheck: an epoch whose commit outcome is unknown is resolved by re-reading
// the partition token: applied (the reply was lost) is success and is not committed again;
// not applied (the request was lost) is reported as such, so the epoch is recomputed.
func TestCommitUnknownRecheck(t *testing.T) {
	st, ctx := commitEnv(t)
	for _, tc := range []struct {
		name, partition string
		apply           bool
	}{
		{"reply lost", "p-reply", true},
		{"request lost", "p-request", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lease, err := st.StartLease(ctx, "j", time.Minute)
			require.NoError(t, err)
			f := &faultyCommits{Store: st, lose: 1, apply: tc.apply}
			r := testRunner(st, f, tc.partition, lease)
			token, err := st.GenerateTimestamp(ctx)
			require.NoError(t, err)
			err = r.commit(ctx, countWrite(tc.partition, lease, token))
			assert.Equal(t, 1, f.commits, "the commit is never sent twice")
			stored, found, rerr := st.PartitionToken(ctx, tc.partition)
			require.NoError(t, rerr)
			assert.Equal(t, int64(1), r.stats.unknown.Load(), "the unknown outcome is counted")
			assert.Zero(t, r.stats.fenced.Load())
			if tc.apply {
				require.NoError(t, err, "an applied epoch is a success")
				assert.True(t, found)
				assert.Equal(t, token, stored)
				assert.Zero(t, r.stats.notApplied.Load())
			} else {
				require.ErrorIs(t, err, errNotApplied, "an epoch that did not apply is recomputed")
				assert.False(t, found, "nothing applied")
				assert.Equal(t, int64(1), r.stats.notApplied.Load(), "the epoch that did not apply is counted")
			}
		})
	}
}

func TestCommitLeaseLostStops(t *testing.T) {
	st, ctx := commitEnv(t)
	lease, err := st.StartLease(ctx, "j", time.Minute)
	require.NoError(t, err)
	require.NoError(t, st.AbortLease(ctx, lease))
	r := testRunner(st, st, "p", lease)
	err = r.commit(ctx, countWrite("p", lease, 5))
	require.ErrorIs(t, err, ErrZombie)
	assert.Equal(t, int64(1), r.stats.fenced.Load(), "the fenced commit is counted")
	_, found, err := st.PartitionToken(ctx, "p")
	require.NoError(t, err)
	assert.False(t, found, "nothing written")
}

// noSuchTx commits for real and then reports "no such transaction", as a retried commit
// request whose first reply was lost would see.
type noSuchTx struct{ *ytstore.Store }

func (n noSuchTx) CommitEpoch(ctx context.Context, w *ytstore.EpochWrite) error {
	if err := n.Store.CommitEpoch(ctx, w); err != nil {
		return err
	}
	return fmt.Errorf("commit: %w", ytstore.ErrLeaseLost)
}

func TestCommitLeaseAliveRechecks(t *testing.T) {
	st, ctx := commitEnv(t)
	lease, err := st.StartLease(ctx, "j", time.Minute)
	require.NoError(t, err)
	r := testRunner(st, noSuchTx{st}, "p-alive", lease)
	require.NoError(t, r.commit(ctx, countWrite("p-alive", lease, 77)), "the lease is alive: the applied epoch is a success, not a zombie")
	assert.Zero(t, r.stats.fenced.Load(), "not fenced")
	assert.Equal(t, int64(1), r.stats.unknown.Load(), "resolved as an unknown outcome")
}
