// A source stream of a source job (sourceState): its reads, the read-ahead started with a
// commit, and the consumer advance in the background.

package job

import (
	"context"
	"time"

	"go.ytsaurus.tech/library/go/core/log"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/ytstore"
)

// sourceState is one source stream of a source job.
type sourceState struct {
	id     string
	src    connector.Source
	offset int64 // next offset to read, as committed
	ended  bool  // finite source reached the end
	// ahead is a read of the rows after the epoch being committed, started with the commit;
	// advancing is the last consumer advance started (nil once seen done).
	ahead     *readAhead
	advancing *advancing
	// toAdvance is a committed offset the consumer was not moved to yet (when pending);
	// advancedAt is when the last advance started (advanceCommitted).
	toAdvance  int64
	pending    bool
	advancedAt time.Time
}

// consumerAdvancePeriod bounds how often a source moves its YT consumer. The committed offset
// lives in the partition state; the consumer only reports lag (and lets an auto-trimmed queue
// drop what was read), so moving it once a second serves as well as after every epoch, for a
// fraction of the requests (TestConsumerAdvanceThrottled).
const consumerAdvancePeriod = time.Second

// readAhead is a source read running in the background.
type readAhead struct {
	from, max int64
	done      chan struct{}
	rows      []ytstore.QueueRow
	err       error
}

// readAhead starts reading up to max rows from offset from in the background.
func (s *sourceState) readAhead(ctx context.Context, from, max int64) {
	ra := &readAhead{from: from, max: max, done: make(chan struct{})}
	s.ahead = ra
	go func() {
		defer close(ra.done)
		ra.rows, ra.err = s.src.Read(ctx, from, max)
	}()
}

// read returns up to max rows from the committed offset: those read ahead when that read
// started there and found rows, else a fresh read. Queue rows never change once written, so
// rows read during the previous commit are the rows at that offset now. A read ahead that
// did not fill the batch is topped up with the rows written since it ran (during the
// commit), so that they do not wait for one more epoch.
func (s *sourceState) read(ctx context.Context, max int64) (rows []ytstore.QueueRow, readAhead bool, err error) {
	if ra := s.ahead; ra != nil {
		s.ahead = nil
		<-ra.done
		if ra.err == nil && ra.from == s.offset && ra.max == max && len(ra.rows) > 0 {
			rows = ra.rows
			if n := int64(len(rows)); n < max {
				// A failed top-up is no error: those rows come in the next epoch.
				if more, err := s.src.Read(ctx, rows[n-1].Offset+1, max-n); err == nil {
					rows = append(rows, more...)
				}
			}
			return rows, true, nil
		}
	}
	rows, err = s.src.Read(ctx, s.offset, max)
	return rows, false, err
}

// advancing is a consumer advance running in the background; err is set before done closes.
type advancing struct {
	done   chan struct{}
	offset int64
	err    error
}

// committed notes offset as committed: the consumer is moved there by advanceCommitted.
func (s *sourceState) committed(offset int64) {
	s.offset = offset
	s.toAdvance, s.pending = offset, true
}

// advanceCommitted moves the consumer (in the background) to the last committed offset when
// it was not moved there yet and the last advance started consumerAdvancePeriod ago or more;
// force skips the wait (a finite source at its end). Advances are forced moves, so they run
// one at a time, in order: while one runs, nothing starts (unless forced: then it waits for
// it). An advance that failed is retried with the next one; the committed offset itself is
// safe in the partition state, the consumer only reports it.
func (s *sourceState) advanceCommitted(ctx context.Context, lg log.Structured, now time.Time, force bool) {
	if a := s.advancing; a != nil {
		select {
		case <-a.done:
		default:
			if !force || !s.pending {
				return
			}
			<-a.done
		}
		s.advancing = nil
		if a.err != nil && !s.pending {
			s.toAdvance, s.pending = a.offset, true
		}
	}
	if !s.pending || (!force && now.Sub(s.advancedAt) < consumerAdvancePeriod) {
		return
	}
	a := &advancing{done: make(chan struct{}), offset: s.toAdvance}
	s.advancing, s.pending, s.advancedAt = a, false, now
	go func() {
		defer close(a.done)
		if a.err = s.src.Advance(ctx, a.offset); a.err != nil && ctx.Err() == nil {
			lg.Warn("consumer advance failed; retried with the next (the offset is committed in the partition state)", log.String("source", s.id), log.Error(a.err))
		}
	}()
}

// waitAdvance waits for the consumer advance in progress, if any.
func (s *sourceState) waitAdvance() {
	if s.advancing != nil {
		<-s.advancing.done
		s.advancing = nil
	}
}

func tsMicros(ytTimestamp, fallback uint64) uint64 {
	if ytTimestamp == 0 {
		return fallback
	}
	// YT timestamps hold unix seconds above bit 30.
	return (ytTimestamp >> 30) * 1_000_000
}
