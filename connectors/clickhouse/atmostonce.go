package clickhouse

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"go.ytsaurus.tech/library/go/core/log"

	"github.com/ytflow/yt-flow/connectors/connector"
)

// atMostOnce is TAtMostOnceClickHouseSink's runtime for one job: one INSERT per message, and
// an INSERT that failed once started is acknowledged (counted and logged), not retried.
//
//   - Without at_most_once_strategy (or with enabled = %false) it is an async sink over the
//     output store (Deliver): messages go in order; a failure to open the session, before
//     any INSERT starts, returns an error and the runtime offers the batches again. Each
//     INSERT carries insert_deduplication_token = the message id, so that a message the
//     runtime offers again because a worker died between the INSERT and its
//     acknowledgement is dropped by a deduplicating table. Into a table that does not
//     deduplicate such a message is inserted twice: the connector SPI has no way to
//     acknowledge a message before its INSERT starts.
//   - With at_most_once_strategy enabled it is the best-effort writer behind the runtime's
//     bounded in-memory queue (WriteBestEffort): one attempt per message, no token; the
//     runtime never offers a row twice.
type atMostOnce struct {
	t       *target
	mu      sync.Mutex
	dropped atomic.Int64
}

func newAtMostOnce(t *target) *atMostOnce { return &atMostOnce{t: t} }

// Dropped is how many messages failed their INSERT and were acknowledged all the same.
func (s *atMostOnce) Dropped() int64 { return s.dropped.Load() }

// Deliver inserts each message of batches once, in order. It returns an error, with the
// batches before the failure's, only when nothing of a batch reached the server (the session
// cannot open, or no connection for its first message) or ctx ends; every other batch is
// held, its failed INSERTs dropped.
//
// Invariant: a message is inserted at most once: no INSERT is retried and a repeat offer
// carries the message id as its deduplication token (TestAtMostOnceDropsFailedInsert,
// TestClickHouseAtMostOnceConformance).
func (s *atMostOnce) Deliver(ctx context.Context, batches []connector.Batch) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.t
	if len(batches) == 0 {
		return 0, nil
	}
	if err := t.session(ctx, false); err != nil {
		return 0, err
	}
	for i := range batches {
		for j := range batches[i].Rows {
			if ctx.Err() != nil {
				if j == 0 {
					return i, fmt.Errorf("%s: %w", t.name, ctx.Err())
				}
				// Part of the batch was inserted: it is held, the rest of it lost, so that
				// nothing of it is offered twice.
				s.drop(int64(len(batches[i].Rows)-j), ctx.Err())
				return i + 1, fmt.Errorf("%s: %w", t.name, ctx.Err())
			}
			d := &batches[i].Rows[j]
			m, err := t.decode(d)
			var row []any
			if err == nil {
				row, err = t.values(m)
			}
			if err == nil {
				err = t.insert(ctx, [][]any{row}, d.MessageID)
			}
			if err != nil && j == 0 && notStarted(err) {
				// Nothing of the batch reached the server: it may be offered again.
				return i, err
			}
			if err != nil {
				s.drop(1, fmt.Errorf("message (seq %d): %w", d.SequenceNumber, err))
			}
		}
	}
	return len(batches), nil
}

// WriteBestEffort inserts each row once, without a token; the error of a failed INSERT is
// returned after the other rows were tried (the runtime's queue drops and counts the batch).
func (s *atMostOnce) WriteBestEffort(ctx context.Context, rows []map[string]any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.t
	if err := t.session(ctx, false); err != nil {
		return err
	}
	var errs []error
	for _, m := range rows {
		row, err := t.values(m)
		if err == nil {
			err = t.insert(ctx, [][]any{row}, "")
		}
		if err != nil {
			s.dropped.Add(1)
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: %d of %d rows not inserted, the first: %w", t.name, len(errs), len(rows), errs[0])
	}
	return nil
}

func (s *atMostOnce) drop(n int64, err error) {
	s.dropped.Add(n)
	s.t.log.Warn("ClickHouse at-most-once sink dropped a message whose INSERT failed",
		log.String("sink", s.t.name), log.Int64("dropped_total", s.dropped.Load()), log.Error(err))
}

// Close closes the session.
func (s *atMostOnce) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t.Close()
}
