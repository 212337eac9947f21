// Tablet transactions that commit with prerequisite master transactions (tableTx).

package ytstore

import (
	"context"
	"fmt"

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

func (t *tableTx) insert(ctx context.Context, table string, rows []any) error {
	if len(rows) == 0 {
		return nil
	}
	opts := &yt.InsertRowsOptions{TransactionOptions: t.opts()}
	var err error
	if sent, berr := t.insertBatch(ctx, table, rows, opts); berr != nil {
		err = berr
	} else if !sent {
		err = t.s.yc.InsertRows(ctx, t.path(table), rows, opts)
	}
	if err != nil {
		return fmt.Errorf("ytstore: insert into %s: %w", t.path(table), classify(err))
	}
	return nil
}

// insertBatch inserts rows that all encode themselves as one pre-encoded batch (rowbatch.go);
// sent is false, with nothing sent, when they do not or the SDK's batch is not usable.
func (t *tableTx) insertBatch(ctx context.Context, table string, rows []any, opts *yt.InsertRowsOptions) (sent bool, err error) {
	buf := getRowBuffer()
	defer putRowBuffer(buf)
	body, ok := encodeRows(*buf, rows)
	*buf = body
	if !ok {
		return false, nil
	}
	batch, ok, err := t.s.rowBatch(body)
	if err != nil || !ok {
		return false, err
	}
	return true, t.s.yc.InsertRowBatch(ctx, t.path(table), batch, opts)
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
