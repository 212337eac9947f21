// A swift source job (TSwiftOrderedSourceComputation, TSwiftPassthroughOrderedSourceComputation)
// persists no outputs. It reads rows ahead of its committed offset, invokes the process
// function per row, and hands the outputs to the outbox in memory; their ids derive from the
// row (epoch.SwiftOutputID of epoch.SourceMessageID), so a re-read after a restart recomputes
// the same ids and the readers' dedup drops the repeats. The committed offset (partition
// state source/<source>, with the Lease as prerequisite) only moves past rows whose outputs
// are all delivered. The process function must be deterministic and may not write state or
// timers. Its sinks' outputs wait in the window with their rows (docs/spec.md, Validation
// rules): a sync sink's are written by the commit that moves the offset past them
// (exactly once); an at-least-once sync sink's are written and acknowledged before that commit
// (a re-read after a restart writes them again: at least once); an async sink's with
// at_most_once_strategy are handed to its in-memory queue only after that commit (a re-read
// never repeats them; a restart loses what the queue had not sent: at most once). Async sinks
// without the strategy keep an outbox in the output store, which a swift source does not
// write: spec validation refuses them.

package job

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.ytsaurus.tech/library/go/core/log"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/ytstore"
)

// swiftRow is a row a swift source job read and has not committed past.
type swiftRow struct {
	offset int64
	pos    connector.Position // the source's position at the row
	id     string             // epoch.SourceMessageID: the parent of the row's outputs
	ts     uint64             // system timestamp of the row's outputs
	// sync are the row's outputs to sync sinks (and at-least-once sync sinks), written by (or
	// before) the commit that moves the offset past the row; bestEffort its outputs to
	// at_most_once_strategy sinks, queued after that commit.
	sync, bestEffort []epoch.Out
}

// swiftSource is the read-ahead window of one source partition of a swift source job:
// rows from the committed offset up to the next offset to read, in offset order.
type swiftSource struct {
	src *sourceState

	mu sync.Mutex // guards the fields below against the status writer
	// committed is the offset in partition_states; next the next offset to read; their
	// positions committedPos and nextPos.
	committed, next       int64
	committedPos, nextPos connector.Position
	rows                  []swiftRow
	// lastTS is the largest system timestamp given so far: stamps never go back.
	lastTS uint64
	// While holding, the job's system watermark is at most floor: a previous job of the
	// partition may have delivered outputs of rows up to holdUntil (committed offset at load
	// plus the window limit) whose dedup rows downstream must outlive their recomputation.
	holding   bool
	floor     uint64
	holdUntil int64
}

// start initialises the window after load: nothing read beyond the committed offset, and a
// hold at the pipeline's published watermark until this job has committed past every row a
// previous job could have read.
func (s *swiftSource) start(committed int64, pos connector.Position, published uint64, window int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.committed, s.next, s.rows = committed, committed, nil
	s.committedPos, s.nextPos = pos, pos
	s.holding, s.floor, s.holdUntil = true, max(published, 1), committed+int64(window)
	// Stamps never precede the watermark the job started under (see runner.stamp).
	s.lastTS = max(s.lastTS, published)
}

// minSystemTS is the smallest system timestamp of the outputs of rows not committed past,
// bounded by the floor while holding; 0 when neither applies.
//
// Invariant: a swift source job's watermark covers every row read and not committed past,
// delivered or not, and after a restart everything a previous job may have delivered beyond
// the committed offset, so the readers' dedup rows of outputs that a re-read recomputes are
// not collected before the recomputation (TestSwiftSourceWatermarkCoversWindow,
// TestSwiftSourceHoldsPublishedWatermark).
func (s *swiftSource) minSystemTS() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var least uint64
	if len(s.rows) > 0 {
		least = s.rows[0].ts // stamps never go back
	}
	if s.holding && (least == 0 || s.floor < least) {
		least = s.floor
	}
	return least
}

// held is the number of rows read and not committed past.
func (s *swiftSource) held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.rows)
}

// stamp returns the system timestamp for outputs read now: now, or the last stamp if the
// clock went back.
func (s *swiftSource) stamp(now uint64) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastTS = max(s.lastTS, now)
	return s.lastTS
}

// appendRows records rows read (in offset order) and the next offset to read, at nextPos.
func (s *swiftSource) appendRows(rows []swiftRow, next int64, nextPos connector.Position) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows = append(s.rows, rows...)
	s.next, s.nextPos = next, nextPos
}

// deliverable returns the offset the job may commit: the first row with an undelivered
// output, or the next offset to read when every row read is delivered; ok is false when that
// is not beyond the committed offset.
//
// Invariant: the committed offset never passes a row with an undelivered output
// (TestSwiftSourceOffsetWaitsForAcks).
func (s *swiftSource) deliverable(undelivered func(parent string) bool) (int64, connector.Position, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	off, pos := s.next, s.nextPos
	for _, r := range s.rows {
		if undelivered(r.id) {
			off, pos = r.offset, r.pos
			break
		}
	}
	return off, pos, off > s.committed
}

// syncOuts returns the sync (and at-least-once sync) sink outputs and the at-most-once sink
// outputs of the rows below off not committed past yet, in offset order.
func (s *swiftSource) syncOuts(off int64) (sync, bestEffort []epoch.Out) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.rows {
		if r.offset >= off {
			break
		}
		if r.offset >= s.committed {
			sync = append(sync, r.sync...)
			bestEffort = append(bestEffort, r.bestEffort...)
		}
	}
	return sync, bestEffort
}

// commit records off as committed: the rows below it leave the window; the hold ends once
// the offset passed every row a previous job could have read, or once the job caught up with
// the source (caughtUp: a read found no rows) with nothing left in its window.
func (s *swiftSource) commit(off int64, pos connector.Position, caughtUp bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if off > s.committed {
		s.committed, s.committedPos = off, pos
	}
	i := 0
	for i < len(s.rows) && s.rows[i].offset < s.committed {
		i++
	}
	s.rows = append(s.rows[:0:0], s.rows[i:]...)
	if s.holding && (s.committed >= s.holdUntil || caughtUp && len(s.rows) == 0 && s.committed >= s.next) {
		s.holding = false
	}
}

// noCommit applies an epoch that committed nothing: the hold may still end (see commit).
func (s *swiftSource) noCommit(caughtUp bool) {
	s.commit(s.committedOffset(), nil, caughtUp)
}

func (s *swiftSource) committedOffset() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.committed
}

func (s *swiftSource) nextOffset() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

func (s *swiftSource) nextPosition() connector.Position {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nextPos
}

// swiftSourceHeld is the rows read and not committed past, over the job's swift sources.
func (r *runner) swiftSourceHeld() int64 {
	var n int64
	for _, s := range r.swiftSrc {
		n += int64(s.held())
	}
	return n
}

// swiftSourceMinTS is the smallest minSystemTS of the job's swift sources (0: none).
func (r *runner) swiftSourceMinTS() uint64 {
	var least uint64
	for _, s := range r.swiftSrc {
		if ts := s.minSystemTS(); ts != 0 && (least == 0 || ts < least) {
			least = ts
		}
	}
	return least
}

// startSwiftSources initialises the windows after load (see swiftSource.start) under the
// published @system_watermark.
func (r *runner) startSwiftSources(published uint64) {
	for _, s := range r.swiftSrc {
		s.start(s.src.offset, s.src.pos, published, r.w.cfg.OutboxLimit)
	}
}

// swiftSourceEpoch is one epoch of a swift source job: read ahead into the window (unless
// draining or the window is full), hand the outputs to the outbox, and commit the offset
// past the rows whose outputs are all delivered. It commits nothing when no offset advanced,
// except once per lease check period to notice a lost lease.
func (r *runner) swiftSourceEpoch(ctx context.Context, lastCommit uint64) (committedAt uint64, idle bool, err error) {
	limit := r.dyn.MaxRowsPerBatch
	if limit <= 0 {
		limit = 1000
	}
	now := nowMicros()
	r.openEpoch.Store(now)
	defer r.openEpoch.Store(0)
	draining := r.draining.Load()
	if r.applied.Swap(draining) != draining {
		r.w.wakeStatus()
	}

	// The reads include processing the rows (swiftRead runs the process function): both
	// count as input_fetch in the phase times.
	phase := time.Now()
	read, readTried := 0, false
	caughtUp := map[*swiftSource]bool{}
	held := !draining && r.alignmentHold()
	for _, s := range r.swiftSrc {
		n, atEnd, err := r.swiftRead(ctx, s, now, limit, draining || held)
		if err != nil {
			return 0, false, err
		}
		if n < 0 {
			return 0, true, nil // source unreadable: noted, retried
		}
		caughtUp[s] = atEnd
		read += n
		readTried = readTried || n > 0 || (atEnd && !s.src.ended)
		r.noteBatch(n, limit)
	}
	r.stats.phases.since(&r.stats.phases.fetch, phase)
	r.stats.phases.rows.Add(int64(read))
	r.stats.messages.Add(int64(read))
	if readTried { // a read that found rows, or found nothing (not one that was held back)
		r.noteSourceRead(read, now)
	}

	w := &ytstore.EpochWrite{PartitionID: r.job.PartitionID, Lease: r.job.LeaseID, PartitionStates: map[string][]byte{}}
	type advance struct {
		off int64
		pos connector.Position
	}
	advanced := map[*swiftSource]advance{}
	var syncOuts, bestEffortOuts []epoch.Out
	for _, s := range r.swiftSrc {
		if off, pos, ok := s.deliverable(r.outbox.undelivered); ok {
			advanced[s] = advance{off, pos}
			w.PartitionStates[ytstore.SourceStatePrefix+s.src.id] = ytstore.SourcePosition{NextSeq: off, Position: pos}.Encode()
			so, be := s.syncOuts(off)
			syncOuts, bestEffortOuts = append(syncOuts, so...), append(bestEffortOuts, be...)
		}
	}
	// Invariant: a swift source's sync sink outputs are written by the commit that moves its
	// offset past their rows, and only by it, so each is written once although the rows are
	// re-read after a restart (e2e TestSwiftSourceSyncSinkExactlyOnce); its at-least-once
	// sync sinks' outputs are acknowledged before that commit, so none is lost
	// (TestSwiftSourceAtLeastOnceSink).
	var n int
	r.groups, n = groupByDest(r.groups, syncOuts)
	for _, g := range r.groups[:n] {
		if alo, ok := r.aloSinks[g.dest]; ok {
			if err := alo.WriteBeforeCommit(ctx, g.msgs); err != nil {
				r.stats.sink(g.dest).failures.Add(1)
				r.outbox.giveBack()
				r.failures++
				if r.failures < maxNotApplied && ctx.Err() == nil {
					// The window is kept: the next epoch writes the rows again.
					r.log.Warn("swift source: at-least-once sink write failed; retrying", log.String("sink", g.dest), log.Int("attempt", r.failures), log.Error(err))
					r.noteProblem("write "+g.dest, err)
					return 0, true, nil
				}
				return 0, false, fmt.Errorf("job %s: %s: %w", r.job.JobID, g.dest, errors.Join(errSinkWrite, err))
			}
			r.stats.sink(g.dest).delivered.Add(1)
			continue
		}
		sw, err := r.syncSinks[g.dest].Write(g.msgs)
		if err != nil {
			r.outbox.giveBack()
			return 0, false, fmt.Errorf("job %s: %s: %w", r.job.JobID, g.dest, err)
		}
		w.Sinks = append(w.Sinks, sw)
	}
	done := r.outbox.takeDone() // rows left in the output store by a non-swift run of the partition
	if len(advanced) == 0 && len(done) == 0 && now-lastCommit < r.leaseCheckPeriod() {
		r.outbox.giveBack()
		for _, s := range r.swiftSrc {
			s.noCommit(caughtUp[s])
		}
		r.updateSwiftCompleted()
		return 0, read == 0, nil
	}
	w.OutputsDone = done
	// The token is the start timestamp of the transaction the commit uses when its id tells
	// it, else a fresh timestamp (see runner.prepare).
	var token uint64
	if tx, err := r.reads.BeginEpochTx(ctx); err == nil {
		defer tx.Release() // a no-op once the commit used it
		w.Tx, token = tx, tx.StartTimestamp()
	}
	if token == 0 {
		var err error
		if token, err = r.commits.GenerateTimestamp(ctx); err != nil {
			r.outbox.giveBack()
			r.log.Warn("epoch: generate timestamp failed", log.Error(err))
			r.noteProblem("generate timestamp", err)
			return 0, true, nil
		}
	}
	w.Token = token
	phase = time.Now()
	err = r.commit(ctx, w)
	r.stats.phases.since(&r.stats.phases.commit, phase)
	if err != nil {
		r.outbox.giveBack()
		if errors.Is(err, errNotApplied) && ctx.Err() == nil {
			r.failures++
			if r.failures < maxNotApplied {
				// The window is kept: the next epoch commits the offset again.
				r.log.Warn("swift source offset commit did not apply; retrying", log.Int("attempt", r.failures), log.Error(err))
				r.noteProblem("commit", err)
				return 0, true, nil
			}
		}
		return 0, false, err
	}
	r.failures = 0
	r.problem.Store(nil)
	r.outbox.committed()
	// Invariant: a swift source's at_most_once_strategy outputs are queued only after the
	// commit that moves its offset past their rows, so a re-read after a restart never queues
	// them again (e2e TestSwiftSourceAtMostOnceSinkUnderKill).
	r.groups, n = groupByDest(r.groups, bestEffortOuts)
	for _, o := range r.groups[:n] {
		rows := make([]map[string]any, len(o.msgs))
		for i, m := range o.msgs {
			rows[i] = map[string]any(m.Payload)
		}
		r.bestEffort[o.dest].Offer(rows)
	}
	for _, s := range r.swiftSrc {
		a, ok := advanced[s]
		if !ok {
			a.off = s.committedOffset()
		}
		s.commit(a.off, a.pos, caughtUp[s])
		if ok {
			s.src.offset, s.src.pos = a.off, a.pos
			if err := s.src.src.Advance(ctx, a.pos); err != nil {
				r.log.Warn("consumer advance failed (offset is committed in the partition state)", log.String("source", s.src.id), log.Error(err))
			}
		}
	}
	if read > 0 || len(advanced) > 0 || len(done) > 0 {
		r.stats.epochs.Add(1)
	}
	r.stats.lastCommitTS.Store(token)
	r.updateSwiftCompleted()
	return nowMicros(), read == 0, nil
}

// swiftRead reads up to limit rows of s past its window (bounded by the outbox limit),
// invokes the process function per row and hands the outputs to the outbox. It returns the
// number of rows read (-1 when the source could not be read: a transient problem) and
// whether a read found the end of the source.
func (r *runner) swiftRead(ctx context.Context, s *swiftSource, now uint64, limit int, draining bool) (n int, atEnd bool, err error) {
	// Invariant: a swift source job holds at most OutboxLimit rows read and not committed
	// past, so a reader that does not acknowledge stops the source
	// (TestSwiftSourceOffsetWaitsForAcks).
	room := r.w.cfg.OutboxLimit - s.held()
	if s.src.ended {
		return 0, true, nil
	}
	if draining || room <= 0 || r.outbox.size() >= r.w.cfg.OutboxLimit {
		return 0, false, nil
	}
	from := s.nextPosition()
	rows, err := s.src.src.Read(ctx, from, int64(min(limit, room)))
	if err != nil {
		r.log.Warn("source read failed", log.String("source", s.src.id), log.Error(err))
		r.noteProblem("read source "+s.src.id, err)
		return -1, false, nil
	}
	if len(rows) == 0 {
		if s.src.src.Finite() {
			s.src.ended = true
		}
		return 0, true, nil
	}
	stamp := s.stamp(now)
	b := &epoch.Batch{Now: stamp}
	for _, row := range rows {
		b.Sources = append(b.Sources, epoch.SourceRow{
			SourcePartition: epoch.SourcePartition{SourceID: s.src.id, Partition: r.job.SourcePartition},
			Offset:          row.Offset, Payload: flow.Row(row.Columns),
			SystemTimestamp: stamp, EventTimestamp: orNow(row.Timestamp, now), Born: row.Born,
		})
	}
	plan := epoch.PlanEpoch(&r.cfg, b, nil)
	results, err := r.invoke(plan, nil, now)
	if err != nil {
		return 0, false, err
	}
	c, err := epoch.BuildCommit(&r.cfg, b, plan, results)
	r.releaseResults(results)
	if err != nil {
		return 0, false, err
	}
	// Invariant: a swift source that writes state or timers fails before anything of the row
	// is delivered (TestSwiftSourceRejectsState).
	if len(c.States) > 0 || len(c.TimersSet) > 0 {
		return 0, false, fmt.Errorf("job %s: swift source computation %s: the process function wrote state or timers; swift sources are stateless", r.job.JobID, r.comp.ID)
	}
	for _, o := range c.Sync {
		_, sync := r.syncSinks[o.Destination.ID]
		if _, alo := r.aloSinks[o.Destination.ID]; !sync && !alo {
			return 0, false, fmt.Errorf("job %s: swift source computation %s: outputs routed to sink %s, not a sync sink", r.job.JobID, r.comp.ID, o.Destination.ID)
		}
	}
	if err := r.assignEventTimes(c.Stored); err != nil {
		return 0, false, err
	}
	if err := r.assignEventTimes(c.Sync); err != nil {
		return 0, false, err
	}
	if err := r.assignEventTimes(c.BestEffort); err != nil {
		return 0, false, err
	}
	syncOf, bestEffortOf := map[string][]epoch.Out{}, map[string][]epoch.Out{} // by the source row's id
	for _, o := range c.Sync {
		if len(o.Parents) > 0 {
			syncOf[o.Parents[0]] = append(syncOf[o.Parents[0]], o)
		}
	}
	for _, o := range c.BestEffort {
		if len(o.Parents) > 0 {
			bestEffortOf[o.Parents[0]] = append(bestEffortOf[o.Parents[0]], o)
		}
	}
	// The outputs are held in the outbox until acknowledged: what was read counts as seen.
	r.noteEventTimes(b, c.Stored)
	outs := make([]ytstore.OutputRow, 0, len(c.Stored))
	parents := make([][]string, 0, len(c.Stored))
	payloads, err := r.storedPayloads(c.Stored)
	if err != nil {
		return 0, false, err
	}
	// A row's outputs are born when the row was committed to its queue: a re-read gives them
	// the same birth (epoch.Input.Born).
	born := make(map[string]uint64, len(plan.Groups))
	for _, g := range plan.Groups {
		born[g.Messages[0].MessageID] = g.SourceRow().Born
	}
	for i, o := range c.Stored {
		outs = append(outs, ytstore.OutputRow{
			PartitionID: r.job.PartitionID, Destination: o.Destination.ID, MessageID: o.Message.MessageID, StreamID: o.Message.StreamID,
			KeyHash: o.KeyHash, Key: epoch.EncodeKey(o.Message.Key), Payload: payloads[i],
			EventTimestamp: o.Message.EventTimestamp, SystemTimestamp: o.Message.SystemTimestamp,
			Born: swiftBirth(o.Parents, born),
		})
		parents = append(parents, o.Parents)
	}
	posAt := make(map[int64]connector.Position, len(rows)) // the position at each row
	for _, row := range rows {
		posAt[row.Offset], from = from, row.Next
	}
	window := make([]swiftRow, len(plan.Groups))
	for i, g := range plan.Groups {
		off := g.SourceRow().Offset
		id := g.Messages[0].MessageID
		window[i] = swiftRow{offset: off, pos: posAt[off], id: id, ts: stamp, sync: syncOf[id], bestEffort: bestEffortOf[id]}
	}
	// The window first: a row is in it before its outputs can be delivered.
	last := rows[len(rows)-1]
	s.appendRows(window, last.Offset+1, last.Next)
	// Invariant: swift source outputs live in memory only, never in the output store
	// (TestSwiftSourceOffsetWaitsForAcks); a restarted job re-reads from the committed offset
	// and recomputes the same ids, which the readers drop as duplicates
	// (TestSwiftSourceRestartRecomputes).
	r.outbox.addSwift(nil, outs, parents)
	return len(rows), false, nil
}

// updateSwiftCompleted marks a swift source job completed once every finite source is
// exhausted, every row read is delivered and committed past, and its at-most-once sinks'
// queues wrote (or dropped) what they were given.
func (r *runner) updateSwiftCompleted() {
	for _, s := range r.swiftSrc {
		if !s.src.ended || s.held() > 0 || s.committedOffset() < s.nextOffset() {
			return
		}
	}
	for _, be := range r.bestEffort {
		if be.Pending() > 0 {
			return
		}
	}
	if !r.completed.Swap(true) {
		r.w.wakeStatus()
	}
}
