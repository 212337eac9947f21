package connector

import (
	"context"
	"sync"
	"time"
)

// AtMostOnce is the at_most_once_strategy queue the runtime puts in front of an async sink:
// rows are kept in memory up to a byte limit and written after the commit, one attempt per
// batch; when the queue is full new rows are dropped without an error and counted, and a
// failed write drops its batch.
type AtMostOnce struct {
	w       BestEffortWriter
	limit   int64
	suspend time.Duration

	mu      sync.Mutex
	rows    []map[string]any
	bytes   int64
	dropped int64
	writing int // rows of the write in progress
	notify  chan struct{}
}

// NewAtMostOnce returns a queue writing to w holding at most limitBytes (approximate payload
// size; <= 0 means 100 MiB, Flow's total_queue_bytes_limit default). When its job stops, the
// queue still writes what it holds for up to suspend (Flow's suspend_destruction_duration;
// 0: drop it at once).
func NewAtMostOnce(w BestEffortWriter, limitBytes int64, suspend time.Duration) *AtMostOnce {
	if limitBytes <= 0 {
		limitBytes = 100 << 20
	}
	return &AtMostOnce{w: w, limit: limitBytes, suspend: max(suspend, 0), notify: make(chan struct{}, 1)}
}

// Offer enqueues rows, dropping those that do not fit. It never blocks.
//
// Invariant: a full queue drops and counts, never errors or blocks (TestAtMostOnceDrops).
func (b *AtMostOnce) Offer(rows []map[string]any) {
	b.mu.Lock()
	for _, r := range rows {
		n := RowSize(r)
		if b.bytes+n > b.limit {
			b.dropped++
			continue
		}
		b.rows = append(b.rows, r)
		b.bytes += n
	}
	b.mu.Unlock()
	select {
	case b.notify <- struct{}{}:
	default:
	}
}

// Dropped is the number of rows dropped so far.
func (b *AtMostOnce) Dropped() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped
}

// Len is the number of queued rows.
func (b *AtMostOnce) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.rows)
}

// Pending is the number of rows queued or being written: 0 once everything offered was
// written or dropped.
func (b *AtMostOnce) Pending() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.rows) + b.writing
}

// Run writes queued rows until ctx ends, then what is still queued within the suspend
// duration (what it cannot write then is dropped and counted). A failed write drops the rows
// (at most once).
//
// Invariant: a stopping job's queue is written within suspend_destruction_duration or
// dropped and counted, never kept (TestAtMostOnceSuspendDestruction).
func (b *AtMostOnce) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			b.drain()
			return nil
		case <-b.notify:
		}
		b.flush(ctx)
	}
}

// flush writes the queued rows once.
func (b *AtMostOnce) flush(ctx context.Context) {
	b.mu.Lock()
	rows := b.rows
	b.rows, b.bytes = nil, 0
	b.writing = len(rows)
	b.mu.Unlock()
	if len(rows) == 0 {
		return
	}
	err := b.w.WriteBestEffort(ctx, rows)
	b.mu.Lock()
	if err != nil {
		b.dropped += int64(len(rows))
	}
	b.writing = 0
	b.mu.Unlock()
}

// drain writes what is queued at the stop, within the suspend duration.
func (b *AtMostOnce) drain() {
	if b.suspend > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), b.suspend)
		b.flush(ctx)
		cancel()
	}
	b.mu.Lock()
	b.dropped += int64(len(b.rows)) // offered during the drain: not written
	b.rows, b.bytes = nil, 0
	b.mu.Unlock()
}

// RowSize approximates the byte size of a row.
func RowSize(r map[string]any) int64 {
	n := int64(0)
	for k, v := range r {
		n += int64(len(k)) + 8
		switch x := v.(type) {
		case string:
			n += int64(len(x))
		case []byte:
			n += int64(len(x))
		}
	}
	return n
}
