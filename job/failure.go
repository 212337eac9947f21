// A failing invocation of the process function (an error or a panic): the epoch applies
// nothing and is retried with backoff, while job_status, the log and the metrics name it.

package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.ytsaurus.tech/library/go/core/log"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytstore"
)

// Invoke retry backoff: the first retry waits invokeBackoffMin, each next one twice as long,
// at most invokeBackoffMax.
const (
	invokeBackoffMin = 50 * time.Millisecond
	invokeBackoffMax = 10 * time.Second
)

// invokeBackoff is the wait before attempt+1 after attempt consecutive failed attempts (≥ 1).
func invokeBackoff(attempt int) time.Duration {
	d := invokeBackoffMin
	for i := 1; i < attempt && d < invokeBackoffMax; i++ {
		d *= 2
	}
	return min(d, invokeBackoffMax)
}

// invokeFailed records a failed invocation (the epoch was abandoned: nothing of it applied)
// and waits the backoff before the epoch is retried from the same inputs.
//
// Invariant: a failing or panicking process function fails only its epoch, which is retried
// with backoff and named in job_status (computation, partition, key, message id, attempt,
// error), the log (with a panic's stack) and the failures counter; the worker keeps running
// (TestPanickingFunctionReported, TestSourceRowErrorNamesQueueRow).
func (r *runner) invokeFailed(ctx context.Context, ie *invokeError) {
	r.invokeAttempts++
	total := r.stats.invokeFailures.Add(1)
	fields := []log.Field{
		log.String("computation", r.comp.ID), log.String("partition", r.job.PartitionID),
		log.String("key", fmt.Sprint(ie.Key)), log.String("message_id", ie.MessageID), log.Int("messages", ie.Messages),
		log.Int("attempt", r.invokeAttempts), log.Int64("process_failures", total), log.Error(ie),
	}
	if st := ie.stack(); st != nil {
		fields = append(fields, log.String("stack", string(st)))
	}
	wait := invokeBackoff(r.invokeAttempts)
	fields = append(fields, log.Duration("retry_in", wait))
	r.log.Warn("process function failed; the epoch is retried", fields...)
	msg := fmt.Sprintf("job %s (computation %s, partition %s): %s on key %v, message %q (%d messages), attempt %d: %s",
		r.job.JobID, r.comp.ID, r.job.PartitionID, ytstore.ProcessFailureMark, ie.Key, ie.MessageID, ie.Messages, r.invokeAttempts, ie.summary())
	r.problem.Store(&msg)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// isolating reports whether the next epoch isolates its failing messages: the computation's
// failure_policy sets them aside (dead_letter, skip) and its last max_attempts epochs failed.
func (r *runner) isolating() bool {
	pol := r.dyn.FailurePolicy
	return (pol.Mode == spec.FailureDeadLetter || pol.Mode == spec.FailureSkip) && r.invokeAttempts >= pol.MaxAttempts
}

// isolate runs epoch.Isolate on the plan, probing each group, timer and message with the
// process function (the loaded states, nothing applied), replaces the plan's groups with
// what it keeps and returns a dead letter for each message and timer it set aside, stamped
// with the epoch's token. A source computation's probes see the partition state as
// committed, not as earlier rows of the epoch change it.
func (r *runner) isolate(plan *epoch.Plan, states map[string]map[string][]byte, now, token uint64) ([]ytstore.DeadLetterRow, error) {
	single := map[any]error{}     // *flow.Message or *flow.Timer probed alone → its error
	byGroup := map[string]error{} // encoded key → the last error of a larger probe
	fails := func(g *epoch.Group) bool {
		results, err := r.invoke(&epoch.Plan{Groups: []*epoch.Group{g}}, states, now)
		if err == nil {
			r.releaseResults(results)
			return false
		}
		switch {
		case len(g.Messages) == 1 && len(g.Timers) == 0:
			single[&g.Messages[0]] = err
		case len(g.Timers) == 1 && len(g.Messages) == 0:
			single[&g.Timers[0]] = err
		default:
			byGroup[string(epoch.EncodeKey(g.Key))] = err
		}
		return true
	}
	kept, failed := epoch.Isolate(plan.Groups, fails)
	plan.Groups = kept
	letters := make([]ytstore.DeadLetterRow, 0, len(failed))
	for _, f := range failed {
		key := epoch.EncodeKey(f.Key)
		l := ytstore.DeadLetterRow{
			ComputationID: r.comp.ID, KeyHash: epoch.KeyHash(f.Key), Key: key, PartitionID: r.job.PartitionID,
			Attempts: uint64(r.invokeAttempts), DeadAt: token,
		}
		var payload flow.Row
		var ptr any
		if f.Message != nil {
			ptr = f.Message
			l.MessageID, l.StreamID, payload = f.Message.MessageID, f.Message.StreamID, f.Message.Payload
			l.SystemTimestamp, l.EventTimestamp = f.Message.SystemTimestamp, f.Message.EventTimestamp
		} else {
			ptr = f.Timer
			l.MessageID, l.StreamID, payload, l.Timer, l.Trigger = f.Timer.MessageID, f.Timer.StreamID, f.Timer.Payload, true, f.Timer.Trigger
			l.EventTimestamp = f.Timer.EventTimestamp
		}
		err := single[ptr]
		if err == nil {
			err = byGroup[string(key)]
		}
		if err != nil {
			if ie := (*invokeError)(nil); errors.As(err, &ie) {
				l.Error = ie.summary()
			} else {
				l.Error = err.Error()
			}
		}
		if payload != nil {
			enc, _, err := marshalPayloads([]flow.Row{payload})
			if err != nil {
				return nil, fmt.Errorf("job %s: dead letter %s: encode payload: %w", r.job.JobID, l.MessageID, err)
			}
			l.Payload = enc[0]
		}
		letters = append(letters, l)
	}
	return letters, nil
}

// setAsideCommitted counts and logs the messages and timers an applied epoch set aside.
func (r *runner) setAsideCommitted(letters []ytstore.DeadLetterRow) {
	if len(letters) == 0 {
		return
	}
	mode := r.dyn.FailurePolicy.Mode
	if mode == spec.FailureDeadLetter {
		r.stats.deadLettered.Add(int64(len(letters)))
	} else {
		r.stats.skipped.Add(int64(len(letters)))
	}
	for _, l := range letters {
		r.log.Warn("message set aside by failure_policy", log.String("mode", mode), log.String("computation", r.comp.ID),
			log.String("partition", r.job.PartitionID), log.String("message_id", l.MessageID), log.Bool("timer", l.Timer),
			log.UInt64("attempts", l.Attempts), log.String("error", l.Error))
	}
}

// swiftSetAside isolates the failing parents of a swift map epoch (isolate) and, before any
// of the epoch's outputs exists, commits their letters (dead_letter) under the job's lease in
// a transaction of their own; the set-aside parents then produce no child and are
// acknowledged upstream with the epoch (childless). A job that dies in between recomputes the
// parent after its retransmission, sets it aside again and writes the same letter row (the
// same key): it is kept once.
//
// Invariant: a failing swift parent is set aside with none of its children delivered, and its
// letter is committed before the parent is acknowledged (TestSwiftDeadLetters).
func (r *runner) swiftSetAside(ctx context.Context, plan *epoch.Plan, now uint64) error {
	token, err := r.reads.GenerateTimestamp(ctx)
	if err != nil {
		return fmt.Errorf("%w: generate timestamp: %w", errNotApplied, err)
	}
	letters, err := r.isolate(plan, nil, now, token)
	if err != nil {
		return err
	}
	if len(letters) > 0 && r.dyn.FailurePolicy.Mode == spec.FailureDeadLetter {
		w := &ytstore.EpochWrite{PartitionID: r.job.PartitionID, Lease: r.job.LeaseID, Token: token, DeadLetters: letters}
		if err := r.commit(ctx, w); err != nil {
			return err
		}
	}
	r.setAsideCommitted(letters)
	return nil
}
