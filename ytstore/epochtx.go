package ytstore

import (
	"context"
	"sync/atomic"
	"time"

	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/yt"
)

// EpochTx is a tablet transaction begun before the epoch it will commit is ready, so that
// starting it overlaps the epoch's reads instead of preceding its writes. It is used by at
// most one CommitEpoch; Release aborts it if no commit used it.
type EpochTx struct {
	tx   *tableTx
	used atomic.Bool
	// start is the transaction's start timestamp, 0 when not known.
	start uint64
}

// StartTimestamp is the transaction's start timestamp, 0 when the cluster's transaction ids
// do not tell it. It is unique and later than every timestamp drawn before the transaction
// began, so it serves as the epoch's token (EpochWrite.Token) as YTsaurus Flow stores
// last_transaction_start_timestamp in partition_transactions, saving a generate_timestamp
// request per epoch (TestEpochTxStartTimestamp).
func (t *EpochTx) StartTimestamp() uint64 { return t.start }

// BeginEpochTx begins a tablet transaction for a later CommitEpoch (EpochWrite.Tx). The
// transaction's start timestamp precedes the epoch's reads, which only widens the window in
// which a conflicting write would abort the commit.
//
// A YTsaurus tablet transaction id carries its start timestamp (TimestampFromTransactionId:
// the two high words of an atomic tablet transaction's id). StartTimestamp tells it once
// CheckTxTimestamps found that this cluster's ids do; until then (the check runs in the
// background from the first call, if nobody ran it before) it is 0.
func (s *Store) BeginEpochTx(ctx context.Context) (*EpochTx, error) {
	known := s.txTimestamps.Load()
	if known == 0 && !s.txCheckRunning.Load() {
		go func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			_, _ = s.CheckTxTimestamps(cctx)
		}()
	}
	tx, err := s.beginTabletTx(ctx)
	if err != nil {
		return nil, err
	}
	t := &EpochTx{tx: tx}
	if start, ok := TabletTxStartTimestamp(tx.id); ok && known == 1 {
		t.start = start
	}
	return t, nil
}

// CheckTxTimestamps finds out, once, whether this cluster's tablet transaction ids carry
// their start timestamps: a timestamp drawn before a transaction began must be below the one
// read from its id, and one drawn after it above. A worker runs it at its start, so that its
// first epochs need not. While another call checks, it returns false at once (not known yet):
// one check runs at a time.
func (s *Store) CheckTxTimestamps(ctx context.Context) (bool, error) {
	if known := s.txTimestamps.Load(); known != 0 {
		return known == 1, nil
	}
	if !s.txCheckRunning.CompareAndSwap(false, true) {
		return false, nil
	}
	defer s.txCheckRunning.Store(false)
	before, err := s.GenerateTimestamp(ctx)
	if err != nil {
		return false, err
	}
	tx, err := s.beginTabletTx(ctx)
	if err != nil {
		return false, err
	}
	defer tx.abort()
	after, err := s.GenerateTimestamp(ctx)
	if err != nil {
		return false, err
	}
	start, ok := TabletTxStartTimestamp(tx.id)
	if ok && before < start && start < after {
		s.txTimestamps.Store(1)
		return true, nil
	}
	s.txTimestamps.Store(-1)
	s.logger.Info("tablet transaction ids do not carry start timestamps: each epoch draws its token with generate_timestamp")
	return false, nil
}

// TabletTxStartTimestamp reads the start timestamp an atomic tablet transaction's id carries
// (the two high words, as YTsaurus's TimestampFromTransactionId reads them); false when the
// id's object type is not an atomic tablet transaction.
func TabletTxStartTimestamp(id yt.TxID) (uint64, bool) {
	_, typ, lo, hi := guid.GUID(id).Parts()
	const atomicTabletTransaction = 2 // YTsaurus EObjectType::AtomicTabletTransaction
	if typ&0xffff != atomicTabletTransaction {
		return 0, false
	}
	start := uint64(hi)<<32 | uint64(lo)
	return start, start != 0
}

// take hands the transaction to its one commit attempt; false when it was used or released.
func (t *EpochTx) take() bool { return t != nil && t.used.CompareAndSwap(false, true) }

// Release aborts the transaction in the background unless a commit used it. Safe on nil.
func (t *EpochTx) Release() {
	if t.take() {
		go t.tx.abort()
	}
}
