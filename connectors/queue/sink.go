package queue

import (
	"context"
	"fmt"
	"sort"

	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/connectors/connector"
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

// Deliver pushes the batches' rows and returns once the queue holds all of them. Rows with a
// sequence number the session already accepted are not sent again; a failed push may be
// retried with the same rows.
//
// Invariant: a resend after a failure uses the same sequence numbers, so the queue holds each
// row once (TestAsyncSinkResendSameSeqNo).
func (s *AsyncSink) Deliver(ctx context.Context, batches []connector.Batch) (int, error) {
	n := 0
	for _, b := range batches {
		n += len(b.Rows)
	}
	ds := make([]connector.Delivery, 0, n)
	for _, b := range batches {
		ds = append(ds, b.Rows...)
	}
	if err := s.deliver(ctx, ds); err != nil {
		return 0, err // the session's seqNo dedup drops whatever got through
	}
	return len(batches), nil
}

// deliver pushes ds (any order) and returns nil once the queue holds all of them.
func (s *AsyncSink) deliver(ctx context.Context, ds []connector.Delivery) error {
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

// BestEffort writes the rows of the at_most_once_strategy queue straight into a queue, one
// attempt per batch (the runtime drops the batch on error).
type BestEffort struct {
	store     *ytstore.Store
	queuePath string
}

// WriteBestEffort appends rows to the queue.
func (b *BestEffort) WriteBestEffort(ctx context.Context, rows []map[string]any) error {
	return b.store.InsertRows(ctx, b.queuePath, rows)
}
