package job

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.ytsaurus.tech/library/go/core/log"
	"go.ytsaurus.tech/library/go/core/log/nop"
	"go.ytsaurus.tech/yt/go/guid"

	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytstore"
)

// Worker runs the jobs the controller assigns to it. Create it with NewWorker and call Run
// once.
type Worker struct {
	cfg    Config
	id     string
	log    log.Structured
	store  *ytstore.Store
	layout layout
	// marksChanged is signalled when a job completes or applies draining: the worker
	// reports statuses at once instead of at its next poll (the controller waits for them).
	marksChanged chan struct{}

	mu      sync.Mutex
	addr    string
	runners map[string]*runnerHandle // job id -> running or finished runner
	// stopping are runners of removed jobs, still winding down; retired keeps their final
	// counters for Stats.
	stopping []*runnerHandle
	retired  map[string]JobStats
	ready    chan struct{}
	// registered is set (by Run's goroutine only) once the worker registered the first time.
	registered bool
	// systemWatermark is the pipeline's @system_watermark (µs) as last read; system_time
	// timers fire when it passes their trigger.
	systemWatermark atomic.Uint64
	// eventWatermark is the pipeline's @event_watermark (µs) as last read (0 before the
	// first); event_time timers fire below it. eventTime says what event_time timers follow:
	// eventTimeUnknown until the pipeline's tables were read (no event_time timer fires),
	// eventTimeWatermark, or eventTimeWallClock for a pipeline of an older version without
	// event watermarks.
	eventWatermark atomic.Uint64
	eventTime      atomic.Int32
	// targetState is the pipeline's @target_state as last read ("" before the first read);
	// a draining job of a pipeline whose target is working is completing.
	targetState atomic.Pointer[string]
	// jobs is the layout as last polled (guarded by mu).
	jobs []ytstore.Job
}

// runnerHandle tracks one runner goroutine.
type runnerHandle struct {
	r      *runner
	lease  string
	cancel context.CancelFunc
	done   chan struct{}
	err    error // set before done is closed
}

// NewWorker returns a worker for cfg; it connects to nothing until Run.
func NewWorker(cfg Config) *Worker {
	cfg = cfg.withDefaults()
	id := cfg.WorkerID
	if id == "" {
		id = "worker-" + guid.New().String()
	}
	logger := cfg.Logger
	if logger == nil {
		logger = (&nop.Logger{}).Structured()
	}
	return &Worker{
		cfg: cfg, id: id, log: log.With(logger.Logger(), log.String("worker", id)).Structured(),
		runners: map[string]*runnerHandle{}, retired: map[string]JobStats{}, ready: make(chan struct{}), marksChanged: make(chan struct{}, 1),
	}
}

// ID returns the worker id.
func (w *Worker) ID() string { return w.id }

// Ready is closed once the worker is registered and serving; Addr is valid from then on.
func (w *Worker) Ready() <-chan struct{} { return w.ready }

// Addr is the host:port of the transport endpoint ("" before Ready).
func (w *Worker) Addr() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.addr
}

// Stats returns the counters of the jobs this worker runs or ran.
func (w *Worker) Stats() map[string]JobStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]JobStats, len(w.runners)+len(w.retired))
	for id, st := range w.retired {
		out[id] = st
	}
	for id, h := range w.runners {
		st := h.r.jobStats()
		if old, ok := w.retired[id]; ok {
			// The same job ran before (the worker re-registered): counters accumulate.
			st.Epochs += old.Epochs
			st.Duplicates += old.Duplicates
			st.BestEffortDropped += old.BestEffortDropped
		}
		out[id] = st
	}
	return out
}

func (w *Worker) runner(jobID string) *runner {
	w.mu.Lock()
	defer w.mu.Unlock()
	h, ok := w.runners[jobID]
	if !ok {
		return nil
	}
	select {
	case <-h.done:
		return nil
	default:
		return h.r
	}
}

// Run registers the worker (session transaction, workers row), serves the transport, runs
// its jobs and reports their status until ctx ends; then it stops every job, aborts the
// session and returns nil. It returns an error when it cannot start; while the pipeline does
// not exist yet it waits for it. When its session ends under it, the worker stops all its
// jobs and registers again with a new session.
func (w *Worker) Run(ctx context.Context) error {
	if w.cfg.Proxy == "" || w.cfg.Path == "" {
		return errors.New("job: worker: proxy and pipeline path are required")
	}
	store, err := ytstore.Open(ctx, ytstore.Config{Proxy: w.cfg.Proxy, Token: w.cfg.Token, Path: w.cfg.Path, Logger: w.log})
	if err != nil {
		return fmt.Errorf("job: worker %s: %w", w.id, err)
	}
	defer w.closeStore(store)
	w.store = store

	ln, err := net.Listen("tcp", w.cfg.Listen)
	if err != nil {
		return fmt.Errorf("job: worker %s: listen on %s: %w", w.id, w.cfg.Listen, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(w.serveHTTP), ReadHeaderTimeout: 10 * time.Second}
	serveDone := make(chan struct{})
	go func() { defer close(serveDone); _ = srv.Serve(ln) }()
	defer func() {
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
		<-serveDone
	}()

	defer w.stopAll()
	addr := ln.Addr().String()
	if w.cfg.InProcessPeers {
		peers.Store(addr, w)
		defer peers.Delete(addr) // before the jobs stop: later pushes go over HTTP and fail
	}
	retry := time.Duration(0) // the wait before the next attempt to register the first time
	for {
		err := w.session(ctx, addr)
		if ctx.Err() != nil {
			return nil
		}
		if !w.registered {
			switch {
			case errors.Is(err, ytstore.ErrNotFound) || errors.Is(err, ytstore.ErrTabletNotMounted):
				w.log.Info("waiting for the pipeline to be created", log.Error(err))
				sleep(ctx, 2*time.Second)
				continue
			case ytstore.IsTransient(err):
				// YTsaurus unreachable or failing (a connection cut, a proxy restarting): the
				// worker waits for it, as it does once registered; a refusal (bad path, no
				// access) still ends the worker at once (TestWorkerRegistersThroughCutConnections).
				retry = min(max(2*retry, 100*time.Millisecond), 5*time.Second)
				w.log.Warn("cannot register yet: YTsaurus unreachable or failing; retrying", log.Duration("retry_in", retry), log.Error(err))
				sleep(ctx, retry)
				continue
			}
			return err
		}
		// Invariant: a worker whose session ended stops all its jobs before it registers
		// again; their leases decide whether they may resume (TestWorkerSurvivesSessionLoss).
		w.log.Warn("session lost: stopping all jobs and registering again", log.Error(err))
		w.reportFinal(ctx, w.stopAll())
		sleep(ctx, time.Second)
	}
}

// errSessionEnded reports that the worker's session transaction ended under it.
var errSessionEnded = errors.New("worker session ended")

// session runs one registration of the worker: a session transaction, the workers row, and
// the poll/status loop until ctx ends or the session does.
func (w *Worker) session(ctx context.Context, addr string) error {
	session, err := w.store.StartSession(ctx, "yt-flow: worker "+w.id, w.cfg.SessionTimeout)
	if err != nil {
		return fmt.Errorf("job: worker %s: %w", w.id, err)
	}
	defer w.closeSession(session)
	start := nowMicros()
	reg := ytstore.Worker{WorkerID: w.id, Address: addr, SessionTx: session.ID(), StartTime: start, HeartbeatTime: start}
	if err := w.store.PutWorker(ctx, reg); err != nil {
		return fmt.Errorf("job: worker %s: register: %w", w.id, err)
	}
	if !w.registered {
		w.registered = true
		w.mu.Lock()
		w.addr = addr
		w.mu.Unlock()
		close(w.ready)
	}
	w.checkEventWatermarks(ctx)
	w.log.Info("worker registered", log.String("address", addr), log.String("session", session.ID()))
	// Whether an epoch's token can be its transaction's start timestamp is found out now,
	// while the worker waits for jobs, not in the first epoch (ytstore.CheckTxTimestamps).
	go func() { _, _ = w.store.CheckTxTimestamps(ctx) }()

	poll := time.NewTimer(w.cfg.PollPeriod)
	defer poll.Stop()
	lastStatus := time.Time{}
	reported := ""
	for {
		// While a job applies draining (the pipeline completes or stops) the controller waits
		// for its statuses, and once a source job completed the layout is about to say
		// draining: poll and report twenty times as often (every 10 ms by default).
		next := w.cfg.PollPeriod
		if w.inTransition() {
			next = max(w.cfg.PollPeriod/20, 10*time.Millisecond)
		}
		poll.Reset(next)
		select {
		case <-ctx.Done():
			return nil
		case <-session.Done():
			if ctx.Err() != nil {
				return nil // cancelling ctx ends the session too
			}
			return fmt.Errorf("job: worker %s: session %s: %w", w.id, session.ID(), errSessionEnded)
		case <-poll.C:
		case <-w.marksChanged:
		}
		if err := w.poll(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			w.log.Warn("layout poll failed", log.Error(err))
			continue
		}
		periodic := time.Since(lastStatus) >= w.cfg.StatusPeriod
		if periodic {
			lastStatus = time.Now()
			reg.HeartbeatTime = nowMicros()
			if err := w.store.PutWorker(ctx, reg); err != nil && ctx.Err() == nil {
				w.log.Warn("heartbeat failed", log.Error(err))
			}
			if a, err := w.store.Attributes(ctx); err == nil {
				w.systemWatermark.Store(a.SystemWatermark)
				if a.EventWatermark != nil {
					w.eventWatermark.Store(*a.EventWatermark)
				}
				w.checkEventWatermarks(ctx) // if the first check could not read
				w.targetState.Store(&a.TargetState)
			}
		}
		if periodic || w.waitingUpstream() {
			// A completing job waits for its upstream to drain (two newer statuses of every
			// upstream job, which report at every poll once drained): while one waits, look
			// at every poll, not once per StatusPeriod, or each stage of a chain would add
			// two status periods to the completion.
			w.checkUpstreamDrained(ctx)
		}
		// The marks are read before the statuses are written: a job that completes while
		// they are written gets its completed status at the next poll (its wakeStatus), not
		// a status period later, as when the marks were read after the writes.
		if marks, drained := w.statusMarks(); periodic {
			w.reportStatuses(ctx)
			reported = marks
		} else if marks != reported || drained {
			// A job completed, applied draining or drained since the last report, or a job
			// is drained (the controller waits for a second, newer status of it): report
			// now, so completion and draining wait for fewer controller cycles.
			w.reportStatuses(ctx)
			reported = marks
		}
	}
}

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

// closeStore stops the client, waiting at most a few seconds: the SDK waits for its
// background transaction aborts, which keep retrying while YTsaurus is unreachable.
func (w *Worker) closeStore(st *ytstore.Store) {
	done := make(chan struct{})
	go func() { defer close(done); st.Close() }()
	t := time.NewTimer(3 * time.Second)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		w.log.Warn("client stop did not finish; leaving it to the background")
	}
}

// closeSession aborts the session, waiting at most a few seconds: when YTsaurus is
// unreachable the abort keeps retrying in the background and the session expires by its
// timeout anyway.
func (w *Worker) closeSession(ss *ytstore.Session) {
	done := make(chan struct{})
	go func() { defer close(done); _ = ss.Close() }()
	t := time.NewTimer(3 * time.Second)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		w.log.Warn("session abort did not finish; the session ends by its timeout", log.String("session", ss.ID()))
	}
}

// poll reads the layout, refreshes routing, and starts and stops this worker's jobs.
func (w *Worker) poll(ctx context.Context) error {
	jobs, err := w.store.Jobs(ctx)
	if err != nil {
		return err
	}
	workers, err := w.store.Workers(ctx)
	if err != nil {
		return err
	}
	w.layout.update(jobs, workers)
	w.mu.Lock()
	w.jobs = jobs
	w.mu.Unlock()
	mine := map[string]ytstore.Job{}
	for _, j := range jobs {
		if j.WorkerID == w.id {
			mine[j.JobID] = j
		}
	}
	// Invariant: a job whose row disappeared (or whose lease changed) stops at once
	// (TestWorkerStopsRemovedJob).
	w.mu.Lock()
	for id, h := range w.runners {
		if j, ok := mine[id]; ok && j.LeaseID == h.lease {
			h.r.setFlags(j)
		}
		if j, ok := mine[id]; !ok || j.LeaseID != h.lease {
			h.cancel()
			delete(w.runners, id)
			w.stopping = append(w.stopping, h)
			w.retired[id] = h.r.jobStats()
		}
	}
	var start []ytstore.Job
	for id, j := range mine {
		if _, ok := w.runners[id]; !ok {
			start = append(start, j)
		}
	}
	w.mu.Unlock()
	if len(start) == 0 {
		return nil
	}
	p, dyn, keyer, err := w.pipeline(ctx)
	if err != nil {
		return err
	}
	for _, j := range start {
		w.startJob(ctx, j, p, dyn, keyer)
	}
	return nil
}

// pipeline reads and parses the pipeline's specs.
func (w *Worker) pipeline(ctx context.Context) (*spec.Pipeline, *spec.DynamicPipeline, epoch.Keyer, error) {
	attrs, err := w.store.Attributes(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	w.targetState.Store(&attrs.TargetState)
	if len(attrs.Spec) == 0 {
		return nil, nil, nil, fmt.Errorf("pipeline %s has no @spec", w.cfg.Path)
	}
	p, err := spec.ParsePipeline(attrs.Spec)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("pipeline %s: @spec: %w", w.cfg.Path, err)
	}
	var dyn *spec.DynamicPipeline
	if len(attrs.DynamicSpec) > 0 {
		if dyn, err = spec.ParseDynamic(attrs.DynamicSpec); err != nil {
			return nil, nil, nil, fmt.Errorf("pipeline %s: @dynamic_spec: %w", w.cfg.Path, err)
		}
	}
	keyer, err := newKeyer(p)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("pipeline %s: %w", w.cfg.Path, err)
	}
	return p, dyn, keyer, nil
}

func (w *Worker) startJob(ctx context.Context, j ytstore.Job, p *spec.Pipeline, dyn *spec.DynamicPipeline, keyer epoch.Keyer) {
	h := &runnerHandle{lease: j.LeaseID, done: make(chan struct{})}
	r, err := w.newRunner(j, p, dyn, keyer)
	if err != nil {
		// A job that cannot start is reported failed; the controller replaces or surfaces it.
		w.log.Error("job cannot start", log.String("job", j.JobID), log.Error(err))
		r = &runner{w: w, job: j, inbox: newInbox(1), outbox: newOutbox(), comp: &spec.Computation{ID: j.ComputationID}}
		h.r, h.err, h.cancel = r, err, func() {}
		close(h.done)
		w.mu.Lock()
		w.runners[j.JobID] = h
		w.mu.Unlock()
		_ = w.store.PutJobStatus(ctx, r.status(ytstore.JobFailed, err.Error()), j.LeaseID)
		return
	}
	r.setFlags(j)
	jctx, cancel := context.WithCancel(ctx)
	h.r, h.cancel = r, cancel
	w.mu.Lock()
	w.runners[j.JobID] = h
	w.mu.Unlock()
	go func() {
		defer close(h.done)
		h.err = r.run(jctx)
		if h.err != nil {
			r.log.Error("job stopped", log.Error(h.err))
			if !errors.Is(h.err, ErrZombie) {
				// A zombie writes nothing more; any other failure is reported so that the
				// controller replaces the job.
				sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				_ = w.store.PutJobStatus(sctx, r.status(ytstore.JobFailed, h.err.Error()), j.LeaseID)
				cancel()
			}
		}
	}()
}

// reportStatuses writes job_status rows of running jobs, each conditional on its lease.
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
	sts, err := w.store.JobStatuses(ctx)
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
		err := w.store.PutJobStatus(ctx, h.r.status(state, errText), h.lease)
		if err != nil && !errors.Is(err, ytstore.ErrLeaseLost) && ctx.Err() == nil {
			w.log.Warn("job status write failed", log.String("job", h.r.job.JobID), log.Error(err))
		}
	}
}

// stopAll cancels every runner and waits for them; the next poll starts the jobs still
// assigned to the worker afresh.
func (w *Worker) stopAll() (stopped []*runnerHandle) {
	w.mu.Lock()
	hs := append([]*runnerHandle(nil), w.stopping...)
	for id, h := range w.runners {
		hs = append(hs, h)
		st := h.r.jobStats()
		if old, ok := w.retired[id]; ok {
			st.Epochs += old.Epochs
			st.Duplicates += old.Duplicates
			st.BestEffortDropped += old.BestEffortDropped
		}
		w.retired[id] = st
	}
	w.runners = map[string]*runnerHandle{}
	w.stopping = nil
	w.mu.Unlock()
	for _, h := range hs {
		h.cancel()
	}
	for _, h := range hs {
		<-h.done
	}
	return hs
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
		if h.r == nil || h.r.store == nil {
			continue
		}
		wg.Go(func() {
			err := w.store.PutJobStatus(sctx, h.r.status(ytstore.JobRunning, ""), h.lease)
			if err != nil && ctx.Err() == nil {
				w.log.Info("final status of a stopped job refused", log.String("job", h.r.job.JobID), log.String("lease", h.lease), log.Error(err))
			}
		})
	}
	wg.Wait()
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
	ok, err := w.store.EventWatermarks(ctx)
	switch {
	case err != nil:
		w.log.Warn("cannot tell whether the pipeline has event watermarks; event_time timers wait", log.Error(err))
	case ok:
		w.eventTime.Store(eventTimeWatermark)
	default:
		w.eventTime.Store(eventTimeWallClock)
	}
}
