package queue

import (
	"context"
	"fmt"

	"github.com/ytflow/yt-flow/ytstore"
)

// Source reads one partition (tablet) of a queue through a registered consumer.
type Source struct {
	store                   *ytstore.Store
	queuePath, consumerPath string
	partition               int32
	finite                  bool
}

// NewSource returns a reader of partition of queuePath through consumerPath.
func NewSource(store *ytstore.Store, queuePath, consumerPath string, partition int64, finite bool) *Source {
	return &Source{store: store, queuePath: queuePath, consumerPath: consumerPath, partition: int32(partition), finite: finite}
}

// Read returns up to max rows starting at offset. An empty result means the partition has no
// rows at offset yet (for a finite source: it is complete).
func (s *Source) Read(ctx context.Context, offset, max int64) ([]ytstore.QueueRow, error) {
	rows, err := s.store.PullQueue(ctx, s.queuePath, s.consumerPath, s.partition, offset, max)
	if err != nil {
		return nil, fmt.Errorf("queue source %s partition %d: %w", s.queuePath, s.partition, err)
	}
	return rows, nil
}

// Advance moves the YT consumer to offset after the epoch that read up to it committed.
func (s *Source) Advance(ctx context.Context, offset int64) error {
	return s.store.AdvanceConsumer(ctx, s.queuePath, s.consumerPath, s.partition, offset)
}

// Finite tells whether the partition completes at the end of the queue.
func (s *Source) Finite() bool { return s.finite }

// String names the partition for errors.
func (s *Source) String() string {
	return fmt.Sprintf("queue %s tablet %d", s.queuePath, s.partition)
}
