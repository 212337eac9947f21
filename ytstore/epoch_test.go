package ytstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/yt"

	"github.com/ytflow/yt-flow/ytlocal"
)

// epochStore starts ytlocal and returns a store on a fresh pipeline.
func epochStore(t *testing.T) (*Store, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	srv, err := ytlocal.Start(ctx, ytlocal.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	s, err := Open(ctx, Config{Proxy: srv.Addr(), Path: "//tmp/pipe"})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	require.NoError(t, s.CreatePipeline(ctx))
	return s, ctx
}

func sampleEpoch(partition, lease string, token uint64) *EpochWrite {
	return &EpochWrite{
		PartitionID: partition, Lease: lease, Token: token,
		Dedup: []DedupRow{
			{DedupKey: DedupKey{ComputationID: "c", Key: []byte("k1"), KeyHash: 7, MessageID: "m1"}, SystemTimestamp: 1},
			{DedupKey: DedupKey{ComputationID: "c", Key: []byte("k1"), KeyHash: 7, MessageID: "m2", Compact: true}, SystemTimestamp: 1},
		},
		States:    []StateRow{{ComputationID: "c", KeyHash: 7, Key: []byte("k1"), Name: "count", State: []byte("2")}},
		TimersSet: []TimerRow{{ComputationID: "c", KeyHash: 7, Key: []byte("k1"), MessageID: "t1", StreamID: "flush", TriggerTimestamp: 9}},
		OutputsAdd: []OutputRow{{PartitionID: partition, Destination: "down", MessageID: "o1", StreamID: "s",
			Key: []byte("k2"), KeyHash: 8, Payload: []byte("{}")}},
		PartitionStates: map[string][]byte{"offset/lines": []byte("5")},
	}
}

// requireSampleCommitted checks that sampleEpoch of partition p1 committed with token: its
// token, dedup rows, outbox row, partition states and timer are there (its state row is
// checked by the callers, whose tables may hold others).
func requireSampleCommitted(ctx context.Context, t *testing.T, s *Store, token uint64) {
	t.Helper()
	stored, found, err := s.PartitionToken(ctx, "p1")
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, token, stored)
	dup, err := s.LookupDedup(ctx, []DedupKey{
		{ComputationID: "c", Key: []byte("k1"), KeyHash: 7, MessageID: "m1"},
		{ComputationID: "c", Key: []byte("k1"), KeyHash: 7, MessageID: "m2", Compact: true},
	})
	require.NoError(t, err)
	assert.Equal(t, []bool{true, true}, dup)
	outs, err := s.LoadOutputs(ctx, "p1")
	require.NoError(t, err)
	require.Len(t, outs, 1, "the outbox row is there once")
	assert.Equal(t, "o1", outs[0].MessageID)
	ps, err := s.LoadPartitionStates(ctx, "p1")
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{"offset/lines": []byte("5")}, ps)
	timers, err := s.LoadTimers(ctx, "c", 0, 0)
	require.NoError(t, err)
	assert.Len(t, timers, 1)
}

func TestCommitEpochAtomic(t *testing.T) {
	s, ctx := epochStore(t)
	lease, err := s.StartLease(ctx, "job-1", time.Minute)
	require.NoError(t, err)

	require.NoError(t, s.CommitEpoch(ctx, sampleEpoch("p1", lease, 100)))

	token, found, err := s.PartitionToken(ctx, "p1")
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, uint64(100), token, "the commit token is what an unknown outcome is checked against")

	dup, err := s.LookupDedup(ctx, []DedupKey{
		{ComputationID: "c", Key: []byte("k1"), KeyHash: 7, MessageID: "m1"},
		{ComputationID: "c", Key: []byte("k1"), KeyHash: 7, MessageID: "m2", Compact: true},
		{ComputationID: "c", Key: []byte("k1"), KeyHash: 7, MessageID: "m3"},
		{ComputationID: "c", Key: []byte("k1"), KeyHash: 7, MessageID: "m3", Compact: true},
	})
	require.NoError(t, err)
	assert.Equal(t, []bool{true, true, false, false}, dup)

	states, err := s.LoadStates(ctx, "c", []uint64{7})
	require.NoError(t, err)
	require.Len(t, states, 1)
	assert.Equal(t, []byte("2"), states[0].State)

	timers, err := s.LoadTimers(ctx, "c", 0, 0)
	require.NoError(t, err)
	require.Len(t, timers, 1)
	assert.Equal(t, uint64(9), timers[0].TriggerTimestamp)
	none, err := s.LoadTimers(ctx, "c", 8, 0)
	require.NoError(t, err)
	assert.Empty(t, none, "timers outside the hash range are not loaded")

	outs, err := s.LoadOutputs(ctx, "p1")
	require.NoError(t, err)
	require.Len(t, outs, 1)
	assert.Equal(t, "o1", outs[0].MessageID)
	assert.Equal(t, OutputChunk{ID: 100}, outs[0].Chunk, "an epoch's outputs are stored in a chunk named by its token")

	ps, err := s.LoadPartitionStates(ctx, "p1")
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{"offset/lines": []byte("5")}, ps)

	// The next epoch deletes what the first one wrote.
	next := &EpochWrite{PartitionID: "p1", Lease: lease, Token: 101,
		States:          []StateRow{{ComputationID: "c", KeyHash: 7, Key: []byte("k1"), Name: "count"}},
		TimersFired:     timers,
		OutputsDone:     []OutputKey{outs[0].StoreKey()},
		PartitionStates: map[string][]byte{"offset/lines": nil},
	}
	require.NoError(t, s.CommitEpoch(ctx, next))
	states, err = s.LoadStates(ctx, "c", []uint64{7})
	require.NoError(t, err)
	assert.Empty(t, states, "a nil state deletes the row")
	timers, err = s.LoadTimers(ctx, "c", 0, 0)
	require.NoError(t, err)
	assert.Empty(t, timers, "fired timers are deleted")
	outs, err = s.LoadOutputs(ctx, "p1")
	require.NoError(t, err)
	assert.Empty(t, outs, "acknowledged outputs are deleted")
}

func TestZombieCommitRejected(t *testing.T) {
	s, ctx := epochStore(t)
	require.NoError(t, s.EnsureUserTable(ctx, UserTable{Path: "//tmp/sink", Kind: UserSortedTable, Schema: schema.Schema{
		UniqueKeys: true,
		Columns: []schema.Column{
			{Name: "k", Type: schema.TypeString, SortOrder: schema.SortAscending},
			{Name: "v", Type: schema.TypeInt64},
		},
	}}))
	lease, err := s.StartLease(ctx, "job-z", time.Minute)
	require.NoError(t, err)
	require.NoError(t, s.AbortLease(ctx, lease))

	w := sampleEpoch("pz", lease, 200)
	w.Sinks = []SinkWrite{{Path: "//tmp/sink", Rows: []map[string]any{{"k": "a", "v": int64(1)}}}}
	err = s.CommitEpoch(ctx, w)
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrLeaseLost), "a dead lease is reported as ErrLeaseLost: %v", err)

	_, found, err := s.PartitionToken(ctx, "pz")
	require.NoError(t, err)
	assert.False(t, found, "no partition token written")
	dup, err := s.LookupDedup(ctx, []DedupKey{{ComputationID: "c", Key: []byte("k1"), KeyHash: 7, MessageID: "m1"}})
	require.NoError(t, err)
	assert.Equal(t, []bool{false}, dup, "no dedup row written")
	states, err := s.LoadStates(ctx, "c", []uint64{7})
	require.NoError(t, err)
	assert.Empty(t, states, "no state written")
	outs, err := s.LoadOutputs(ctx, "pz")
	require.NoError(t, err)
	assert.Empty(t, outs, "no output written")
	rows, err := s.SelectRows(ctx, "* from [//tmp/sink]")
	require.NoError(t, err)
	assert.Empty(t, rows, "no sink write")
}

func TestQueueRoundTrip(t *testing.T) {
	s, ctx := epochStore(t)
	qs := schema.Schema{Columns: []schema.Column{{Name: "data", Type: schema.TypeString}}}
	require.NoError(t, s.EnsureUserTable(ctx, UserTable{Path: "//tmp/q", Kind: UserQueue, Schema: qs}))
	require.NoError(t, s.EnsureUserTable(ctx, UserTable{Path: "//tmp/consumer", Kind: UserConsumer, Queue: "//tmp/q"}))
	require.NoError(t, s.EnsureUserTable(ctx, UserTable{Path: "//tmp/out", Kind: UserQueue, Schema: qs}))
	require.NoError(t, s.EnsureUserTable(ctx, UserTable{Path: "//tmp/producer", Kind: UserProducer}))

	require.NoError(t, s.InsertRows(ctx, "//tmp/q", []map[string]any{{"data": "a"}, {"data": "b"}, {"data": "c"}}))
	rows, err := s.PullQueue(ctx, "//tmp/q", "//tmp/consumer", 0, 1, 10)
	require.NoError(t, err)
	require.Len(t, rows, 2)
	assert.Equal(t, int64(1), rows[0].Offset)
	assert.Equal(t, "b", rows[0].Columns["data"])
	_, hasSystem := rows[0].Columns["$row_index"]
	assert.False(t, hasSystem, "system columns are removed")
	require.NoError(t, s.AdvanceConsumer(ctx, "//tmp/q", "//tmp/consumer", 0, 3))

	ps, err := s.OpenProducerSession(ctx, "//tmp/producer", "//tmp/out", "p0/sink")
	require.NoError(t, err)
	_, err = s.Push(ctx, ps, 0, []map[string]any{{"data": "x"}, {"data": "y"}})
	require.NoError(t, err)
	last, err := s.Push(ctx, ps, 0, []map[string]any{{"data": "x"}, {"data": "y"}})
	require.NoError(t, err)
	assert.Equal(t, int64(1), last)
	out, err := s.SelectRows(ctx, "data from [//tmp/out]")
	require.NoError(t, err)
	assert.Len(t, out, 2, "a resend with the same sequence numbers is dropped by the queue")
}

// TestDedupPayloadFingerprint stores a payload fingerprint with each dedup row and reads it
// back; on a pipeline whose dedup tables predate the column (recreated here with the old
// schemas), commits still apply and lookups report no fingerprint.
func TestDedupPayloadFingerprint(t *testing.T) {
	keys := []DedupKey{
		{ComputationID: "c", Key: []byte("k1"), KeyHash: 7, MessageID: "m1"},
		{ComputationID: "c", Key: []byte("k1"), KeyHash: 7, MessageID: "m2", Compact: true},
		{ComputationID: "c", Key: []byte("k1"), KeyHash: 7, MessageID: "absent", Compact: true},
	}
	commit := func(s *Store, ctx context.Context) {
		t.Helper()
		lease, err := s.StartLease(ctx, "job-1", time.Minute)
		require.NoError(t, err)
		w := sampleEpoch("p1", lease, 100)
		w.Dedup[0].PayloadFingerprint = 11
		w.Dedup[1].PayloadFingerprint = 22
		require.NoError(t, s.CommitEpoch(ctx, w))
	}

	s, ctx := epochStore(t)
	commit(s, ctx)
	hits, err := s.LookupDedupRows(ctx, keys)
	require.NoError(t, err)
	assert.Equal(t, []DedupHit{{Found: true, PayloadFingerprint: 11}, {Found: true, PayloadFingerprint: 22}, {}}, hits)

	old, oldCtx := epochStore(t)
	for _, td := range dataTables() {
		if td.name != TableInputMessages && td.name != TableCompactInputMessages {
			continue
		}
		var cols []schema.Column
		for _, c := range td.schema.Columns {
			if c.Name != "payload_fingerprint" {
				cols = append(cols, c)
			}
		}
		td.schema.Columns = cols
		require.NoError(t, old.yc.RemoveNode(oldCtx, old.child(td.name), nil))
		require.NoError(t, old.createTable(oldCtx, td))
		require.NoError(t, old.mountTable(oldCtx, td))
	}
	commit(old, oldCtx)
	hits, err = old.LookupDedupRows(oldCtx, keys)
	require.NoError(t, err)
	assert.Equal(t, []DedupHit{{Found: true}, {Found: true}, {}}, hits, "without the column: found, no fingerprint")
}

// TestPullQueueColumnTypes reads queue rows of every column type: scalar rows take the
// binary fast path, a row with a composite value the SDK's decoder; both give what the SDK
// gives for the same rows.
func TestPullQueueColumnTypes(t *testing.T) {
	s, ctx := epochStore(t)
	qs := schema.Schema{Columns: []schema.Column{
		{Name: "s", Type: schema.TypeString}, {Name: "i", Type: schema.TypeInt64},
		{Name: "u", Type: schema.TypeUint64}, {Name: "d", Type: schema.TypeFloat64},
		{Name: "b", Type: schema.TypeBoolean}, {Name: "a", Type: schema.TypeAny},
	}}
	require.NoError(t, s.EnsureUserTable(ctx, UserTable{Path: "//tmp/q", Kind: UserQueue, Schema: qs}))
	require.NoError(t, s.EnsureUserTable(ctx, UserTable{Path: "//tmp/consumer", Kind: UserConsumer, Queue: "//tmp/q"}))
	in := []map[string]any{
		{"s": "x\x00y", "i": int64(-5), "u": uint64(1 << 63), "d": 2.5, "b": true, "a": "scalar"},
		{"s": "", "i": int64(0), "u": uint64(0), "d": -0.5, "b": false, "a": nil},
		{"s": "z", "i": int64(7), "a": []any{int64(1), "two"}},
	}
	require.NoError(t, s.InsertRows(ctx, "//tmp/q", in))
	rows, err := s.PullQueue(ctx, "//tmp/q", "//tmp/consumer", 0, 0, 10)
	require.NoError(t, err)
	require.Len(t, rows, len(in))
	sdk, err := s.SelectRows(ctx, "s, i, u, d, b, a from [//tmp/q]")
	require.NoError(t, err)
	require.Len(t, sdk, len(in))
	for i, r := range rows {
		assert.Equal(t, int64(i), r.Offset)
		assert.Equal(t, sdk[i], r.Columns, "row %d decodes as the SDK decodes it", i)
		assert.Equal(t, in[i]["s"], r.Columns["s"], "row %d", i)
		assert.Equal(t, in[i]["a"], r.Columns["a"], "row %d", i)
	}
	assert.Equal(t, uint64(1<<63), rows[0].Columns["u"])
}

// TestCommitEpochInTxBegunAhead: an epoch commits in the tablet transaction begun ahead of
// it (EpochWrite.Tx) with the same atomicity and fencing as one begun by CommitEpoch; a
// transaction serves one commit attempt, and one released unused is aborted.
func TestCommitEpochInTxBegunAhead(t *testing.T) {
	s, ctx := epochStore(t)
	lease, err := s.StartLease(ctx, "job-1", time.Minute)
	require.NoError(t, err)

	tx, err := s.BeginEpochTx(ctx)
	require.NoError(t, err)
	w := sampleEpoch("p1", lease, 100)
	w.Tx = tx
	require.NoError(t, s.CommitEpoch(ctx, w))
	token, found, err := s.PartitionToken(ctx, "p1")
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, uint64(100), token)
	states, err := s.LoadStates(ctx, "c", []uint64{7})
	require.NoError(t, err)
	require.Len(t, states, 1, "the epoch's rows committed with its token")
	tx.Release() // used: nothing to abort

	// A used transaction is not used again: the next attempt begins its own.
	again := sampleEpoch("p1", lease, 101)
	again.Tx = tx
	require.NoError(t, s.CommitEpoch(ctx, again))
	token, _, err = s.PartitionToken(ctx, "p1")
	require.NoError(t, err)
	assert.Equal(t, uint64(101), token)

	// Released unused: aborted, so a commit can no longer use it.
	unused, err := s.BeginEpochTx(ctx)
	require.NoError(t, err)
	unused.Release()
	assert.False(t, unused.take(), "a released transaction is not handed to a commit")
	require.Eventually(t, func() bool {
		return s.yc.InsertRows(ctx, s.child(TablePartitionTransactions),
			[]any{partitionTransactionRow{PartitionID: "px", Token: 1}},
			&yt.InsertRowsOptions{TransactionOptions: unused.tx.opts()}) != nil
	}, time.Minute, 10*time.Millisecond, "the released transaction is aborted")

	// The lease fences a transaction begun ahead as well.
	zombie, err := s.BeginEpochTx(ctx)
	require.NoError(t, err)
	require.NoError(t, s.AbortLease(ctx, lease))
	late := sampleEpoch("p1", lease, 102)
	late.Tx = zombie
	err = s.CommitEpoch(ctx, late)
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrLeaseLost), "a dead lease is reported as ErrLeaseLost: %v", err)
	token, _, err = s.PartitionToken(ctx, "p1")
	require.NoError(t, err)
	assert.Equal(t, uint64(101), token, "the fenced commit wrote nothing")
}

// TestDedupRowWithoutSystemTimestamp: a message that carries no system timestamp gets a
// dedup row without one (null), and lookups still find it (they once failed to decode it
// and kept the reader's epoch from ever applying).
func TestDedupRowWithoutSystemTimestamp(t *testing.T) {
	s, ctx := epochStore(t)
	lease, err := s.StartLease(ctx, "job-1", time.Minute)
	require.NoError(t, err)
	w := sampleEpoch("p1", lease, 100)
	var keys []DedupKey
	for i := range w.Dedup {
		w.Dedup[i].SystemTimestamp = 0
		keys = append(keys, w.Dedup[i].DedupKey)
	}
	require.NotEmpty(t, keys)
	require.NoError(t, s.CommitEpoch(ctx, w))
	hits, err := s.LookupDedupRows(ctx, keys)
	require.NoError(t, err)
	for i, h := range hits {
		assert.True(t, h.Found, "key %d (%s)", i, keys[i].MessageID)
	}
}

// TestEpochTxStartTimestamp: a transaction begun ahead tells its start timestamp (read from
// its id once CheckTxTimestamps found that this cluster's ids carry it): later than a
// timestamp drawn before it began and earlier than one drawn after, increasing from one
// transaction to the next, and usable as the epoch's token (it is what PartitionToken reads
// back after the commit).
func TestEpochTxStartTimestamp(t *testing.T) {
	s, ctx := epochStore(t)
	lease, err := s.StartLease(ctx, "job-1", time.Minute)
	require.NoError(t, err)
	carry, err := s.CheckTxTimestamps(ctx)
	require.NoError(t, err)
	require.True(t, carry, "ytlocal's tablet transaction ids carry their start timestamps")
	var last uint64
	for i := range 3 {
		before, err := s.GenerateTimestamp(ctx)
		require.NoError(t, err)
		tx, err := s.BeginEpochTx(ctx)
		require.NoError(t, err)
		after, err := s.GenerateTimestamp(ctx)
		require.NoError(t, err)
		start := tx.StartTimestamp()
		require.NotZero(t, start, "transaction %d: ytlocal's tablet transaction ids carry their start timestamps", i)
		assert.Greater(t, start, before)
		assert.Less(t, start, after)
		assert.Greater(t, start, last)
		last = start

		w := sampleEpoch("p1", lease, start)
		w.Tx = tx
		require.NoError(t, s.CommitEpoch(ctx, w))
		token, found, err := s.PartitionToken(ctx, "p1")
		require.NoError(t, err)
		assert.True(t, found)
		assert.Equal(t, start, token)
	}
	assert.Equal(t, int32(1), s.txTimestamps.Load())

	_, ok := TabletTxStartTimestamp(yt.TxID(guid.FromParts(7, 1, 5, 6)))
	assert.False(t, ok, "a master transaction id carries no start timestamp")
	ts, ok := TabletTxStartTimestamp(yt.TxID(guid.FromParts(7, 2, 5, 6)))
	assert.True(t, ok)
	assert.Equal(t, uint64(6)<<32|5, ts)
}
