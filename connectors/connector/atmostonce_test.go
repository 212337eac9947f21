package connector

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writer records what it was given and fails while fail is set.
type writer struct {
	mu   sync.Mutex
	rows int
	fail bool
	done chan struct{}
}

func (w *writer) WriteBestEffort(_ context.Context, rows []map[string]any) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	defer func() { w.done <- struct{}{} }()
	if w.fail {
		return errors.New("target down")
	}
	w.rows += len(rows)
	return nil
}

func TestAtMostOnceDrops(t *testing.T) {
	row := map[string]any{"data": "0123456789"}
	size := RowSize(row)
	b := NewAtMostOnce(nil, 3*size, 0)
	b.Offer([]map[string]any{row, row})
	assert.Equal(t, int64(0), b.Dropped())
	b.Offer([]map[string]any{row, row, row})
	assert.Equal(t, 3, b.Len(), "the queue holds what fits in the byte limit")
	assert.Equal(t, int64(2), b.Dropped(), "what does not fit is dropped and counted, without an error")
}

func TestAtMostOnceFailedWriteDrops(t *testing.T) {
	w := &writer{fail: true, done: make(chan struct{}, 4)}
	b := NewAtMostOnce(w, 0, 0)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = b.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()

	row := map[string]any{"v": "x"}
	b.Offer([]map[string]any{row, row})
	<-w.done
	require.Eventually(t, func() bool { return b.Dropped() == 2 }, 10*time.Second, 5*time.Millisecond, "a failed write drops its batch")
	w.mu.Lock()
	w.fail = false
	w.mu.Unlock()
	b.Offer([]map[string]any{row})
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	assert.Equal(t, 1, w.rows, "later rows are written; the dropped ones are not retried")
	assert.Equal(t, int64(2), b.Dropped())
}

// TestAtMostOnceSuspendDestruction: rows queued when the job stops are still written within
// suspend_destruction_duration; without one they are dropped and counted.
func TestAtMostOnceSuspendDestruction(t *testing.T) {
	row := map[string]any{"v": "x"}
	for _, tc := range []struct {
		suspend               time.Duration
		written, dropped, len int
	}{{time.Minute, 3, 0, 0}, {0, 0, 3, 0}} {
		w := &writer{done: make(chan struct{}, 4)}
		b := NewAtMostOnce(w, 0, tc.suspend)
		b.Offer([]map[string]any{row, row, row})
		<-b.notify // Run below sees the stop first, with the rows still queued
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		require.NoError(t, b.Run(ctx))
		w.mu.Lock()
		assert.Equal(t, tc.written, w.rows, "suspend %v: written", tc.suspend)
		w.mu.Unlock()
		assert.Equal(t, int64(tc.dropped), b.Dropped(), "suspend %v: dropped", tc.suspend)
		assert.Equal(t, tc.len, b.Len())
	}
}
