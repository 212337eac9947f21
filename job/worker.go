// The worker: its struct, NewWorker and accessors, and its life (Run): the transport
// server, and one registration (session) after another with the poll/status loop.

package job

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.ytsaurus.tech/library/go/core/log"
	"go.ytsaurus.tech/library/go/core/log/nop"
	"go.ytsaurus.tech/yt/go/guid"

	"github.com/ytflow/yt-flow/ytstore"
)

// Worker runs the jobs the controller assigns to it. Create it with NewWorker and call Run
// once.
type Worker struct {
	cfg Config
	id  string
	log log.Structured
	// store is the pipeline's store, opened by Run: the worker hands it to its jobs' runners and
	// connectors, registers through membership and reads the layout and writes statuses
	// through coord.
	store      *ytstore.Store
	membership membership
	coord      coordination
	layout     layout
	// auth holds the pipeline's transport secret and counts refused requests (auth.go).
	auth transportAuth
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
	// eventWatermarks are the pipeline's @event_watermarks as last read: the EventWatermark
	// of every stream and alignment group (nil before the first, or when a controller of an
	// older version publishes none: then event_time timers and watermark_alignment follow
	// eventWatermark).
	eventWatermarks atomic.Pointer[ytstore.EventWatermarks]
	// watermarksAwaited is set when the spec its jobs started with has something that waits
	// for a watermark (spec.Pipeline.AwaitsWatermarks): then the worker reports its jobs'
	// statuses and reads the published watermarks at every layout poll, not every
	// StatusPeriod (the watermark's fast path, fastWatermarks).
	watermarksAwaited atomic.Bool
	// throttlerGrants are the pipeline's @throttler_grants as last read (nil before the
	// first); throttling is set once the pipeline's job_status is known to carry throttle
	// requests (throttle.go).
	throttlerGrants atomic.Pointer[ytstore.ThrottlerGrants]
	throttling      atomic.Bool
	// throttlingAll is set once job_status is known to carry throttle_requests (input bytes
	// and AcquireQuota); grantsCh is closed and replaced at each read of the grants
	// (grantsChanged).
	throttlingAll atomic.Bool
	// quotaWaiters counts the AcquireQuota calls waiting for a grant: while there are any,
	// statuses are written and the grants read at every layout poll.
	quotaWaiters atomic.Int64
	grantsMu     sync.Mutex
	grantsCh     chan struct{}
	// targetState is the pipeline's @target_state as last read ("" before the first read);
	// a draining job of a pipeline whose target is working is completing.
	targetState atomic.Pointer[string]
	// targetReadAt is when the read that gave targetState started (ns).
	targetReadAt atomic.Int64
	// dynSeen is the last @dynamic_spec parsed, with its version (parseDynamic); dynBad the
	// version of one that did not parse (logged once).
	dynSeen atomic.Pointer[dynamicOffer]
	dynBad  atomic.Int64
	// jobs is the layout as last polled (guarded by mu).
	jobs []ytstore.Job
}

// membership is what a worker needs of the store to register (Worker.session).
//
//   - StartSession starts the worker's session transaction, pinged in the background until it
//     is closed; Session.Done is closed when it ends under the worker. Cancelling ctx aborts
//     it.
//   - PutWorker inserts or replaces the worker's row (address, session, heartbeat),
//     conditional on its session: ytstore.ErrLeaseLost once the session is dead.
//   - CheckTxTimestamps finds out, once, whether tablet transaction ids carry their start
//     timestamps (epoch tokens then need no generate_timestamp); false while not known.
type membership interface {
	StartSession(ctx context.Context, title string, timeout time.Duration) (*ytstore.Session, error)
	PutWorker(ctx context.Context, w ytstore.Worker) error
	CheckTxTimestamps(ctx context.Context) (bool, error)
}

// coordination is what a worker reads and writes of the pipeline's coordination state.
//
//   - Attributes reads the pipeline's attributes (specs, target state, watermarks);
//     ytstore.ErrNotFound when the pipeline does not exist.
//   - Jobs reads the layout, Workers the registered workers, JobStatuses every job's status.
//   - PutJobStatus writes a job's status row, conditional on lease when it is not empty:
//     ytstore.ErrLeaseLost when the lease is dead, and nothing is written.
//   - EventWatermarks reports whether the pipeline has event watermarks (one created by an
//     older version has not); a failed read is an error, asked again at the next call.
type coordination interface {
	Attributes(ctx context.Context) (*ytstore.Attributes, error)
	Jobs(ctx context.Context) ([]ytstore.Job, error)
	Workers(ctx context.Context) ([]ytstore.Worker, error)
	JobStatuses(ctx context.Context) ([]ytstore.JobStatus, error)
	PutJobStatus(ctx context.Context, st ytstore.JobStatus, lease string) error
	EventWatermarks(ctx context.Context) (bool, error)
	Watermarks(ctx context.Context) (*ytstore.Attributes, error)
}

// runnerHandle tracks one runner goroutine.
type runnerHandle struct {
	r      *runner
	lease  string
	cancel context.CancelFunc
	done   chan struct{}
	err    error // set before done is closed
	// retired is set (under Worker.mu) when the handle leaves Worker.runners, folded once
	// its final counters are in Worker.retired (foldLocked); until then Stats reads them
	// from the runner, which may still count (a commit fenced while it winds down).
	retired, folded bool
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
	// The same job may have run before on this worker (it re-registered, or the job came
	// back): counters accumulate over its runs.
	for _, h := range w.stopping {
		if !h.folded {
			id := h.r.job.JobID
			out[id] = h.r.jobStats().plus(out[id])
		}
	}
	for id, h := range w.runners {
		st := h.r.jobStats().plus(out[id])
		select {
		case <-h.done:
		default:
			st.Running = true
		}
		out[id] = st
	}
	return out
}

// retireLocked takes h, the runner of job id, out of the runners (w.mu held): it joins the
// stopping runners, whose counters Stats reads until foldLocked moves them to w.retired.
func (w *Worker) retireLocked(id string, h *runnerHandle) {
	delete(w.runners, id)
	h.retired = true
	w.stopping = append(w.stopping, h)
	select {
	case <-h.done:
		w.foldLocked(h)
	default:
	}
}

// foldLocked adds the counters of a retired runner that has stopped to w.retired, once
// (w.mu held).
//
// Invariant: a job's counters never decrease while the worker runs: those of its earlier
// runs stay in w.retired (TestWorkerStatsAccumulate).
func (w *Worker) foldLocked(h *runnerHandle) {
	if h.folded {
		return
	}
	h.folded = true
	id := h.r.job.JobID
	w.retired[id] = h.r.jobStats().plus(w.retired[id])
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
	w.store, w.membership, w.coord = store, store, store

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
	w.log.Info("transport endpoint listening", log.String("address", addr), log.String("reachable", listenNote(addr)))
	if w.cfg.AdvertiseHost != "" {
		addr = advertised(addr, w.cfg.AdvertiseHost)
		w.log.Info("transport endpoint published", log.String("address", addr))
	}
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
	session, err := w.membership.StartSession(ctx, "yt-flow: worker "+w.id, w.cfg.SessionTimeout)
	if err != nil {
		return fmt.Errorf("job: worker %s: %w", w.id, err)
	}
	defer w.closeSession(session)
	// The secret before the address is published: pushes that arrive once it is are checked
	// against it, and this worker's own pushes carry it.
	if err := w.readSecret(ctx); err != nil {
		return err
	}
	start := nowMicros()
	reg := ytstore.Worker{WorkerID: w.id, Address: addr, SessionTx: session.ID(), StartTime: start, HeartbeatTime: start, FlowCoreVersion: w.cfg.FlowCoreVersion}
	if err := w.membership.PutWorker(ctx, reg); err != nil {
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
	w.log.Info("worker registered", log.String("address", addr), log.String("session", session.ID()), log.String("flow_core_version", w.cfg.FlowCoreVersion))
	// Whether an epoch's token can be its transaction's start timestamp is found out now,
	// while the worker waits for jobs, not in the first epoch (ytstore.CheckTxTimestamps).
	go func() { _, _ = w.membership.CheckTxTimestamps(ctx) }()

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
		periodic := time.Since(lastStatus) >= w.cfg.StatusPeriod || w.quotaWaiters.Load() > 0
		if periodic {
			lastStatus = time.Now()
			reg.HeartbeatTime = nowMicros()
			if err := w.membership.PutWorker(ctx, reg); err != nil && ctx.Err() == nil {
				w.log.Warn("heartbeat failed", log.Error(err))
			}
			readAt := time.Now().UnixNano()
			if a, err := w.coord.Attributes(ctx); err == nil {
				w.storeWatermarks(a)
				if a.ThrottlerGrants != nil {
					w.throttlerGrants.Store(a.ThrottlerGrants)
					w.grantsRead()
				}
				if !w.throttling.Load() && w.store != nil {
					if ok, err := w.store.Throttling(ctx); err == nil && ok {
						w.throttling.Store(true)
					}
					if ok, err := w.store.ThrottlingAll(ctx); err == nil && ok {
						w.throttlingAll.Store(true)
					}
				}
				w.checkEventWatermarks(ctx) // if the first check could not read
				w.setTargetState(a.TargetState, readAt)
				w.offerDynamic(a)
			}
		}
		if periodic || w.auth.stale.Load() {
			// A restart rotates the secret (yt-flow start): read it again.
			if err := w.readSecret(ctx); err != nil && ctx.Err() == nil {
				w.log.Warn("cannot read the transport secret; keeping the one read before", log.Error(err))
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
		fast := w.watermarksAwaited.Load()
		if fast && !periodic {
			w.readWatermarks(ctx)
		}
		if marks, drained := w.statusMarks(); periodic || fast {
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

// grantsChanged returns a channel closed at the next read of @throttler_grants.
func (w *Worker) grantsChanged() <-chan struct{} {
	w.grantsMu.Lock()
	defer w.grantsMu.Unlock()
	if w.grantsCh == nil {
		w.grantsCh = make(chan struct{})
	}
	return w.grantsCh
}

// grantsRead wakes the AcquireQuota calls waiting for a grant.
func (w *Worker) grantsRead() {
	w.grantsMu.Lock()
	defer w.grantsMu.Unlock()
	if w.grantsCh != nil {
		close(w.grantsCh)
		w.grantsCh = nil
	}
}

// setTargetState records the @target_state a read started at readAt (ns) gave.
func (w *Worker) setTargetState(t string, readAt int64) {
	w.targetState.Store(&t)
	if readAt > w.targetReadAt.Load() {
		w.targetReadAt.Store(readAt)
	}
}
