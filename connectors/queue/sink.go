package queue

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/ytstore"
)

// project keeps the columns of filter (all when empty).
func project(p flow.Row, filter []string) map[string]any {
	row := make(map[string]any, len(p))
	if len(filter) == 0 {
		for k, v := range p {
			row[k] = v
		}
		return row
	}
	for _, c := range filter {
		if v, ok := p[c]; ok {
			row[c] = v
		}
	}
	return row
}

// SyncSink appends output rows to a queue inside the epoch transaction.
type SyncSink struct {
	QueuePath    string
	ColumnFilter []string
}

// Write returns the epoch write of msgs.
func (s *SyncSink) Write(msgs []flow.Message) (ytstore.SinkWrite, error) {
	w := ytstore.SinkWrite{Path: s.QueuePath}
	for _, m := range msgs {
		w.Rows = append(w.Rows, project(m.Payload, s.ColumnFilter))
	}
	return w, nil
}

// Delivery is one stored output to deliver: its sequence number in the partition's producer
// session and its payload row, decoded (Row) or as the YSON map it is stored as (Encoded,
// sent as it is; used when set).
type Delivery struct {
	SequenceNumber int64
	Row            map[string]any
	Encoded        yson.RawValue
}

// AsyncSink delivers rows from the output store to a queue through a producer session whose
// id is fixed per (partition, sink), so that a restarted job continues the same session and
// the queue drops rows it already accepted.
type AsyncSink struct {
	store                              *ytstore.Store
	producerPath, queuePath, sessionID string
	session                            *ytstore.ProducerSession
}

// NewAsyncSink returns a sink writing to queuePath via producerPath in session sessionID.
func NewAsyncSink(store *ytstore.Store, producerPath, queuePath, sessionID string) *AsyncSink {
	return &AsyncSink{store: store, producerPath: producerPath, queuePath: queuePath, sessionID: sessionID}
}

// Deliver pushes ds (any order) and returns nil once the queue holds all of them. Rows with a
// sequence number the session already accepted are not sent again; a failed push may be
// retried with the same rows.
//
// Invariant: a resend after a failure uses the same sequence numbers, so the queue holds each
// row once (TestAsyncSinkResendSameSeqNo).
func (s *AsyncSink) Deliver(ctx context.Context, ds []Delivery) error {
	if s.session == nil {
		ps, err := s.store.OpenProducerSession(ctx, s.producerPath, s.queuePath, s.sessionID)
		if err != nil {
			return fmt.Errorf("async queue sink %s: %w", s.queuePath, err)
		}
		s.session = ps
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i].SequenceNumber < ds[j].SequenceNumber })
	// A run is a stretch of consecutive sequence numbers, all decoded or all encoded rows.
	var run []map[string]any
	var encoded []yson.RawValue
	first := int64(-1)
	flush := func() error {
		if len(run) == 0 && len(encoded) == 0 {
			return nil
		}
		var err error
		if len(encoded) > 0 {
			_, err = s.store.PushEncoded(ctx, s.session, first, encoded)
		} else {
			_, err = s.store.Push(ctx, s.session, first, run)
		}
		run, encoded, first = nil, nil, -1
		if err != nil {
			s.session = nil // re-open: the epoch may have moved on
			return fmt.Errorf("async queue sink %s: %w", s.queuePath, err)
		}
		return nil
	}
	for _, d := range ds {
		if d.SequenceNumber <= s.session.LastSequenceNumber {
			continue
		}
		isEncoded := d.Encoded != nil
		if first >= 0 && (d.SequenceNumber != first+int64(len(run)+len(encoded)) || isEncoded != (len(encoded) > 0)) {
			if err := flush(); err != nil {
				return err
			}
		}
		if first < 0 {
			first = d.SequenceNumber
		}
		if isEncoded {
			encoded = append(encoded, d.Encoded)
		} else {
			run = append(run, d.Row)
		}
	}
	return flush()
}

// BestEffort is the at_most_once_strategy queue of an async sink: rows are kept in memory up
// to a byte limit and written after the commit; when the queue is full new rows are dropped
// without an error and counted.
type BestEffort struct {
	store     *ytstore.Store
	queuePath string
	limit     int64

	mu      sync.Mutex
	rows    []map[string]any
	bytes   int64
	dropped int64
	notify  chan struct{}
}

// NewBestEffort returns a queue writing to queuePath holding at most limitBytes (approximate
// payload size; <= 0 means 100 MiB).
func NewBestEffort(store *ytstore.Store, queuePath string, limitBytes int64) *BestEffort {
	if limitBytes <= 0 {
		limitBytes = 100 << 20
	}
	return &BestEffort{store: store, queuePath: queuePath, limit: limitBytes, notify: make(chan struct{}, 1)}
}

// Offer enqueues rows, dropping those that do not fit. It never blocks.
//
// Invariant: a full queue drops and counts, never errors or blocks (TestBestEffortDrops).
func (b *BestEffort) Offer(rows []map[string]any) {
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
func (b *BestEffort) Dropped() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped
}

// Len is the number of queued rows.
func (b *BestEffort) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.rows)
}

// Run writes queued rows until ctx ends. A failed write drops the rows (at most once).
func (b *BestEffort) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-b.notify:
		}
		b.mu.Lock()
		rows := b.rows
		b.rows, b.bytes = nil, 0
		b.mu.Unlock()
		if len(rows) == 0 {
			continue
		}
		if err := b.store.InsertRows(ctx, b.queuePath, rows); err != nil {
			b.mu.Lock()
			b.dropped += int64(len(rows))
			b.mu.Unlock()
		}
	}
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
