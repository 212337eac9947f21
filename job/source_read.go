// A source stream of a source job (sourceState): its reads, the read-ahead started with a
// commit, and the consumer advance in the background.

package job

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"go.ytsaurus.tech/library/go/core/log"

	"github.com/ytflow/yt-flow/connectors/connector"
)

// sourceState is one source stream of a source job.
type sourceState struct {
	id  string
	src connector.Source
	// offset is the sequence number (row offset) of the next row to read and pos the
	// connector's position there, both as committed.
	offset int64
	pos    connector.Position
	ended  bool // finite source reached the end
	// readEnd and readEndPos are the offset and position after the last row read (the
	// position a commit of the rows read so far commits).
	readEnd    int64
	readEndPos connector.Position
	// ahead is a read of the rows after the epoch being committed, started with the commit;
	// advancing is the last consumer advance started (nil once seen done).
	ahead     *readAhead
	advancing *advancing
	// toAdvance is a committed position the consumer was not moved to yet (when pending);
	// advancedAt is when the last advance started (advanceCommitted).
	toAdvance  connector.Position
	pending    bool
	advancedAt time.Time
	// topUpWait is Config.TopUpWait: 0 means the package's topUpWait, a negative value no
	// bound.
	topUpWait time.Duration

	// failingSince is when the reads that keep failing began to (zero: the last read
	// succeeded).
	failingSince time.Time
}

// readFailure records a read that failed at now and names the problem: once reads have
// failed for at least after (the source's unavailable_threshold; 0: never), the source's
// partition is unavailable, before that the failure is transient.
//
// Invariant: a source is reported unavailable only after its reads failed for its
// unavailable_threshold, and a read that succeeds ends it (TestSourceUnavailableThreshold).
func (s *sourceState) readFailure(now time.Time, after time.Duration) (what string, unavailable bool) {
	if s.failingSince.IsZero() {
		s.failingSince = now
	}
	failing := now.Sub(s.failingSince)
	if after > 0 && failing >= after {
		return fmt.Sprintf("source %s unavailable: reads failing for %v (unavailable_threshold %v)", s.id, failing.Round(time.Second), after), true
	}
	return "read source " + s.id, false
}

// readSucceeded ends a run of failed reads.
func (s *sourceState) readSucceeded() { s.failingSince = time.Time{} }

// consumerAdvancePeriod bounds how often a source moves its YT consumer. The committed offset
// lives in the partition state; the consumer only reports lag (and lets an auto-trimmed queue
// drop what was read), so moving it once a second serves as well as after every epoch, for a
// fraction of the requests (TestConsumerAdvanceThrottled).
const consumerAdvancePeriod = time.Second

// readAhead is a source read running in the background; took is how long it ran (set with
// rows and err before done closes).
type readAhead struct {
	from, max int64
	done      chan struct{}
	rows      []connector.Row
	err       error
	took      time.Duration
}

// topUpWait bounds how long an epoch waits for the top-up of a read ahead that did not fill
// its batch (sourceState.read), or as long as that read ahead took if longer. A source read
// waits for rows when there are none (a Kafka read up to poll_timeout, 200ms), so an
// unbounded top-up held the rows already read back that long whenever the input paused or
// ended; rows that are there come back within it.
const topUpWait = 10 * time.Millisecond

// readAhead starts reading up to max rows from offset from (at position pos) in the
// background, unless a read is running already: a top-up kept for the next epoch (read),
// which is that read when it starts at from. One read of a source runs at a time.
func (s *sourceState) readAhead(ctx context.Context, from int64, pos connector.Position, max int64) {
	if s.ahead != nil {
		return
	}
	s.ahead = s.startRead(ctx, from, pos, max)
}

// startRead starts reading up to max rows from offset from (at position pos) in the background.
func (s *sourceState) startRead(ctx context.Context, from int64, pos connector.Position, max int64) *readAhead {
	ra := &readAhead{from: from, max: max, done: make(chan struct{})}
	go func() {
		defer close(ra.done)
		start := time.Now()
		ra.rows, ra.err = s.src.Read(ctx, pos, max)
		ra.took = time.Since(start)
	}()
	return ra
}

// positionAt returns the position at offset off: the committed one, or the one after the
// last row read.
func (s *sourceState) positionAt(off int64) (connector.Position, bool) {
	switch {
	case off == s.readEnd && s.readEndPos != nil:
		return s.readEndPos, true
	case off == s.offset:
		return s.pos, true
	}
	return nil, false
}

// read returns up to max rows from the committed offset: those read ahead when that read
// started there and found rows, else a fresh read. Queue rows never change once written, so
// rows read during the previous commit are the rows at that offset now. A read ahead that
// did not fill the batch is topped up with the rows written since it ran (during the
// commit), so that they do not wait for one more epoch; a top-up that has no rows within
// topUpWait is left running as the next epoch's read ahead (used when that epoch starts
// where it does), so that the rows in hand do not wait for the source's poll.
func (s *sourceState) read(ctx context.Context, max int64) (rows []connector.Row, readAhead bool, err error) {
	defer func() {
		if n := len(rows); n > 0 {
			s.readEnd, s.readEndPos = rows[n-1].Offset+1, rows[n-1].Next
		}
	}()
	if ra := s.ahead; ra != nil {
		s.ahead = nil
		<-ra.done
		if ra.err == nil && ra.from == s.offset && ra.max <= max && len(ra.rows) > 0 {
			rows = ra.rows
			if n := int64(len(rows)); n < max {
				last := rows[n-1]
				up := s.startRead(ctx, last.Offset+1, last.Next, max-n)
				// At least as long as the read ahead took to find its rows: on a loaded
				// machine reads are slow while rows are there, and a top-up cut short
				// halves the next batches.
				wait := cmp.Or(s.topUpWait, topUpWait)
				if wait > 0 && ra.took > wait {
					wait = ra.took
				}
				var expired <-chan time.Time
				if wait > 0 {
					t := time.NewTimer(wait)
					defer t.Stop()
					expired = t.C
				}
				select {
				case <-up.done:
					// A failed top-up is no error: those rows come in the next epoch.
					if up.err == nil {
						rows = append(rows, up.rows...)
					}
				case <-expired:
					// Invariant: one read of a source runs at a time, and a top-up not
					// waited for is used only from its offset (TestReadAheadTopsUp).
					s.ahead = up
				}
			}
			return rows, true, nil
		}
	}
	rows, err = s.src.Read(ctx, s.pos, max)
	return rows, false, err
}

// advancing is a consumer advance running in the background; err is set before done closes.
type advancing struct {
	done chan struct{}
	pos  connector.Position
	err  error
}

// committed notes offset (at position pos) as committed: the consumer is moved there by
// advanceCommitted.
func (s *sourceState) committed(offset int64, pos connector.Position) {
	s.offset, s.pos = offset, pos
	s.toAdvance, s.pending = pos, true
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
			s.toAdvance, s.pending = a.pos, true
		}
	}
	if !s.pending || (!force && now.Sub(s.advancedAt) < consumerAdvancePeriod) {
		return
	}
	a := &advancing{done: make(chan struct{}), pos: s.toAdvance}
	s.advancing, s.pending, s.advancedAt = a, false, now
	go func() {
		defer close(a.done)
		if a.err = s.src.Advance(ctx, a.pos); a.err != nil && ctx.Err() == nil {
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

// orNow is a row's time (µs), or now when the source does not know it.
func orNow(rowMicros, now uint64) uint64 {
	if rowMicros == 0 {
		return now
	}
	return rowMicros
}

// sourcePosition returns the position at offset off of source stream id, which the epoch
// commits: the position after the last row read. An offset the job did not read up to is a
// bug of the epoch core, reported rather than committed.
func (r *runner) sourcePosition(id string, off int64) (connector.Position, error) {
	for _, s := range r.sources {
		if s.id == id {
			if pos, ok := s.positionAt(off); ok {
				return pos, nil
			}
			return nil, fmt.Errorf("job %s: source %s: no position at offset %d (read up to %d, committed %d)", r.job.JobID, id, off, s.readEnd, s.offset)
		}
	}
	return nil, fmt.Errorf("job %s: no source %s", r.job.JobID, id)
}
