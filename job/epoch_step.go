// One epoch of a runner (runner.epoch, runner.swiftEpoch): fetching inputs, timers and source
// rows, planning, committing and applying the commit; the epoch's clocks and stamps.

package job

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"go.ytsaurus.tech/library/go/core/log"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytstore"
)

// timerClock is the time of each timer stream: the pipeline SystemWatermark for
// system_time streams, the wall clock for current_time ones, and for event_time ones (the
// default) the EventWatermark of the streams the timer stream waits for, each shifted back by
// its delay and capped by the messages the job holds (epoch.StreamEventClock over
// @event_watermarks); the pipeline EventWatermark when no per-stream watermarks are
// published (a controller of an older version), and the wall clock in a pipeline created
// before event watermarks existed, which never gets one.
//
// A completing job's clock is +inf for every stream: completion is the end of all time.
func (r *runner) timerClock(now uint64, completing bool) func(streamID string) uint64 {
	var (
		held     uint64
		heldRead bool
		clocks   map[string]uint64 // event_time clock by timer stream, computed once per epoch
	)
	return func(streamID string) uint64 {
		if completing {
			return math.MaxUint64
		}
		t := r.comp.Timers[streamID]
		switch {
		case t != nil && t.TimeType == "system_time":
			return r.w.systemWatermark.Load()
		case t != nil && t.TimeType == "current_time":
			return now
		}
		switch r.w.eventTime.Load() {
		case eventTimeWatermark:
			// Invariant: an event_time timer fires once the pipeline EventWatermark passed its
			// trigger (TestEventTimeTimersFollowTheWatermark), shifted back by the largest
			// delay of its streams_with_delays (TestEventTimerStreamDelays).
			ews := r.w.eventWatermarks.Load()
			if ews == nil || t == nil {
				return eventClock(r.w.eventWatermark.Load(), t)
			}
			if c, ok := clocks[streamID]; ok {
				return c
			}
			if !heldRead {
				held, heldRead = r.inbox.minEventTS(), true
			}
			// Invariant: an event_time timer fires once every stream it waits for passed its
			// trigger plus that stream's delay and no message the job holds is behind it
			// (TestEventTimersPerStream).
			c := epoch.StreamEventClock(ews.Streams, r.timerStreams(t), t.StreamsWithDelays, held)
			if clocks == nil {
				clocks = map[string]uint64{}
			}
			clocks[streamID] = c
			return c
		case eventTimeWallClock:
			return now // a pipeline without event watermarks (created by an older version)
		}
		return 0 // not known yet: nothing fires
	}
}

// timerStreams are the streams the event_time timer stream t waits for (epoch.TimerStreams:
// those it names, else every input and source stream of the computation).
func (r *runner) timerStreams(t *spec.Timer) []string {
	inputs := append([]string(nil), r.comp.InputStreamIDs...)
	for sid := range r.comp.Sources {
		inputs = append(inputs, sid)
	}
	return epoch.TimerStreams(t.Streams, t.StreamsWithDelays, inputs)
}

// eventClock is the time of an event_time timer stream t at pipeline EventWatermark ew
// (epoch.EventClock of its streams_with_delays; ew when t is not known).
func eventClock(ew uint64, t *spec.Timer) uint64 {
	if t == nil {
		return ew
	}
	return epoch.EventClock(ew, t.StreamsWithDelays)
}

func nowMicros() uint64 { return uint64(time.Now().UnixMicro()) }

// stamp is the time of an epoch that starts at now by the worker's clock: never before an
// earlier epoch's of the job, nor before the @system_watermark the job loaded with. Its
// outputs carry it as their system timestamp.
//
// Invariant: a job never produces a message below the SystemWatermark it started under or
// below one it produced before, even when the worker's clock steps back or lags the clocks
// that moved the watermark, so a reader's dedup row of it is not collected while it can
// still be retransmitted (TestEpochStampsNeverGoBack).
func (r *runner) stamp(now uint64) uint64 {
	r.stampMu.Lock()
	defer r.stampMu.Unlock()
	r.lastStamp = max(r.lastStamp, now)
	return r.lastStamp
}

func (r *runner) leaseCheckPeriod() uint64 {
	p := r.dyn.LeaseCheckPeriod
	if r.w.cfg.LeaseCheckPeriod > 0 {
		p = r.w.cfg.LeaseCheckPeriod
	}
	return uint64(p.Microseconds())
}

// epoch runs one epoch. It returns the time of its commit (0 when it did not commit) and
// whether it found nothing to do.
func (r *runner) epoch(ctx context.Context, lastCommit uint64) (committedAt uint64, idle bool, err error) {
	if len(r.swiftSrc) > 0 {
		return r.swiftSourceEpoch(ctx, lastCommit)
	}
	limit := r.dyn.MaxRowsPerBatch
	if limit <= 0 {
		limit = 1000
	}
	now := r.stamp(nowMicros())
	phase := time.Now()
	// While the epoch is open, its outputs will carry now as their system timestamp.
	r.openEpoch.Store(now)
	defer r.openEpoch.Store(0)
	draining, retiring := r.draining.Load(), r.retiring.Load()
	// Invariant: a job whose outputs are not delivered reads nothing new, so a slow reader
	// back-pressures its writers (TestOutboxLimitBackPressure).
	blocked := r.outbox.size() >= r.w.cfg.OutboxLimit
	b := &epoch.Batch{Now: now, DistinctInputs: true} // the inbox holds one entry per id
	b.Sources = r.sourceRows[:0]
	defer func() {
		// Nothing refers to the rows after the epoch (the plan's groups are rebuilt by the
		// next one): keep the array, not the payloads it points to.
		clear(b.Sources)
		r.sourceRows = b.Sources[:0]
	}()
	// inLimit bounds the input rows and source rows the epoch takes: max_rows_per_batch, and
	// what the distributed throttler granted for a throttled computation.
	inLimit, throttled := limit, r.throttled()
	if throttled {
		inLimit = min(limit, r.throttleAvailable())
	}
	// bytesCap bounds the input bytes the epoch takes (input_bytes_throttler_id; -1: none).
	bytesCap, bytesThrottled := int64(-1), r.bytesThrottled()
	if bytesThrottled {
		if bytesCap = r.available(r.dyn.InputBytesThrottlerID); bytesCap == 0 {
			inLimit = 0
		}
	}
	held := (throttled || bytesThrottled) && inLimit == 0
	if held {
		r.stats.throttledEpochs.Add(1)
	}
	if retiring {
		// A retiring job processes no input: what it buffered goes unacknowledged, so the
		// senders retransmit it to the key's new owner.
		r.inbox.drop()
	} else if !blocked && inLimit > 0 {
		b.Inputs = r.takeInputs(inLimit, bytesCap)
		r.inputs = b.Inputs
		r.noteBatch(len(b.Inputs), limit)
	}
	completing := r.completing() && r.upstreamDrained.Load()
	// Invariant: a completing job fires every pending timer before it reports drained; a
	// stopping or pausing job keeps its timers for the next start (TestCompletionFiresTimers).
	if (!draining || completing) && !blocked {
		b.Timers = r.timers.DueBy(r.timerClock(now, completing), limit)
		r.addVisits(ctx, b, limit-len(b.Timers), completing)
	}
	// Replayed dead letters are new work: a draining job leaves them in the replay partition
	// for the next start.
	var replayed []ytstore.OutputKey // replay rows of replayed dead letters in b
	if !draining && !blocked {
		r.pollReplays(ctx, r.reads)
		replayed = r.addReplays(b, limit)
	}
	if r.applied.Swap(draining) != draining {
		r.w.wakeStatus()
	}
	sourceRows, sourcesRead := 0, false
	var inBytes, sourceBytes int64
	if bytesThrottled {
		inBytes = inputBytes(b.Inputs)
	}
	aligned := len(r.sources) > 0 && !draining && !blocked && r.alignmentHold()
	for _, s := range r.sources {
		if s.ended || draining || blocked || aligned || inLimit-sourceRows <= 0 || bytesCap >= 0 && inBytes+sourceBytes >= bytesCap {
			continue
		}
		rows, ahead, err := s.read(ctx, int64(inLimit-sourceRows))
		if err != nil {
			r.inbox.release(inputIDs(b.Inputs))
			what, unavailable := s.readFailure(time.Now(), r.unavailableAfter(s.id))
			if unavailable {
				r.log.Error("source unavailable", log.String("source", s.id), log.Error(err))
			} else {
				r.log.Warn("source read failed", log.String("source", s.id), log.Error(err))
			}
			r.noteProblem(what, err)
			return 0, true, nil
		}
		s.readSucceeded()
		if ahead {
			r.stats.readAheads.Add(1)
		}
		r.noteBatch(len(rows), limit)
		sourceRows, sourcesRead = sourceRows+len(rows), true
		if len(rows) == 0 && s.src.Finite() {
			s.ended = true
		}
		b.Sources = slices.Grow(b.Sources, len(rows))
		for _, row := range rows {
			if bytesThrottled {
				sourceBytes += rowBytes(flow.Row(row.Columns))
			}
			b.Sources = append(b.Sources, epoch.SourceRow{
				SourcePartition: epoch.SourcePartition{SourceID: s.id, Partition: r.job.SourcePartition},
				Offset:          row.Offset, Payload: flow.Row(row.Columns),
				SystemTimestamp: orNow(row.Timestamp, now), EventTimestamp: orNow(row.Timestamp, now),
			})
		}
	}
	if sourcesRead {
		r.noteSourceRead(sourceRows, now)
	}
	r.noteQuotaEpoch()
	if throttled || bytesThrottled {
		r.noteThrottled(len(b.Inputs)+sourceRows, inBytes+sourceBytes, limit, held, time.Now())
	}
	r.updateCompleted()
	empty := len(b.Inputs) == 0 && len(b.Timers) == 0 && len(b.Sources) == 0
	phase = r.stats.phases.since(&r.stats.phases.fetch, phase)
	r.stats.phases.rows.Add(int64(len(b.Inputs) + len(b.Timers) + len(b.Sources)))
	done := r.outbox.takeDoneIf(r.deleteDoneNow(draining))
	if empty && len(done) == 0 && now-lastCommit < r.leaseCheckPeriod() {
		return 0, true, nil
	}
	abandon := func() {
		r.inbox.release(inputIDs(b.Inputs))
		r.outbox.giveBack()
		r.visitsAbandoned()
	}

	if r.cfg.Swift {
		defer r.stats.phases.since(&r.stats.phases.process, phase) // a swift map only processes
		return r.swiftEpoch(ctx, b, now)
	}
	// The epoch's three reads are independent: its token, the dedup lookup of its inputs and
	// the states of every key it may invoke (a superset of the plan's keys: duplicates are
	// not known yet). They run concurrently.
	pre := r.prepare(ctx, b)
	defer pre.tx.Release() // a no-op once the commit used it
	phase = r.stats.phases.since(&r.stats.phases.prepare, phase)
	if pre.tokenErr != nil {
		abandon()
		r.log.Warn("epoch: generate timestamp failed", log.Error(pre.tokenErr))
		r.noteProblem("generate timestamp", pre.tokenErr)
		return 0, true, nil
	}
	token := pre.token
	b.SeqNo = token
	if r.fresh != nil && r.cfg.Dedup {
		r.fresh.started(token)
	}

	committedSet := map[string]bool{}
	if pre.dedupErr != nil {
		abandon()
		r.log.Warn("epoch: dedup lookup failed", log.Error(pre.dedupErr))
		r.noteProblem("dedup lookup", pre.dedupErr)
		return 0, true, nil
	}
	for i, f := range pre.found {
		if !f.Found {
			continue
		}
		in := b.Inputs[i]
		committedSet[in.Message.MessageID] = true
		// Invariant: a copy of a committed message with another payload is reported, and the
		// committed copy stands (TestCommittedPayloadMismatchReported).
		if f.PayloadFingerprint != 0 && in.PayloadFingerprint != 0 && f.PayloadFingerprint != in.PayloadFingerprint {
			r.inbox.reportCommittedMismatch(in, f.PayloadFingerprint)
		}
	}
	if pre.statesErr != nil {
		abandon()
		return 0, false, fmt.Errorf("job %s: load states: %w", r.job.JobID, pre.statesErr)
	}
	if pre.externalErr != nil {
		abandon()
		return 0, false, fmt.Errorf("job %s: load external state: %w", r.job.JobID, pre.externalErr)
	}
	r.extLoaded, r.extRowsLoaded = pre.external, pre.externalRows
	r.extSubKeys = externalSubKeys(r.ext)
	if pre.joinedErr != nil {
		abandon()
		return 0, false, fmt.Errorf("job %s: load joined state: %w", r.job.JobID, pre.joinedErr)
	}
	r.joined = pre.joined
	plan := r.planner.Plan(&r.cfg, b, func(in epoch.Input) bool { return committedSet[in.Message.MessageID] })
	if len(plan.Duplicates) > 0 {
		// Invariant: inputs the dedup index already holds are acknowledged at once and dropped
		// (TestWorkerDropsDuplicates).
		r.inbox.ack(plan.Duplicates)
		total := r.stats.duplicates.Add(int64(len(plan.Duplicates)))
		r.log.Info("duplicates dropped", log.Int("count", len(plan.Duplicates)), log.Int64("duplicates_dropped", total))
	}

	var letters []ytstore.DeadLetterRow
	if r.isolating() {
		var err error
		if letters, err = r.isolate(plan, pre.states, now, token); err != nil {
			abandon()
			return 0, false, err
		}
	}
	results, err := r.invoke(plan, pre.states, now)
	if err != nil {
		abandon()
		if ie := (*invokeError)(nil); errors.As(err, &ie) {
			r.invokeFailed(ctx, ie)
			return 0, true, nil
		}
		return 0, false, err
	}
	r.invokeAttempts = 0
	r.extLoaded = nil
	extWrites, err := r.externalWrites(plan, results)
	if err != nil {
		r.releaseResults(results)
		abandon()
		return 0, false, err
	}
	c, err := r.planner.Build(&r.cfg, b, plan, results)
	r.releaseResults(results)
	if err != nil {
		abandon()
		return 0, false, err
	}
	if err := r.assignEventTimes(c.Stored); err != nil {
		abandon()
		return 0, false, err
	}
	w, stored, seqAfter, err := r.write(c, b, token)
	if err != nil {
		abandon()
		return 0, false, err
	}
	// Invariant: a replayed dead letter's replay row is deleted by the commit that processes
	// it (TestReplayDeadLettersExactlyOnce).
	w.OutputsDone = slices.Concat(done, replayed)
	w.Tx = pre.tx
	w.Sinks = append(w.Sinks, extWrites...)
	if r.dyn.FailurePolicy.Mode == spec.FailureDeadLetter {
		// Invariant: a message set aside by failure_policy dead_letter is written to
		// dead_letters in the commit that acknowledges it, so it is kept exactly once
		// (TestDeadLettersExactlyOnce).
		w.DeadLetters = letters
	}
	if !epoch.NeedCommit(c, len(w.OutputsDone), now, lastCommit, r.leaseCheckPeriod()) {
		abandon()
		return 0, true, nil
	}
	// Invariant: source offsets advance only with the commit; rows read ahead during it are
	// used only from the offset it committed (TestSourceReadAhead).
	if !draining {
		for _, s := range r.sources {
			if off, ok := c.Offsets[epoch.SourcePartition{SourceID: s.id, Partition: r.job.SourcePartition}]; ok && !s.ended {
				if pos, ok := s.positionAt(off); ok {
					s.readAhead(ctx, off, pos, int64(limit))
				}
			}
		}
	}
	phase = r.stats.phases.since(&r.stats.phases.process, phase)
	err = r.writeBeforeCommit(ctx)
	if err == nil {
		err = r.commit(ctx, w)
	}
	r.stats.phases.since(&r.stats.phases.commit, phase)
	if err != nil {
		abandon()
		if errors.Is(err, errNotApplied) && ctx.Err() == nil {
			r.failures++
			if r.failures < maxNotApplied {
				r.log.Warn("epoch did not apply; recomputing it", log.Int("attempt", r.failures), log.Error(err))
				r.noteProblem("commit", err)
				return 0, true, nil
			}
		}
		return 0, false, err
	}
	r.failures = 0
	r.problem.Store(nil)
	r.topologyPending = nil // kept by this commit
	r.setAsideCommitted(letters)
	r.replaysCommitted(replayed)
	r.stats.messages.Add(int64(len(b.Inputs) - len(plan.Duplicates) + len(b.Sources)))
	r.outbox.committed()
	if r.fresh != nil && r.cfg.Dedup {
		r.fresh.committed(plan.Fresh)
	}
	if !r.cfg.Source {
		r.stateCache.committed(w.States)
	} else {
		r.noteEventTimes(b, c.Stored)
	}

	// After the commit: the epoch is durable.
	r.inbox.ack(c.Acks)
	r.timers.Apply(c)
	r.pendingTimers.Store(int64(r.timers.Len()))
	r.visitsCommitted()
	if r.cfg.Source {
		for _, st := range c.States {
			if st.Value == nil {
				delete(r.partState, st.Name)
			} else {
				r.partState[st.Name] = st.Value
			}
		}
	}
	r.outbox.add(stored)
	for id, n := range seqAfter {
		r.seq[id] = n
	}
	for _, s := range r.sources {
		if off, ok := c.Offsets[epoch.SourcePartition{SourceID: s.id, Partition: r.job.SourcePartition}]; ok {
			pos, _ := s.positionAt(off) // write checked it
			s.committed(off, pos)
			s.advanceCommitted(ctx, r.log, time.Now(), s.ended)
		}
	}
	var n int
	r.groups, n = groupByDest(r.groups, c.BestEffort)
	for _, o := range r.groups[:n] {
		rows := make([]map[string]any, len(o.msgs))
		for i, m := range o.msgs {
			rows[i] = map[string]any(m.Payload)
		}
		r.bestEffort[o.dest].Offer(rows)
	}
	if !c.Empty() || len(done) > 0 {
		r.stats.epochs.Add(1)
	}
	r.stats.lastCommitTS.Store(w.Token)
	r.updateCompleted()
	return nowMicros(), empty, nil
}

// swiftEpoch processes the batch of a swift map job: it persists nothing; outputs are held
// in memory until delivered, and an input is acknowledged upstream only once all its outputs
// are (at once when it has none). After a restart the upstream retransmits the inputs not
// acknowledged, and their recomputed outputs carry the same ids (epoch.SwiftOutputID), which
// the readers' dedup absorbs. Swift map functions must be deterministic and stateless.
func (r *runner) swiftEpoch(ctx context.Context, b *epoch.Batch, now uint64) (uint64, bool, error) {
	if len(b.Inputs) == 0 {
		return 0, true, nil
	}
	release := func() { r.inbox.release(inputIDs(b.Inputs)) }
	plan := epoch.PlanEpoch(&r.cfg, b, nil)
	r.inbox.ack(plan.Duplicates) // repeats within the batch: the first copy stands for them
	if r.isolating() {
		// A failing parent and its children are handled as one: the parent is set aside
		// before any child exists, and acknowledged upstream only once its letter is
		// committed (swiftSetAside).
		if err := r.swiftSetAside(ctx, plan, now); err != nil {
			release()
			if errors.Is(err, errNotApplied) && ctx.Err() == nil {
				r.noteProblem("commit dead letters", err)
				return 0, true, nil
			}
			return 0, false, err
		}
	}
	results, err := r.invoke(plan, nil, now)
	if err != nil {
		release()
		if ie := (*invokeError)(nil); errors.As(err, &ie) {
			r.invokeFailed(ctx, ie)
			return 0, true, nil
		}
		return 0, false, err
	}
	r.invokeAttempts = 0
	c, err := epoch.BuildCommit(&r.cfg, b, plan, results)
	r.releaseResults(results)
	if err != nil {
		release()
		return 0, false, err
	}
	if len(c.States) > 0 || len(c.TimersSet) > 0 || len(c.Sync) > 0 || len(c.BestEffort) > 0 {
		release()
		return 0, false, fmt.Errorf("job %s: swift computation %s: the process function wrote state or timers; swift map computations are stateless", r.job.JobID, r.comp.ID)
	}
	rows := make([]ytstore.OutputRow, 0, len(c.Stored))
	parents := make([][]string, 0, len(c.Stored))
	payloads, err := r.storedPayloads(c.Stored)
	if err != nil {
		release()
		return 0, false, err
	}
	born := make(map[string]uint64, len(b.Inputs))
	for _, in := range b.Inputs {
		born[in.Message.MessageID] = in.Born
	}
	for i, o := range c.Stored {
		rows = append(rows, ytstore.OutputRow{
			PartitionID: r.job.PartitionID, Destination: o.Destination.ID, MessageID: o.Message.MessageID, StreamID: o.Message.StreamID,
			KeyHash: o.KeyHash, Key: epoch.EncodeKey(o.Message.Key), Payload: payloads[i],
			EventTimestamp: o.Message.EventTimestamp, SystemTimestamp: o.Message.SystemTimestamp,
			Born: swiftBirth(o.Parents, born),
		})
		parents = append(parents, o.Parents)
	}
	r.inbox.ack(r.outbox.addSwift(c.Acks, rows, parents))
	r.stats.epochs.Add(1)
	r.stats.messages.Add(int64(len(b.Inputs) - len(plan.Duplicates)))
	r.problem.Store(nil)
	return now, false, nil
}

func inputIDs(ins []epoch.Input) []string {
	ids := make([]string, len(ins))
	for i, in := range ins {
		ids[i] = in.Message.MessageID
	}
	return ids
}

// doneBatch is how many finished output store rows (chunks acknowledged by every reader or
// delivered by their sink) wait to be deleted together; see runner.deleteDoneNow.
const doneBatch = 8

// deleteDoneNow says when an epoch deletes the finished output store rows: once doneBatch of
// them wait, once the oldest waited batch_duration, and at once while the job drains (its
// completion waits for the deletions). Deleting them every few epochs instead of in every
// one saves most epochs a delete_rows request, and an idle job a commit; until deleted, a
// finished row is still counted in flight and holds the SystemWatermark back, and a job that
// restarts before deleting it resends it, which its reader acknowledges as a duplicate
// (TestDoneRowsDeletedInBatches).
func (r *runner) deleteDoneNow(draining bool) func(n int, since time.Time) bool {
	wait := r.dyn.BatchDuration
	if wait <= 0 {
		wait = time.Second
	}
	return func(n int, since time.Time) bool {
		return draining || n >= doneBatch || time.Since(since) >= wait
	}
}
