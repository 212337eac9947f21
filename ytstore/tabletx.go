// Tablet transactions that commit with prerequisite master transactions (tableTx).

package ytstore

import (
	"context"
	"errors"
	"fmt"

	"go.ytsaurus.tech/library/go/core/log"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yt"
)

// tableTx is a tablet transaction that can be committed with prerequisite
// master transactions (the SDK's TabletTx cannot carry prerequisites). Use it
// from one goroutine; abort after commit is a no-op.
type tableTx struct {
	s    *Store
	id   yt.TxID
	done bool
}

func (s *Store) beginTabletTx(ctx context.Context) (*tableTx, error) {
	id, err := s.yc.StartTabletTx(ctx, &yt.StartTabletTxOptions{Type: yt.TxTypeTablet, Sticky: true})
	if err != nil {
		return nil, fmt.Errorf("ytstore: start tablet transaction: %w", classify(err))
	}
	return &tableTx{s: s, id: id}, nil
}

func (t *tableTx) opts() *yt.TransactionOptions {
	return &yt.TransactionOptions{TransactionID: t.id}
}

func (t *tableTx) path(table string) ypath.Path { return t.s.child(table) }

// insert inserts rows: as one pre-encoded batch when they all encode themselves (rowbatch.go),
// else through InsertRows.
func (t *tableTx) insert(ctx context.Context, table string, rows []any) error {
	if len(rows) == 0 {
		return nil
	}
	if l, ok := asRowList(rows); ok {
		return t.insertList(ctx, table, l)
	}
	return t.insertValues(ctx, table, rows)
}

// insertList inserts the rows of l as one pre-encoded batch, or through InsertRows when the
// SDK's batch is not usable (rowBatch).
func (t *tableTx) insertList(ctx context.Context, table string, l rowList) error {
	buf := getRowBuffer()
	defer putRowBuffer(buf)
	*buf = l.appendRows(*buf)
	if len(*buf) == 0 {
		return nil
	}
	batch, ok, err := t.s.rowBatch(*buf)
	if err != nil {
		return fmt.Errorf("ytstore: insert into %s: %w", t.path(table), err)
	}
	if !ok {
		return t.insertValues(ctx, table, l.values())
	}
	opts := &yt.InsertRowsOptions{TransactionOptions: t.opts()}
	var resend func() error
	if sortedTables[table] { // every table but controller_logs, which no tableTx writes
		resend = func() error { return t.s.yc.InsertRows(ctx, t.path(table), l.values(), opts) }
	}
	err = t.s.insertBatch(ctx, t.path(table), batch, opts, resend)
	if err != nil {
		return fmt.Errorf("ytstore: insert into %s: %w", t.path(table), classify(err))
	}
	return nil
}

// insertBatch sends a pre-encoded batch of rows in a tablet transaction. When the SDK panics
// on it (recoverSDK) and resend is not nil, the same rows are sent again through resend,
// InsertRows of the same rows, whose streamed request has no such race. Only rows of a
// sorted table may be sent again: inserting a row twice in one tablet transaction leaves what
// inserting it once leaves there (an insert overwrites; no aggregate columns are written),
// whether or not the first batch was applied. An ordered table (a queue) would hold the rows
// twice, so for those resend is nil and the panic fails the write: the epoch's transaction
// is not committed and the epoch is computed again. A resend that fails fails the write too.
//
// Invariant: a panic inside the SDK's batch insert neither crashes the process nor loses or
// doubles a row (TestRecoverSDK, TestInsertBatchResendsAfterSDKPanic,
// TestSinkBatchIntoQueueNotSentAgain).
func (s *Store) insertBatch(ctx context.Context, p ypath.Path, batch yt.RowBatch, opts *yt.InsertRowsOptions, resend func() error) error {
	err := recoverSDK(func() error { return s.yc.InsertRowBatch(ctx, p, batch, opts) })
	if !errors.Is(err, errSDKPanic) || resend == nil {
		return err
	}
	s.sdkPanics.Add(1)
	s.logger.Debug("batch insert sent again after an SDK panic", log.String("table", string(p)), log.Error(err))
	if rerr := resend(); rerr != nil {
		return fmt.Errorf("%w; sent again: %w", err, rerr)
	}
	return nil
}

// sortedTables names the pipeline's sorted tables (tables): rows of those may be sent again
// in one tablet transaction (insertBatch).
var sortedTables = func() map[string]bool {
	m := map[string]bool{}
	for _, d := range tables() {
		if !d.ordered {
			m[d.name] = true
		}
	}
	return m
}()

// errSDKPanic is a panic inside an SDK call, returned as an error (recoverSDK).
var errSDKPanic = errors.New("the YTsaurus SDK panicked")

// recoverSDK runs the SDK call f and turns a panic in it into an error. The pinned SDK's
// InsertRowBatch can return a nil writer with a nil error when the request's round trip
// finishes before its caller waits for it (its doWrite closes readStarted at once for a row
// batch, and a select between that and the already closed error channel may take either),
// and then panics on that nil writer. The batch has been applied to the tablet transaction
// then; insertBatch sends the rows again rather than rely on that.
func recoverSDK(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", errSDKPanic, r)
		}
	}()
	return f()
}

// insertValues inserts rows through InsertRows (the SDK's writer).
func (t *tableTx) insertValues(ctx context.Context, table string, rows []any) error {
	err := t.s.yc.InsertRows(ctx, t.path(table), rows, &yt.InsertRowsOptions{TransactionOptions: t.opts()})
	if err != nil {
		return fmt.Errorf("ytstore: insert into %s: %w", t.path(table), classify(err))
	}
	return nil
}

func (t *tableTx) delete(ctx context.Context, table string, keys []any) error {
	if len(keys) == 0 {
		return nil
	}
	err := t.s.yc.DeleteRows(ctx, t.path(table), keys, &yt.DeleteRowsOptions{TransactionOptions: t.opts()})
	if err != nil {
		return fmt.Errorf("ytstore: delete from %s: %w", t.path(table), classify(err))
	}
	return nil
}

// commit commits with the given prerequisite transactions. A malformed
// prerequisite id gives ErrLeaseLost (it cannot name a live transaction).
func (t *tableTx) commit(ctx context.Context, prerequisites ...string) error {
	ids := make([]yt.TxID, 0, len(prerequisites))
	for _, p := range prerequisites {
		id, err := parseTxID(p)
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	opts := &yt.CommitTxOptions{Sticky: true}
	if len(ids) > 0 {
		opts.PrerequisiteOptions = &yt.PrerequisiteOptions{TransactionIDs: ids}
	}
	t.done = true
	if err := t.s.yc.CommitTx(ctx, t.id, opts); err != nil {
		return fmt.Errorf("ytstore: commit tablet transaction %s: %w", guidString(t.id), classifyCommit(err))
	}
	return nil
}

func (t *tableTx) abort() {
	if t.done {
		return
	}
	t.done = true
	_ = t.s.yc.AbortTx(context.Background(), t.id, &yt.AbortTxOptions{Sticky: true})
}
