// What a worker reports and watches for its jobs: job_status rows and their marks, the
// upstream-drained check of completing jobs, and what event_time timers follow.

package job

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.ytsaurus.tech/library/go/core/log"

	"github.com/ytflow/yt-flow/ytstore"
)

// wakeStatus makes the worker poll and report statuses now (see marksChanged).
func (w *Worker) wakeStatus() {
	if w == nil || w.marksChanged == nil { // runners of unit tests
		return
	}
	select {
	case w.marksChanged <- struct{}{}:
	default:
	}
}

// waitingUpstream reports whether a job of the worker completes and waits for its upstream
// to drain (checkUpstreamDrained).
func (w *Worker) waitingUpstream() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, h := range w.runners {
		if h.r.completing() && !h.r.upstreamDrained.Load() {
			return true
		}
	}
	return false
}

// inTransition reports whether some job of the worker has applied draining or has
// completed its sources (the pipeline's completion follows).
func (w *Worker) inTransition() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, h := range w.runners {
		if h.r.applied.Load() || h.r.completed.Load() {
			return true
		}
	}
	return false
}

// statusMarks describes the status transitions the controller waits for, per job: loaded,
// completed, draining applied, and drained (draining applied and nothing in flight; in_flight
// alone is not a mark, it comes and goes in a running job); drained is set when some job is.
// Statuses are reported at every poll while the marks change or a job is drained, else
// every StatusPeriod.
func (w *Worker) statusMarks() (marks string, drained bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ms := make([]string, 0, len(w.runners))
	for id, h := range w.runners {
		r := h.r
		applied := r.applied.Load()
		empty := applied && r.inFlight(int64(r.inbox.len())) == 0
		drained = drained || empty
		ms = append(ms, fmt.Sprintf("%s:%t/%t/%t/%t", id, r.loaded.Load(), r.completed.Load(), applied, empty))
	}
	sort.Strings(ms)
	return strings.Join(ms, ";"), drained
}

// reportStatuses writes job_status rows of running jobs, each conditional on its lease.
func (w *Worker) reportStatuses(ctx context.Context) {
	w.mu.Lock()
	hs := make([]*runnerHandle, 0, len(w.runners))
	for _, h := range w.runners {
		hs = append(hs, h)
	}
	w.mu.Unlock()
	for _, h := range hs {
		state, errText := ytstore.JobRunning, ""
		select {
		case <-h.done:
			if h.err == nil {
				continue
			}
			if errors.Is(h.err, ErrZombie) {
				continue
			}
			state, errText = ytstore.JobFailed, h.err.Error()
		default:
			if !h.r.loaded.Load() {
				// Invariant: no status before the job's output store is loaded, so a
				// watermark never passes a message it is about to resend
				// (TestSystemWatermarkCoversOutbox).
				continue
			}
			if h.r.completed.Load() {
				state = ytstore.JobCompleted
			}
		}
		err := w.coord.PutJobStatus(ctx, h.r.status(state, errText), h.lease)
		if err != nil && !errors.Is(err, ytstore.ErrLeaseLost) && ctx.Err() == nil {
			w.log.Warn("job status write failed", log.String("job", h.r.job.JobID), log.Error(err))
		}
	}
}

// reportFinal writes the last status of jobs stopped after the worker lost its session,
// each conditional on its lease: the controller sees their final counters when the lease
// still lives, and the write is refused when the lease is gone (the job's keys have a new
// owner), which is logged.
// The writes go out together and are given 5 seconds in all (YTsaurus may be unreachable).
func (w *Worker) reportFinal(ctx context.Context, stopped []*runnerHandle) {
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, h := range stopped {
		if h.r == nil || h.r.loads == nil { // a job that could not start reported its failure
			continue
		}
		wg.Go(func() {
			err := w.coord.PutJobStatus(sctx, h.r.status(ytstore.JobRunning, ""), h.lease)
			if err != nil && ctx.Err() == nil {
				w.log.Info("final status of a stopped job refused", log.String("job", h.r.job.JobID), log.String("lease", h.lease), log.Error(err))
			}
		})
	}
	wg.Wait()
}

// upstreamMark is one observation of an upstream job's status.
type upstreamMark struct {
	updatedAt uint64
	epoch     int64
}

// checkUpstreamDrained lets a completing job fire its timers once every job of the
// computations feeding it has been seen drained twice in a row with the same epochs and newer
// statuses (the drained rule of the controller, applied to the upstream only): before that,
// events can still arrive, and a timer fired at +inf would close a window too early.
//
// Invariant: a completing job fires its timers only after its upstream drained
// (TestCompletionFiresTimers, e2e TestSwiftSessionsUnderFaults).
func (w *Worker) checkUpstreamDrained(ctx context.Context) {
	w.mu.Lock()
	var waiting []*runner
	for _, h := range w.runners {
		if h.r.completing() && !h.r.upstreamDrained.Load() {
			waiting = append(waiting, h.r)
		}
	}
	jobs := w.jobs
	w.mu.Unlock()
	if len(waiting) == 0 {
		return
	}
	// The draining flag comes with the layout, the target state with the attributes, read
	// less often: a job drained to stop would pass for completing until the next read, and a
	// job without upstream (a visit-only computation) would start its final pass. Read it
	// again unless it was read after every waiting job saw its flag.
	stale := false
	for _, r := range waiting {
		stale = stale || r.drainSeen.Load() >= w.targetReadAt.Load()
	}
	if stale {
		readAt := time.Now().UnixNano()
		attrs, err := w.coord.Attributes(ctx)
		if err != nil {
			return
		}
		w.setTargetState(attrs.TargetState, readAt)
		waiting = slices.DeleteFunc(waiting, func(r *runner) bool { return !r.completing() })
	}
	sts, err := w.coord.JobStatuses(ctx)
	if err != nil {
		return
	}
	byJob := make(map[string]ytstore.JobStatus, len(sts))
	for _, st := range sts {
		byJob[st.JobID] = st
	}
	for _, r := range waiting {
		obs := map[string]upstreamMark{}
		quiet := true
		for _, j := range jobs {
			if !r.upstream[j.ComputationID] {
				continue
			}
			st, ok := byJob[j.JobID]
			if !ok || st.InFlight != 0 || !(st.Draining || st.State == ytstore.JobCompleted) {
				quiet = false
				break
			}
			obs[j.JobID] = upstreamMark{updatedAt: st.UpdatedAt, epoch: st.Epoch}
		}
		prev := r.upstreamObs
		r.upstreamObs = nil
		if !quiet {
			continue
		}
		r.upstreamObs = obs
		if prev == nil || len(prev) != len(obs) {
			continue
		}
		same := true
		for id, m := range obs {
			p, ok := prev[id]
			if !ok || p.epoch != m.epoch || m.updatedAt <= p.updatedAt {
				same = false
			}
		}
		if same {
			r.upstreamDrained.Store(true)
			r.wake() // its timer clock is now +inf: fire its timers without waiting
		}
	}
}

// What event_time timers follow (Worker.eventTime).
const (
	eventTimeUnknown int32 = iota
	eventTimeWatermark
	eventTimeWallClock
)

// checkEventWatermarks settles what event_time timers follow, once the pipeline's tables
// can be read.
func (w *Worker) checkEventWatermarks(ctx context.Context) {
	if w.eventTime.Load() != eventTimeUnknown {
		return
	}
	ok, err := w.coord.EventWatermarks(ctx)
	switch {
	case err != nil:
		w.log.Warn("cannot tell whether the pipeline has event watermarks; event_time timers wait", log.Error(err))
	case ok:
		w.eventTime.Store(eventTimeWatermark)
	default:
		w.eventTime.Store(eventTimeWallClock)
	}
}

// readWatermarks reads the published watermarks (the fast path of a pipeline that awaits them,
// Worker.watermarksAwaited); a failed read keeps the values read before.
func (w *Worker) readWatermarks(ctx context.Context) {
	a, err := w.coord.Watermarks(ctx)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Debug("watermark read failed; keeping the last ones read", log.Error(err))
		}
		return
	}
	w.storeWatermarks(a)
}

// storeWatermarks keeps the watermarks a read of the attributes gave and, when one grew, wakes
// the jobs that may wait for it: those with stored timers and the sources watermark_alignment
// holds back. Their next epoch then starts now, not after their idle wait.
func (w *Worker) storeWatermarks(a *ytstore.Attributes) {
	grew := a.SystemWatermark > w.systemWatermark.Load()
	w.systemWatermark.Store(a.SystemWatermark)
	if a.EventWatermark != nil {
		grew = grew || *a.EventWatermark > w.eventWatermark.Load()
		w.eventWatermark.Store(*a.EventWatermark)
	}
	if a.EventWatermarks != nil {
		grew = grew || watermarksGrew(w.eventWatermarks.Load(), a.EventWatermarks)
		w.eventWatermarks.Store(a.EventWatermarks)
	}
	if !grew {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, h := range w.runners {
		if r := h.r; r != nil && (r.pendingTimers.Load() > 0 || r.alignmentHeld.Load()) {
			r.wake()
		}
	}
}

// watermarksGrew reports whether a stream or group watermark of now is above its value in
// before (nil: none yet), or new.
func watermarksGrew(before, now *ytstore.EventWatermarks) bool {
	if before == nil {
		return len(now.Streams)+len(now.Groups) > 0
	}
	grew := func(b, n map[string]uint64) bool {
		for id, v := range n {
			if old, ok := b[id]; !ok || v > old {
				return true
			}
		}
		return false
	}
	return grew(before.Streams, now.Streams) || grew(before.Groups, now.Groups)
}
