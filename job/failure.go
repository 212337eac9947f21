// A failing invocation of the process function (an error or a panic): the epoch applies
// nothing and is retried with backoff, while job_status, the log and the metrics name it.

package job

import (
	"context"
	"fmt"
	"time"

	"go.ytsaurus.tech/library/go/core/log"
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
	msg := fmt.Sprintf("job %s (computation %s, partition %s): process function failed on key %v, message %q (%d messages), attempt %d: %s",
		r.job.JobID, r.comp.ID, r.job.PartitionID, ie.Key, ie.MessageID, ie.Messages, r.invokeAttempts, ie.summary())
	r.problem.Store(&msg)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
