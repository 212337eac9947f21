// Distributed throttling of a computation's input rows (dynamic input_rows_throttler_id): the
// job asks the leader controller for rows through job_status.throttle_requested and takes, per
// epoch, at most what the controller granted it in all (@throttler_grants) less what it took.

package job

// throttled reports whether the job's input rows draw from a distributed throttler: its
// computation names one and the pipeline's job_status can carry the requests (a pipeline of an
// older version cannot: its jobs are not throttled).
func (r *runner) throttled() bool {
	return r.dyn.InputRowsThrottlerID != "" && r.w.throttling.Load()
}

// throttleAvailable is how many input rows the job may take now: its grant in all less what
// it took (never negative).
func (r *runner) throttleAvailable() int {
	var granted int64
	if g := r.w.throttlerGrants.Load(); g != nil {
		granted = g.Jobs[r.job.JobID]
	}
	return int(max(granted-r.throttleTaken.Load(), 0))
}

// noteThrottled records rows the epoch took and what the job asks for next: while it has input
// waiting (or open sources), two batches beyond what it took, so that a grant is there when the
// next epoch needs it.
//
// Invariant: a throttled job never takes more input rows than the controller granted it, and
// the controller never grants more than limit × the elapsed periods
// (TestRoundNeverGrantsMoreThanRefilled, e2e TestThrottlerGrantsWithinLimit).
func (r *runner) noteThrottled(taken int, limit int) {
	n := r.throttleTaken.Add(int64(taken))
	want := n
	if r.inbox.len() > 0 || r.sourcesOpen() {
		want += 2 * int64(limit)
	}
	r.throttleWant.Store(want)
}
