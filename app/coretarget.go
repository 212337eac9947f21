package app

// get-flow-core-target and set-flow-core-target: Flow's FlowExecute commands of the same
// names (`yt flow execute PATH get-flow-core-target`, `… set-flow-core-target '{…}'`).

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"

	sdkyson "go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/ytstore"
)

func init() {
	register(&command{
		name:    "get-flow-core-target",
		summary: "print a pipeline's flow core target: the binary version its controller and workers must run",
		setup: func(fs *flag.FlagSet, env *environ) runFunc {
			var c flowCmd
			c.define(fs, "get-flow-core-target", "Prints {flow_core_target; version; leader_flow_core_version}: the version (yt-flow version) the\npipeline's processes must run (\"\": any), how often it changed, and the leading controller's version.",
				"yt-flow get-flow-core-target --proxy localhost:8000 //home/me/pipe")
			return func(ctx context.Context, s *settings) int {
				if code := c.check(fs, s); code >= 0 {
					return code
				}
				return c.view(ctx, env, s, func(_ context.Context, _ *ytstore.Store, a *ytstore.Attributes) (any, error) {
					return map[string]any{"flow_core_target": a.FlowCoreTarget, "version": a.FlowCoreTargetVersion,
						"leader_flow_core_version": a.LeaderFlowCoreVersion}, nil
				})
			}
		},
	})
	register(&command{
		name:    "set-flow-core-target",
		summary: "set a pipeline's flow core target (\"\" disables the check); the pipeline must be stopped, or paused with allow_update_on_pause",
		setup: func(fs *flag.FlagSet, env *environ) runFunc {
			var c flowCmd
			c.define(fs, "set-flow-core-target", "Sets the version (yt-flow version) the pipeline's controller and workers must run: workers of\nanother version get no jobs, a controller of another version pauses the pipeline. \"\" disables the check.\nThe pipeline must be stopped (or never started), or paused with allow_update_on_pause. The argument\nafter the path is Flow's document; --flow-core-target and --allow-update-on-pause say the same.",
				`yt-flow set-flow-core-target --proxy localhost:8000 //home/me/pipe '{"flow_core_target":"4df5938…","allow_update_on_pause":true}'`,
				"yt-flow set-flow-core-target --proxy localhost:8000 --flow-core-target '' //home/me/pipe")
			target := fs.String("flow-core-target", "", "the new target (required unless the argument document gives it)")
			onPause := fs.Bool("allow-update-on-pause", false, "allow the change while the pipeline is paused")
			return func(ctx context.Context, s *settings) int {
				var doc string
				if args := fs.Args(); len(args) > 0 && strings.HasPrefix(strings.TrimSpace(args[len(args)-1]), "{") {
					doc = args[len(args)-1]
					if err := fs.Parse(args[:len(args)-1]); err != nil {
						return 2
					}
				}
				if code := c.check(fs, s); code >= 0 {
					return code
				}
				targetSet := false
				fs.Visit(func(f *flag.Flag) { targetSet = targetSet || f.Name == "flow-core-target" })
				if doc != "" {
					d, err := parseCoreTargetDoc(doc)
					if err != nil {
						return c.usagef(env, "%v", err)
					}
					if d.target != nil {
						*target, targetSet = *d.target, true
					}
					*onPause = *onPause || d.allowOnPause
				}
				if !targetSet {
					return c.usagef(env, "no target: pass --flow-core-target or '{\"flow_core_target\":\"…\"}' after the path")
				}
				st, _, err := c.open(ctx, s)
				if err != nil {
					return c.failf(env, "%v", err)
				}
				defer st.Close()
				version, err := st.ChangeFlowCoreTarget(ctx, func(a *ytstore.Attributes) (string, error) {
					return *target, checkCoreTargetState(a, c.pf.path, *onPause)
				})
				if err != nil {
					if errors.Is(err, errRefused) {
						return c.failf(env, "%s", strings.TrimPrefix(err.Error(), errRefused.Error()+": "))
					}
					return c.failf(env, "%v", explain(err, c.pf.path))
				}
				if err := c.emit(env.stdout, map[string]any{"flow_core_target": *target, "version": version}); err != nil {
					return c.failf(env, "%v", err)
				}
				return 0
			}
		},
	})
}

// checkCoreTargetState applies Flow's rule: the target changes only while the pipeline is
// stopped (or has never run), or paused when allowOnPause.
func checkCoreTargetState(a *ytstore.Attributes, path string, allowOnPause bool) error {
	switch a.PipelineState {
	case "", ytstore.StateStopped:
		return nil
	case ytstore.StatePaused:
		if allowOnPause {
			return nil
		}
		return fmt.Errorf("%w: %s is paused: pass allow_update_on_pause (--allow-update-on-pause) to change the flow core target now; nothing changed", errRefused, path)
	}
	return fmt.Errorf("%w: the flow core target can change only while the pipeline is stopped (or paused with allow_update_on_pause); %s is %s: run 'yt-flow stop --path %s --wait' first; nothing changed",
		errRefused, path, a.PipelineState, path)
}

// coreTargetDoc is the argument of Flow's set-flow-core-target.
type coreTargetDoc struct {
	target       *string
	allowOnPause bool
}

// parseCoreTargetDoc reads {flow_core_target; allow_update_on_pause} as JSON or YSON; other
// keys are errors.
func parseCoreTargetDoc(s string) (coreTargetDoc, error) {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		if yerr := sdkyson.Unmarshal([]byte(s), &v); yerr != nil {
			return coreTargetDoc{}, fmt.Errorf("the argument %q is neither JSON nor YSON: %v", s, err)
		}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return coreTargetDoc{}, fmt.Errorf("the argument %q is not a map", s)
	}
	var d coreTargetDoc
	for _, k := range slices.Sorted(maps.Keys(m)) {
		switch v := m[k]; k {
		case "flow_core_target":
			t, ok := v.(string)
			if !ok {
				return d, fmt.Errorf("the argument's flow_core_target is %T, want a string", v)
			}
			d.target = &t
		case "allow_update_on_pause":
			b, ok := v.(bool)
			if !ok {
				return d, fmt.Errorf("the argument's allow_update_on_pause is %T, want a boolean", v)
			}
			d.allowOnPause = b
		default:
			return d, fmt.Errorf("the argument has an unknown key %q (want flow_core_target, allow_update_on_pause)", k)
		}
	}
	return d, nil
}
