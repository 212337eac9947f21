package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/ytflow/yt-flow/status"
	"github.com/ytflow/yt-flow/ytstore"
)

// setTarget is the setup of a command that sets the target state of a pipeline and, with
// wait, polls until the pipeline state is one of done (or the deadline).
func setTarget(name, target string, done ...string) setupFunc {
	return func(fs *flag.FlagSet, env *environ) runFunc {
		var pf pipelineFlags
		pf.define(fs)
		wait := fs.Bool("wait", false, "wait until the pipeline reaches the state")
		timeout := fs.Duration("timeout", 5*time.Minute, "how long --wait waits")
		return func(ctx context.Context, s *settings) int {
			if code := pf.check(fs, true); code >= 0 {
				return code
			}
			return setTargetState(ctx, env, s, name, target, pf, *wait, *timeout, done)
		}
	}
}

func setTargetState(ctx context.Context, env *environ, s *settings, name, target string, pf pipelineFlags, wait bool, timeout time.Duration, done []string) int {
	st, err := openPipelineStore(ctx, s, pf.proxy, pf.path)
	if err != nil {
		return failf(env.stderr, "%s: %v", name, err)
	}
	defer st.Close()
	if _, err := status.SetTarget(ctx, st, target); err != nil {
		return failf(env.stderr, "%s: %v", name, explain(err, pf.path))
	}
	fmt.Fprintf(env.stdout, "pipeline %s: target state %s\n", pf.path, target)
	if !wait {
		return 0
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	last := "unknown" // the last state read: the read that hits the deadline fails
	for {
		attrs, err := st.Attributes(ctx)
		if err == nil {
			last = orDash(attrs.PipelineState)
			for _, s := range done {
				if attrs.PipelineState == s {
					fmt.Fprintf(env.stdout, "pipeline %s: %s\n", pf.path, s)
					return 0
				}
			}
		}
		select {
		case <-ctx.Done():
			return failf(env.stderr, "%s: timed out after %v waiting for pipeline %s to be %v (state %s; is a controller running?)", name, timeout, pf.path, done, last)
		case <-tick.C:
		}
	}
}

func init() {
	register(&command{
		name:     "stop",
		examples: []string{"yt-flow stop --proxy localhost:8000 --path //home/me/pipe --wait --timeout 1m"},
		summary:  "drain and stop a pipeline (target state stopped)",
		setup:    setupStop,
	})
}

// setupStop is setTarget for stop, with --abort-operation: once the pipeline is stopped,
// the vanilla operation it is deployed as (yt-flow deploy) is aborted.
func setupStop(fs *flag.FlagSet, env *environ) runFunc {
	var pf pipelineFlags
	pf.define(fs)
	wait := fs.Bool("wait", false, "wait until the pipeline reaches the state")
	timeout := fs.Duration("timeout", 5*time.Minute, "how long --wait waits")
	abort := fs.Bool("abort-operation", false, "then abort the vanilla operation the pipeline is deployed as (implies --wait)")
	return func(ctx context.Context, s *settings) int {
		if code := pf.check(fs, true); code >= 0 {
			return code
		}
		code := setTargetState(ctx, env, s, "stop", ytstore.TargetStopped, pf, *wait || *abort, *timeout, []string{ytstore.StateStopped})
		if code != 0 || !*abort {
			return code
		}
		return abortDeployment(ctx, env, s, pf)
	}
}

// abortDeployment aborts the operation the pipeline is deployed as, if it runs.
func abortDeployment(ctx context.Context, env *environ, s *settings, pf pipelineFlags) int {
	st, err := openPipelineStore(ctx, s, pf.proxy, pf.path)
	if err != nil {
		return failf(env.stderr, "stop: %v", err)
	}
	defer st.Close()
	d, ok, err := st.Deployment(ctx)
	if err != nil {
		return failf(env.stderr, "stop: %v", err)
	}
	if !ok {
		fmt.Fprintf(env.stdout, "pipeline %s: not deployed as an operation\n", pf.path)
		return 0
	}
	op, err := st.Operation(ctx, d.OperationID)
	if errors.Is(err, ytstore.ErrNoSuchOperation) || err == nil && op.Finished {
		fmt.Fprintf(env.stdout, "operation %s: already ended\n", d.OperationID)
		return 0
	}
	if err != nil {
		return failf(env.stderr, "stop: %v", err)
	}
	if err := st.AbortOperation(ctx, op.ID, "yt-flow stop --abort-operation"); err != nil {
		return failf(env.stderr, "stop: %v", err)
	}
	fmt.Fprintf(env.stdout, "operation %s: aborted\n", op.ID)
	return 0
}
