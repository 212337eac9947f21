package app

import (
	"context"
	"sync"
	"time"

	"go.ytsaurus.tech/library/go/core/log"

	"github.com/ytflow/yt-flow/ytstore"
)

// untilCompleted returns a context cancelled once the pipeline at path is completed (its
// state read every period), for the controllers and workers that `yt-flow deploy` runs as
// jobs of a vanilla operation (--exit-when-completed): they exit 0 then, so that the
// operation completes with the pipeline. stop ends the watch and waits for it; completed
// tells whether the pipeline was seen completed.
func untilCompleted(ctx context.Context, cfg ytstore.Config, period time.Duration, lg log.Structured) (run context.Context, stop func(), completed func() bool, err error) {
	st, err := ytstore.Open(ctx, cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	run, cancel := context.WithCancel(ctx)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen bool
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-run.Done():
				return
			case <-tick.C:
			}
			a, err := st.Attributes(run)
			if err == nil && a.PipelineState == ytstore.StateCompleted {
				lg.Info("the pipeline is completed: exiting", log.String("pipeline", cfg.Path))
				mu.Lock()
				seen = true
				mu.Unlock()
				cancel()
				return
			}
		}
	}()
	stop = func() {
		cancel()
		wg.Wait()
		st.Close()
	}
	completed = func() bool {
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
	return run, stop, completed, nil
}
