package clickhouse

import (
	"context"
	"fmt"
	"sync"

	"github.com/ytflow/yt-flow/flow"
)

// atLeastOnce is TAtLeastOnceClickHouseSink's runtime for one job: it inserts an epoch's
// messages before the epoch commits, in blocks of max_rows_per_batch, without a
// deduplication token. Known transient errors are retried without a limit, unclassified
// ones up to max_insert_attempts in all, permanent ones fail at once; an error fails the
// epoch, whose retry writes the messages again (duplicates are possible, losses are not).
type atLeastOnce struct {
	t  *target
	mu sync.Mutex
}

func newAtLeastOnce(t *target) *atLeastOnce { return &atLeastOnce{t: t} }

// WriteBeforeCommit inserts msgs' payloads. It returns nil only when the table holds them
// all.
//
// Invariant: the epoch commits only after its messages are in the table
// (TestClickHouseAtLeastOnceConformance).
func (s *atLeastOnce) WriteBeforeCommit(ctx context.Context, msgs []flow.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.t
	if len(msgs) == 0 {
		return nil
	}
	if err := t.session(ctx, false); err != nil {
		return err
	}
	rows := make([][]any, len(msgs))
	for i := range msgs {
		v, err := t.values(msgs[i].Payload)
		if err != nil {
			return fmt.Errorf("%s: message %s: %w", t.name, msgs[i].MessageID, err)
		}
		rows[i] = v
	}
	for from := 0; from < len(rows); from += int(t.dyn.MaxRowsPerBatch) {
		to := min(from+int(t.dyn.MaxRowsPerBatch), len(rows))
		if err := t.insertRetrying(ctx, rows[from:to], "", false); err != nil {
			return err
		}
	}
	return nil
}

// Close closes the session.
func (s *atLeastOnce) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t.Close()
}
