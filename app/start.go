package app

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"

	sdkyson "go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/spec"
	pyson "github.com/ytflow/yt-flow/yson"
	"github.com/ytflow/yt-flow/ytstore"
)

// specBytes returns the "spec" and "dynamic_spec" nodes of a runner config
// file as YSON, for storing in the pipeline attributes.
func specBytes(data []byte) (static, dynamic sdkyson.RawValue, err error) {
	root, err := pyson.Decode(data)
	if err != nil {
		return nil, nil, err
	}
	if static, err = sdkyson.Marshal(root.Get("spec").Any()); err != nil {
		return nil, nil, fmt.Errorf("encode spec: %w", err)
	}
	dyn := root.Get("dynamic_spec").Any()
	if dyn == nil {
		dyn = map[string]any{}
	}
	if dynamic, err = sdkyson.Marshal(dyn); err != nil {
		return nil, nil, fmt.Errorf("encode dynamic_spec: %w", err)
	}
	return static, dynamic, nil
}

// sameYSON reports whether two YSON documents hold the same value.
func sameYSON(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var va, vb any
	if sdkyson.Unmarshal(a, &va) != nil || sdkyson.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// errSpecChange is returned when the static spec changes while the pipeline runs.
var errSpecChange = errors.New("the static spec can change only while the pipeline is stopped")

// startPipeline stores the specs and sets target_state=working, creating
// the pipeline if needed, and rotates the pipeline's transport secret (the jobs
// read the new one within a status period; the old one stays accepted until
// the next rotation). It returns a one-line summary.
func startPipeline(ctx context.Context, st *ytstore.Store, static, dynamic []byte) (string, error) {
	if err := st.CreatePipeline(ctx); err != nil {
		return "", err
	}
	if err := st.RotateTransportSecret(ctx, rand.Reader); err != nil {
		return "", err
	}
	attrs, err := st.Attributes(ctx)
	if err != nil {
		return "", err
	}
	u := ytstore.SpecUpdate{TargetState: ytstore.TargetWorking}
	specNote, dynNote := "unchanged", "unchanged"
	if !sameYSON(attrs.Spec, static) {
		if len(attrs.Spec) > 0 {
			switch attrs.PipelineState {
			case "", ytstore.StateStopped:
			default:
				return "", fmt.Errorf("%w: %s is %s; run 'yt-flow stop --path %s --wait' first", errSpecChange, st.Path(), attrs.PipelineState, st.Path())
			}
		}
		u.Spec, u.SpecVersion, specNote = static, attrs.SpecVersion+1, "updated"
	}
	if !sameYSON(attrs.DynamicSpec, dynamic) {
		u.DynamicSpec, u.DynamicSpecVersion, dynNote = dynamic, attrs.DynamicSpecVersion+1, "updated"
	}
	if err := st.SetSpecs(ctx, u); err != nil {
		return "", err
	}
	summary := fmt.Sprintf("pipeline %s: spec version %d (%s), dynamic spec version %d (%s), target state working",
		st.Path(), max(u.SpecVersion, attrs.SpecVersion), specNote, max(u.DynamicSpecVersion, attrs.DynamicSpecVersion), dynNote)
	if attrs.PipelineState == ytstore.StateCompleted {
		summary += " (the pipeline is completed: it runs no more)"
	}
	return summary, nil
}

func init() {
	register(&command{
		name:     "start",
		examples: []string{"yt-flow start --proxy localhost:8000 --spec pipeline.yson"},
		summary:  "store a pipeline's specs (creating it if needed) and set its target state to working",
		setup: func(fs *flag.FlagSet, env *environ) runFunc {
			proxy := new(string)
			addConnFlags(fs, proxy, "YTsaurus HTTP proxy (default $YT_PROXY, then the config's proxy)")
			specFile := fs.String("spec", "", "runner config file (pipeline.yson) with path, spec and dynamic_spec (required)")
			return func(ctx context.Context, s *settings) int {
				return runStart(ctx, env, s, fs, *proxy, *specFile)
			}
		},
	})
}

// runStart stores the specs of specFile in the pipeline it names.
func runStart(ctx context.Context, env *environ, s *settings, fs *flag.FlagSet, proxy, specFile string) int {
	if specFile == "" || fs.NArg() != 0 {
		fmt.Fprintln(env.stderr, "usage: yt-flow start --spec FILE [--proxy P]")
		return 2
	}
	cfg, err := spec.ParseConfigFile(specFile)
	if err != nil {
		return failf(env.stderr, "start: %s: %v", specFile, err)
	}
	if refuseUnrunnable(env.stderr, "start", specFile, cfg) {
		return 1
	}
	if proxy == "" {
		proxy = cfg.Proxy
	}
	if proxy == "" {
		return failf(env.stderr, "start: no proxy: pass --proxy, set $YT_PROXY or put proxy in %s", specFile)
	}
	data, err := os.ReadFile(specFile)
	if err != nil {
		return failf(env.stderr, "start: %v", err)
	}
	static, dynamic, err := specBytes(data)
	if err != nil {
		return failf(env.stderr, "start: %s: %v", specFile, err)
	}
	if _, err := spec.ParsePipeline(static); err != nil {
		return failf(env.stderr, "start: %s: spec does not survive storing: %v", specFile, err)
	}
	st, err := openPipelineStore(ctx, s, proxy, cfg.Path)
	if err != nil {
		return failf(env.stderr, "start: %v", err)
	}
	defer st.Close()
	if err := st.CreatePipeline(ctx); err != nil {
		return failf(env.stderr, "start: %v", err)
	}
	if err := storeClusters(ctx, env, st, cfg); err != nil {
		return failf(env.stderr, "start: %v", err)
	}
	summary, err := startPipeline(ctx, st, static, dynamic)
	if err != nil {
		return failf(env.stderr, "start: %v", err)
	}
	fmt.Fprintln(env.stdout, summary)
	return 0
}

// envClusters is the environment variable naming other clusters: "name=proxy,…".
const envClusters = "YT_FLOW_CLUSTERS"

// storeClusters records the pipeline's clusters map: the runner config's clusters with
// those of $YT_FLOW_CLUSTERS over them.
func storeClusters(ctx context.Context, env *environ, st *ytstore.Store, cfg *spec.Config) error {
	m := map[string]string{}
	for k, v := range cfg.Clusters {
		m[k] = v
	}
	fromEnv, err := ytstore.ParseClusters(env.getenv(envClusters))
	if err != nil {
		return fmt.Errorf("$%s: %w", envClusters, err)
	}
	for k, v := range fromEnv {
		m[k] = v
	}
	return st.SetClusters(ctx, m)
}
