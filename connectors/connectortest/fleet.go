package connectortest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ytflow/yt-flow/controller"
	"github.com/ytflow/yt-flow/job"
)

// fleet runs a controller and two workers of one pipeline in this process and replaces a
// worker that a fault kills with a fresh one (a new id, as a restarted process would have).
type fleet struct {
	t           *testing.T
	proxy, path string

	mu      sync.Mutex
	workers map[string]context.CancelFunc // running workers by id
	next    int
	kills   int
	errs    []error
	wg      sync.WaitGroup
	ctx     context.Context
	cancel  context.CancelFunc
}

// sessionTimeout is the workers' session timeout: short, so a killed worker's jobs move soon.
const sessionTimeout = 2 * time.Second

func startFleet(t *testing.T, proxy, path string) *fleet {
	ctx, cancel := context.WithCancel(context.Background())
	f := &fleet{t: t, proxy: proxy, path: path, workers: map[string]context.CancelFunc{}, ctx: ctx, cancel: cancel}
	t.Cleanup(f.stop)
	f.startWorker()
	f.startWorker()
	f.wg.Go(func() {
		err := controller.Run(ctx, controller.Config{Proxy: proxy, Path: path})
		f.fail(err)
	})
	return f
}

func (f *fleet) fail(err error) {
	if err != nil && f.ctx.Err() == nil {
		f.mu.Lock()
		f.errs = append(f.errs, err)
		f.mu.Unlock()
	}
}

// startWorker starts a worker and waits until it registered.
func (f *fleet) startWorker() {
	f.mu.Lock()
	id := fmt.Sprintf("conformance-%d", f.next)
	f.next++
	ctx, cancel := context.WithCancel(f.ctx)
	f.workers[id] = cancel
	f.mu.Unlock()
	w := job.NewWorker(job.Config{Proxy: f.proxy, Path: f.path, WorkerID: id, SessionTimeout: sessionTimeout,
		LeaseCheckPeriod: time.Second, InProcessPeers: true})
	stopped := make(chan struct{})
	f.wg.Go(func() {
		defer close(stopped)
		if err := w.Run(ctx); err != nil && ctx.Err() == nil {
			f.fail(fmt.Errorf("worker %s: %w", id, err))
		}
	})
	select {
	case <-w.Ready():
	case <-stopped:
	case <-time.After(time.Minute):
	}
}

// kill stops worker id at once — its context is cancelled wherever its jobs are, mid-epoch
// and mid-commit included — and starts a replacement. It returns at once; the replacement starts in the
// background. Killing a worker already killed does nothing.
func (f *fleet) kill(id string) {
	f.mu.Lock()
	cancel, ok := f.workers[id]
	if ok {
		delete(f.workers, id)
		f.kills++
	}
	f.mu.Unlock()
	if !ok || f.ctx.Err() != nil {
		return
	}
	cancel()
	f.wg.Go(f.startWorker)
}

// killed is the number of workers killed so far.
func (f *fleet) killed() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.kills
}

func (f *fleet) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return errors.Join(f.errs...)
}

func (f *fleet) stop() {
	f.cancel()
	f.wg.Wait()
}
