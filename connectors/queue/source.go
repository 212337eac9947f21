package queue

import (
	"context"
	"fmt"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/ytstore"
)

// Source reads one partition (tablet) of a queue through a registered consumer. Its
// position is the queue offset of the next row (connector.OffsetPosition); a row's Offset is
// its queue offset.
type Source struct {
	store                   *ytstore.Store
	queuePath, consumerPath string
	partition               int32
	finite                  bool
	// remote is set when the queue is on another cluster than the pipeline: its rows'
	// timestamps are not the pipeline cluster's, so they bound nothing (Row.Born 0).
	remote bool
}

// NewSource returns a reader of partition of queuePath through consumerPath.
func NewSource(store *ytstore.Store, queuePath, consumerPath string, partition int64, finite bool) *Source {
	return &Source{store: store, queuePath: queuePath, consumerPath: consumerPath, partition: int32(partition), finite: finite}
}

// Read returns up to max rows starting at position from. An empty result means the
// partition has no rows there yet (for a finite source: it is complete).
func (s *Source) Read(ctx context.Context, from connector.Position, max int64) ([]connector.Row, error) {
	offset, err := connector.PositionOffset(from)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s, err)
	}
	rows, err := s.store.PullQueue(ctx, s.queuePath, s.consumerPath, s.partition, offset, max)
	if err != nil {
		return nil, fmt.Errorf("queue source %s partition %d: %w", s.queuePath, s.partition, err)
	}
	out := make([]connector.Row, len(rows))
	for i, r := range rows {
		out[i] = connector.Row{Offset: r.Offset, Timestamp: micros(r.Timestamp), Born: r.Timestamp, Columns: r.Columns}
		if s.remote {
			out[i].Born = 0
		}
	}
	connector.OffsetRows(out)
	return out, nil
}

// Advance moves the YT consumer to pos after the epoch that read up to it committed.
func (s *Source) Advance(ctx context.Context, pos connector.Position) error {
	offset, err := connector.PositionOffset(pos)
	if err != nil {
		return fmt.Errorf("%s: %w", s, err)
	}
	return s.store.AdvanceConsumer(ctx, s.queuePath, s.consumerPath, s.partition, offset)
}

// Finite tells whether the partition completes at the end of the queue.
func (s *Source) Finite() bool { return s.finite }

// String names the partition for errors.
func (s *Source) String() string {
	return fmt.Sprintf("queue %s tablet %d", s.queuePath, s.partition)
}

// micros converts a YTsaurus timestamp (unix seconds above bit 30) to microseconds; 0 stays
// 0 (unknown).
func micros(ytTimestamp uint64) uint64 {
	return (ytTimestamp >> 30) * 1_000_000
}
