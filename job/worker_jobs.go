// Starting and stopping a worker's jobs as the layout it polls says (Worker.poll).

package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.ytsaurus.tech/library/go/core/log"

	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytstore"
)

// poll reads the layout, refreshes routing, and starts and stops this worker's jobs.
func (w *Worker) poll(ctx context.Context) error {
	jobs, err := w.coord.Jobs(ctx)
	if err != nil {
		return err
	}
	workers, err := w.coord.Workers(ctx)
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
			w.retireLocked(id, h)
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
	readAt := time.Now().UnixNano()
	attrs, err := w.coord.Attributes(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	w.setTargetState(attrs.TargetState, readAt)
	if len(attrs.Spec) == 0 {
		return nil, nil, nil, fmt.Errorf("pipeline %s has no @spec", w.cfg.Path)
	}
	p, err := spec.ParsePipeline(attrs.Spec)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("pipeline %s: @spec: %w", w.cfg.Path, err)
	}
	dyn, err := w.parseDynamic(attrs)
	if err != nil {
		return nil, nil, nil, err
	}
	keyer, err := newKeyer(p)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("pipeline %s: %w", w.cfg.Path, err)
	}
	w.watermarksAwaited.Store(p.AwaitsWatermarks())
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
		_ = w.coord.PutJobStatus(ctx, r.status(ytstore.JobFailed, err.Error()), j.LeaseID)
		return
	}
	r.setFlags(j)
	if d := w.dynSeen.Load(); d != nil {
		r.dynVersion.Store(d.version)
		if d.spec != dyn {
			r.offerDynamic(d.spec, d.version) // a newer one than the job was built with
		}
	}
	jctx, cancel := context.WithCancel(ctx)
	h.r, h.cancel = r, cancel
	w.mu.Lock()
	w.runners[j.JobID] = h
	w.mu.Unlock()
	go func() {
		defer close(h.done)
		defer func() {
			w.mu.Lock()
			if h.retired {
				w.foldLocked(h)
			}
			w.mu.Unlock()
		}()
		h.err = r.run(jctx)
		if h.err != nil {
			r.log.Error("job stopped", log.Error(h.err))
			if !errors.Is(h.err, ErrZombie) {
				// A zombie writes nothing more; any other failure is reported so that the
				// controller replaces the job.
				sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				_ = w.coord.PutJobStatus(sctx, r.status(ytstore.JobFailed, h.err.Error()), j.LeaseID)
				cancel()
			}
		}
	}()
}

// stopAll cancels every runner and waits for them; the next poll starts the jobs still
// assigned to the worker afresh.
func (w *Worker) stopAll() (stopped []*runnerHandle) {
	w.mu.Lock()
	for id, h := range w.runners {
		w.retireLocked(id, h)
	}
	hs := append([]*runnerHandle(nil), w.stopping...)
	w.mu.Unlock()
	for _, h := range hs {
		h.cancel()
	}
	for _, h := range hs {
		<-h.done
	}
	w.mu.Lock()
	for _, h := range hs {
		w.foldLocked(h)
	}
	w.stopping = nil
	w.mu.Unlock()
	return hs
}

// parseDynamic parses the pipeline's @dynamic_spec and remembers it with its version
// (w.dynSeen) for the jobs started next.
func (w *Worker) parseDynamic(attrs *ytstore.Attributes) (*spec.DynamicPipeline, error) {
	if d := w.dynSeen.Load(); d != nil && d.version == attrs.DynamicSpecVersion {
		return d.spec, nil
	}
	var dyn *spec.DynamicPipeline
	if len(attrs.DynamicSpec) > 0 {
		var err error
		if dyn, err = spec.ParseDynamic(attrs.DynamicSpec); err != nil {
			return nil, fmt.Errorf("pipeline %s: @dynamic_spec (version %d): %w", w.cfg.Path, attrs.DynamicSpecVersion, err)
		}
	}
	w.dynSeen.Store(&dynamicOffer{spec: dyn, version: attrs.DynamicSpecVersion})
	return dyn, nil
}

// offerDynamic hands a changed @dynamic_spec to the running jobs, which apply it between two
// epochs (runner.applyPendingDynamic). A dynamic spec that does not parse (yt-flow
// set-pipeline-dynamic-spec validates it first) is logged and left unapplied.
func (w *Worker) offerDynamic(attrs *ytstore.Attributes) {
	if d := w.dynSeen.Load(); d != nil && d.version == attrs.DynamicSpecVersion {
		return
	}
	if w.dynBad.Load() == attrs.DynamicSpecVersion {
		return
	}
	dyn, err := w.parseDynamic(attrs)
	if err != nil {
		w.dynBad.Store(attrs.DynamicSpecVersion)
		w.log.Error("cannot apply the new dynamic spec; the jobs keep the one they run with", log.Error(err))
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, h := range w.runners {
		if h.r != nil {
			h.r.offerDynamic(dyn, attrs.DynamicSpecVersion)
		}
	}
}
