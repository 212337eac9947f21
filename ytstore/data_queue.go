package ytstore

import (
	"context"
	"fmt"

	"github.com/ytflow/yt-flow/internal/ybin"

	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yt"
)

// QueueRow is one row read from a queue partition.
type QueueRow struct {
	// Offset is the row index within the partition.
	Offset int64
	// Timestamp is the row's commit timestamp ($timestamp) when the queue reports it, else 0.
	Timestamp uint64
	// Columns are the data columns (system columns removed).
	Columns map[string]any
}

// PullQueue reads up to maxRows rows of partition of the queue through a registered consumer,
// starting at offset. It reads only: the consumer's offset is not moved (see AdvanceConsumer).
func (s *Store) PullQueue(ctx context.Context, queuePath, consumerPath string, partition int32, offset int64, maxRows int64) ([]QueueRow, error) {
	r, _, err := s.yc.PullQueueConsumer(ctx, ypath.Path(consumerPath), ypath.Path(queuePath), &yt.PullQueueConsumerOptions{
		Offset: &offset, PartitionIndex: &partition, MaxRowCount: &maxRows,
	})
	if err != nil {
		return nil, fmt.Errorf("ytstore: pull %s partition %d at %d via %s: %w", queuePath, partition, offset, consumerPath, classify(err))
	}
	defer func() { _ = r.Close() }()
	rows := make([]QueueRow, 0, max(0, min(maxRows, 4096)))
	next := offset
	var qr QueueRow
	sys := func(k string, v int64) { // the system columns a row carries
		switch k {
		case "$row_index":
			qr.Offset = v
		case "$timestamp":
			qr.Timestamp = uint64(v)
		}
	}
	// One decoder for every row (rows repeat their column names), handed to the reader as a
	// yson.Unmarshaler: the row's bytes are decoded in place, not copied first. Passed by
	// value, as the reader zeroes what a pointer points at before it decodes.
	q := &queueRowDecoding{sys: sys}
	inPlace, ok := rowBytesOf(r) // see rowbytes.go
	for r.Next() {
		qr = QueueRow{Offset: next}
		var err error
		if ok {
			err = queueRowScan{q}.UnmarshalYSON(inPlace())
		} else {
			err = r.Scan(queueRowScan{q})
		}
		if err != nil {
			return nil, fmt.Errorf("ytstore: pull %s partition %d: decode row: %w", queuePath, partition, err)
		}
		qr.Columns = q.m
		next = qr.Offset + 1
		rows = append(rows, qr)
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("ytstore: pull %s partition %d: %w", queuePath, partition, classify(err))
	}
	return rows, nil
}

// queueRowScan decodes a queue row into its user columns, handing the integer system columns
// ($row_index, $timestamp, ...) to sys: rows of scalar columns in binary YSON (what the server
// sends) without the SDK's generic decoder, anything else through it.
type queueRowScan struct{ *queueRowDecoding }

type queueRowDecoding struct {
	dec ybin.Decoder
	sys func(key string, v int64)
	m   map[string]any
}

// UnmarshalYSON implements yson.Unmarshaler; raw is only read during the call (the decoded
// strings are copies).
func (q queueRowScan) UnmarshalYSON(raw []byte) error {
	if m, ok := q.dec.DecodeRow(raw, q.sys); ok {
		q.m = m
		return nil
	}
	var m map[string]any
	if err := yson.Unmarshal(raw, &m); err != nil {
		return err
	}
	for k, v := range m {
		if len(k) > 0 && k[0] == '$' {
			switch x := v.(type) {
			case int64:
				q.sys(k, x)
			case uint64:
				q.sys(k, int64(x))
			}
			delete(m, k)
		}
	}
	q.m = m
	return nil
}

// AdvanceConsumer moves the consumer's offset of a partition to offset (forced, no old-offset
// check). The epoch commit is the source of truth for source offsets; this only keeps the
// consumer in step for lag reporting.
func (s *Store) AdvanceConsumer(ctx context.Context, queuePath, consumerPath string, partition int32, offset int64) error {
	err := s.yc.AdvanceQueueConsumer(ctx, ypath.Path(consumerPath), ypath.Path(queuePath), &yt.AdvanceQueueConsumerOptions{
		PartitionIndex: &partition, NewOffset: &offset,
	})
	if err != nil {
		return fmt.Errorf("ytstore: advance %s on %s partition %d to %d: %w", consumerPath, queuePath, partition, offset, classify(err))
	}
	return nil
}

// TabletCount reads @tablet_count of a dynamic table (the partition count of a queue).
func (s *Store) TabletCount(ctx context.Context, path string) (int, error) {
	var n int
	if err := s.yc.GetNode(ctx, ypath.Path(path).Attr("tablet_count"), &n, nil); err != nil {
		return 0, fmt.Errorf("ytstore: read %s/@tablet_count: %w", path, classify(err))
	}
	return n, nil
}

// ProducerSession is an open queue producer session.
type ProducerSession struct {
	ProducerPath, QueuePath, SessionID string
	Epoch                              int64
	// LastSequenceNumber is the last sequence number the queue accepted in this session
	// (-1 when none).
	LastSequenceNumber int64
}

// OpenProducerSession creates (or re-opens, bumping its epoch) a producer session.
func (s *Store) OpenProducerSession(ctx context.Context, producerPath, queuePath, sessionID string) (*ProducerSession, error) {
	res, err := s.yc.CreateQueueProducerSession(ctx, ypath.Path(producerPath), ypath.Path(queuePath), sessionID, nil)
	if err != nil {
		return nil, fmt.Errorf("ytstore: open producer session %s of %s for %s: %w", sessionID, producerPath, queuePath, classify(err))
	}
	return &ProducerSession{ProducerPath: producerPath, QueuePath: queuePath, SessionID: sessionID, Epoch: res.Epoch, LastSequenceNumber: res.SequenceNumber}, nil
}

// Push writes rows with consecutive sequence numbers starting at firstSeqNo. Rows whose
// sequence number the queue already accepted in this session are skipped by the queue, so
// resending after a failure with the same numbers never duplicates. It returns the last
// sequence number the queue holds for the session.
func (s *Store) Push(ctx context.Context, ps *ProducerSession, firstSeqNo int64, rows []map[string]any) (int64, error) {
	anyRows := make([]any, len(rows))
	for i, r := range rows {
		anyRows[i] = r
	}
	return s.push(ctx, ps, firstSeqNo, anyRows)
}

// PushEncoded is Push of rows already encoded as YSON maps (an output store's payloads): they
// are sent as they are, without decoding and encoding them again.
func (s *Store) PushEncoded(ctx context.Context, ps *ProducerSession, firstSeqNo int64, rows []yson.RawValue) (int64, error) {
	anyRows := make([]any, len(rows))
	for i, r := range rows {
		anyRows[i] = r
	}
	return s.push(ctx, ps, firstSeqNo, anyRows)
}

func (s *Store) push(ctx context.Context, ps *ProducerSession, firstSeqNo int64, anyRows []any) (int64, error) {
	if len(anyRows) == 0 {
		return ps.LastSequenceNumber, nil
	}
	res, err := s.yc.PushQueueProducer(ctx, ypath.Path(ps.ProducerPath), ypath.Path(ps.QueuePath), ps.SessionID, ps.Epoch, anyRows,
		&yt.PushQueueProducerOptions{SequenceNumber: &firstSeqNo})
	if err != nil {
		return 0, fmt.Errorf("ytstore: push %d rows to %s via %s session %s: %w", len(anyRows), ps.QueuePath, ps.ProducerPath, ps.SessionID, classify(err))
	}
	ps.LastSequenceNumber = res.LastSequenceNumber
	return res.LastSequenceNumber, nil
}

// InsertRows writes rows to a user dynamic table outside any epoch (used by best-effort
// sinks and tests).
func (s *Store) InsertRows(ctx context.Context, path string, rows []map[string]any) error {
	return InsertValues(ctx, s, path, rows)
}

// InsertValues is Store.InsertRows for rows of any type the SDK's writer takes (a struct
// with yson tags, a yson.StreamMarshaler, ...).
func InsertValues[T any](ctx context.Context, s *Store, path string, rows []T) error {
	anyRows := make([]any, len(rows))
	for i, r := range rows {
		anyRows[i] = r
	}
	if err := s.yc.InsertRows(ctx, ypath.Path(path), anyRows, nil); err != nil {
		return fmt.Errorf("ytstore: insert %d rows into %s: %w", len(rows), path, classify(err))
	}
	return nil
}

// SelectRows runs a query-language query (without the leading "select") and returns the
// rows, e.g. "* from [//t] where k = 1".
func (s *Store) SelectRows(ctx context.Context, query string) ([]map[string]any, error) {
	return s.selectRows(ctx, query, nil)
}

// selectRows runs query with placeholder values (none when empty).
func (s *Store) selectRows(ctx context.Context, query string, placeholders map[string]any) ([]map[string]any, error) {
	var opts *yt.SelectRowsOptions
	if len(placeholders) > 0 {
		opts = &yt.SelectRowsOptions{PlaceholderValues: placeholders}
	}
	r, err := s.yc.SelectRows(ctx, query, opts)
	if err != nil {
		return nil, fmt.Errorf("ytstore: select %q: %w", query, classify(err))
	}
	defer func() { _ = r.Close() }()
	var rows []map[string]any
	for r.Next() {
		var m map[string]any
		if err := r.Scan(&m); err != nil {
			return nil, fmt.Errorf("ytstore: select %q: decode row: %w", query, err)
		}
		rows = append(rows, m)
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("ytstore: select %q: %w", query, classify(err))
	}
	return rows, nil
}
