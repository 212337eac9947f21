package app

import (
	"context"
	"fmt"
	"time"

	"github.com/ytflow/yt-flow/ytstore"
)

// setTarget sets the target state of a pipeline and, with wait, polls until
// the pipeline state is one of done (or the deadline).
func setTarget(ctx context.Context, env *environ, name, target string, args []string, done ...string) int {
	var pf pipelineFlags
	fs := newPipelineFlagSet(name, env, &pf)
	wait := fs.Bool("wait", false, "wait until the pipeline reaches the state")
	timeout := fs.Duration("timeout", 5*time.Minute, "how long --wait waits")
	if code := parsePipelineFlags(fs, &pf, args, true); code >= 0 {
		return code
	}
	st, err := openPipelineStore(ctx, env, pf.proxy, pf.path)
	if err != nil {
		return failf(env.stderr, "%s: %v", name, err)
	}
	defer st.Close()
	attrs, err := st.Attributes(ctx)
	if err != nil {
		return failf(env.stderr, "%s: %v", name, explain(err, pf.path))
	}
	if attrs.PipelineState == ytstore.StateCompleted {
		return failf(env.stderr, "%s: pipeline %s is completed (terminal); nothing to %s", name, pf.path, name)
	}
	if err := st.SetTargetState(ctx, target); err != nil {
		return failf(env.stderr, "%s: %v", name, err)
	}
	fmt.Fprintf(env.stdout, "pipeline %s: target state %s\n", pf.path, target)
	if !*wait {
		return 0
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		attrs, err := st.Attributes(ctx)
		if err == nil {
			for _, s := range done {
				if attrs.PipelineState == s {
					fmt.Fprintf(env.stdout, "pipeline %s: %s\n", pf.path, s)
					return 0
				}
			}
		}
		select {
		case <-ctx.Done():
			state := "unknown"
			if attrs != nil {
				state = attrs.PipelineState
			}
			return failf(env.stderr, "%s: timed out after %v waiting for pipeline %s to be %v (state %s; is a controller running?)", name, *timeout, pf.path, done, state)
		case <-tick.C:
		}
	}
}

func init() {
	register(&command{
		name:    "stop",
		summary: "drain and stop a pipeline (target state stopped)",
		run: func(ctx context.Context, env *environ, args []string) int {
			return setTarget(ctx, env, "stop", ytstore.TargetStopped, args, ytstore.StateStopped)
		},
	})
}
