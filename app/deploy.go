package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ytflow/yt-flow/internal/corever"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/status"
	"github.com/ytflow/yt-flow/ytstore"
)

func init() {
	register(&command{
		name: "deploy",
		examples: []string{
			"yt-flow deploy --proxy localhost:8000 --spec pipeline.yson --workers 2",
			"yt-flow deploy --proxy localhost:8000 --spec pipeline.yson --replace --wait completed",
		},
		summary: "start a pipeline and run its controller and workers as jobs of a vanilla operation",
		setup:   setupDeploy,
	})
}

// deployFlags are the flags of `yt-flow deploy`.
type deployFlags struct {
	proxy, specFile, binary, cachePath, wait string
	workerListen, workerAdvertiseHost        string
	workerAdvertiseHostname                  bool
	workers, controllers                     int
	localBinary, replace                     bool
	skipSetFlowCoreTarget                    bool
	leaseTimeout, timeout                    time.Duration
}

func setupDeploy(fs *flag.FlagSet, env *environ) runFunc {
	var f deployFlags
	addConnFlags(fs, &f.proxy, "YTsaurus HTTP proxy (default $YT_PROXY, then the config's proxy)")
	fs.StringVar(&f.specFile, "spec", "", "runner config file (pipeline.yson) with path, spec, dynamic_spec and optionally vanilla (required)")
	fs.IntVar(&f.workers, "workers", 0, "worker jobs (default: the config's vanilla/worker/count, else 1)")
	fs.IntVar(&f.controllers, "controllers", 0, "controller jobs: one leads, the others stand by (default: the config's vanilla/controller/count, else 1)")
	fs.StringVar(&f.binary, "binary", "", "the yt-flow binary the jobs run (default: this one); it is uploaded to --cache-path unless --local-binary")
	fs.StringVar(&f.cachePath, "cache-path", "", "Cypress folder the binary is uploaded to, named by its checksum (default: the config's vanilla/cache_path, else //tmp/yt-flow/bin)")
	fs.BoolVar(&f.localBinary, "local-binary", false, "jobs run --binary from this host's file system instead of an uploaded copy: only for a cluster whose jobs run on this host (yt-flow local)")
	fs.StringVar(&f.workerListen, "worker-listen", "127.0.0.1:0", "the workers' --listen: right when every job runs on one host; a cluster spreading jobs over hosts needs a wildcard address such as :0 with --worker-advertise-hostname")
	fs.StringVar(&f.workerAdvertiseHost, "worker-advertise-host", "", "the workers' --advertise-host")
	fs.BoolVar(&f.workerAdvertiseHostname, "worker-advertise-hostname", false, "the workers publish the name of the host their job runs on (--advertise-hostname)")
	fs.BoolVar(&f.skipSetFlowCoreTarget, "skip-set-flow-core-target", false, "leave the pipeline's flow core target as it is for this launch (set_flow_core_target = %false in the config: always)")
	fs.BoolVar(&f.replace, "replace", false, "abort the pipeline's running operation before starting the new one")
	fs.DurationVar(&f.leaseTimeout, "lease-timeout", 30*time.Second, "timeout of job leases, passed to the controllers")
	fs.StringVar(&f.wait, "wait", "working", "wait until the pipeline is working, completed, or not at all (none)")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Minute, "how long --wait waits")
	return func(ctx context.Context, s *settings) int {
		return runDeploy(ctx, env, s, fs, f)
	}
}

// defaultCachePath is where deploy uploads binaries without a configured cache path.
const defaultCachePath = "//tmp/yt-flow/bin"

func runDeploy(ctx context.Context, env *environ, s *settings, fs *flag.FlagSet, f deployFlags) int {
	if f.specFile == "" || fs.NArg() != 0 {
		fmt.Fprintln(env.stderr, "usage: yt-flow deploy --spec FILE [--proxy P] [--workers N] [--binary PATH]")
		return 2
	}
	if f.workerAdvertiseHost != "" && f.workerAdvertiseHostname {
		fmt.Fprintln(env.stderr, "yt-flow deploy: --worker-advertise-host and --worker-advertise-hostname exclude each other")
		return 2
	}
	switch f.wait {
	case "working", "completed", "none":
	default:
		fmt.Fprintf(env.stderr, "yt-flow deploy: --wait %q: want working, completed or none\n", f.wait)
		return 2
	}
	cfg, err := spec.ParseConfigFile(f.specFile)
	if err != nil {
		return failf(env.stderr, "deploy: %s: %v", f.specFile, err)
	}
	if refuseUnrunnable(env.stderr, "deploy", f.specFile, cfg) {
		return 1
	}
	if f.proxy == "" {
		f.proxy = cfg.Proxy
	}
	if f.proxy == "" {
		return failf(env.stderr, "deploy: no proxy: pass --proxy, set $YT_PROXY or put proxy in %s", f.specFile)
	}
	plan, err := planDeploy(cfg, f)
	if err != nil {
		return failf(env.stderr, "deploy: %s: %v", f.specFile, err)
	}
	data, err := os.ReadFile(f.specFile)
	if err != nil {
		return failf(env.stderr, "deploy: %v", err)
	}
	static, dynamic, err := specBytes(data)
	if err != nil {
		return failf(env.stderr, "deploy: %s: %v", f.specFile, err)
	}
	if _, err := spec.ParsePipeline(static); err != nil {
		return failf(env.stderr, "deploy: %s: spec does not survive storing: %v", f.specFile, err)
	}
	token, err := s.token()
	if err != nil {
		return failf(env.stderr, "deploy: %v", err)
	}
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: f.proxy, Path: cfg.Path, Token: token})
	if err != nil {
		return failf(env.stderr, "deploy: %v", err)
	}
	defer st.Close()
	old, err := previousOperation(ctx, st, cfg.Path, f.replace)
	if err != nil {
		return failf(env.stderr, "deploy: %v", err)
	}
	binary, version, coreVersion, err := placeBinary(ctx, env, st, f, plan.cachePath)
	if err != nil {
		return failf(env.stderr, "deploy: %v", err)
	}
	if err := st.CreatePipeline(ctx); err != nil {
		return failf(env.stderr, "deploy: %v", err)
	}
	if err := storeClusters(ctx, env, st, cfg); err != nil {
		return failf(env.stderr, "deploy: %v", err)
	}
	// Make before break: the new operation starts first, so that its jobs are up when the old
	// one is ended; then the specs are pushed and the pipeline started.
	opSpec := plan.operationSpec(cfg.Path, f.proxy, binary, !f.localBinary)
	public := opSpec
	if token != "" {
		opSpec = withSecureVault(opSpec, map[string]any{"YT_TOKEN": token})
	}
	id, err := st.StartVanilla(ctx, opSpec)
	if err != nil {
		return failf(env.stderr, "deploy: %v", err)
	}
	if err := st.SetDeployment(ctx, ytstore.Deployment{OperationID: id, Version: version, Binary: binary, Spec: public}); err != nil {
		return failf(env.stderr, "deploy: operation %s started, but not recorded on the pipeline: %v", id, err)
	}
	fmt.Fprintf(env.stdout, "operation %s: %d controller(s), %d worker(s)\n", id, plan.controllers, plan.workers)
	if old != "" {
		graceful := env.getenv(envGracefulUpdate) != "0"
		if err := retire(ctx, env, st, cfg.Path, old, graceful, f.timeout); err != nil {
			return failf(env.stderr, "deploy: operation %s started; the old one %s: %v", id, old, err)
		}
	}
	// The target goes with the specs, once the old operation is ended (Flow's runner pushes
	// the specs and the FlowCoreTarget, then starts the pipeline).
	if cfg.SetFlowCoreTarget && !f.skipSetFlowCoreTarget && !st.WorkerVersions(ctx) {
		fmt.Fprintf(env.stderr, "deploy: warning: flow core target not set: the workers table of %s predates worker versions (recreate the pipeline to fence workers by version)\n", cfg.Path)
	} else if cfg.SetFlowCoreTarget && !f.skipSetFlowCoreTarget {
		n, err := st.ChangeFlowCoreTarget(ctx, func(*ytstore.Attributes) (string, error) { return coreVersion, nil })
		if err != nil {
			return failf(env.stderr, "deploy: operation %s started; set the flow core target: %v", id, err)
		}
		fmt.Fprintf(env.stdout, "flow core target %s (version %d)\n", coreVersion, n)
	}
	summary, err := startPipeline(ctx, st, static, dynamic)
	if err != nil {
		return failf(env.stderr, "deploy: %v", err)
	}
	fmt.Fprintln(env.stdout, summary)
	if f.wait == "none" {
		return 0
	}
	done := []string{ytstore.StateWorking, ytstore.StateCompleted}
	if f.wait == "completed" {
		done = []string{ytstore.StateCompleted}
	}
	state, err := waitDeployed(ctx, st, id, f.timeout, done)
	if err != nil {
		return failf(env.stderr, "deploy: %v", err)
	}
	fmt.Fprintf(env.stdout, "pipeline %s: %s\n", cfg.Path, state)
	return 0
}

// deployPlan is the shape of the operation deploy starts, from the flags and the runner
// config's vanilla section.
type deployPlan struct {
	// workerArgs are the worker command's flags after --exit-when-completed.
	workerArgs           string
	workers, controllers int
	cachePath            string
	leaseTimeout         time.Duration
	maxFailedJobs        int64
	pool, title          string
	// task holds, per task (controller, worker), the keys of the vanilla section passed on:
	// memory_limit, cpu_limit, port_count, environment.
	task map[string]map[string]any
}

// planDeploy reads the vanilla section of cfg under the flags' overrides.
func planDeploy(cfg *spec.Config, f deployFlags) (deployPlan, error) {
	p := deployPlan{workerArgs: workerArgs(f), workers: f.workers, controllers: f.controllers, cachePath: f.cachePath, leaseTimeout: f.leaseTimeout,
		maxFailedJobs: 10000, title: "yt-flow " + cfg.Path, task: map[string]map[string]any{}}
	v := cfg.Vanilla
	for _, name := range []string{"controller", "worker"} {
		t, _ := v[name].(map[string]any)
		keep := map[string]any{}
		for _, k := range []string{"memory_limit", "cpu_limit", "port_count", "environment"} {
			if x, ok := t[k]; ok {
				keep[k] = x
			}
		}
		p.task[name] = keep
		if n, ok := t["count"].(int64); ok {
			if name == "worker" && p.workers == 0 {
				p.workers = int(n)
			}
			if name == "controller" && p.controllers == 0 {
				p.controllers = int(n)
			}
		}
	}
	p.workers, p.controllers = max(p.workers, 1), max(p.controllers, 1)
	if s, _ := v["cache_path"].(string); s != "" && p.cachePath == "" {
		p.cachePath = s
	}
	if p.cachePath == "" {
		p.cachePath = defaultCachePath
	}
	if !strings.HasPrefix(p.cachePath, "//") {
		return p, fmt.Errorf("cache path %q is not an absolute Cypress path", p.cachePath)
	}
	if n, ok := v["max_failed_job_count"].(int64); ok {
		p.maxFailedJobs = n
	}
	p.pool, _ = v["pool"].(string)
	if s, _ := v["title"].(string); s != "" {
		p.title = s
	}
	if p.workers > 1000 || p.controllers > 10 {
		return p, fmt.Errorf("%d workers and %d controllers: at most 1000 and 10", p.workers, p.controllers)
	}
	return p, nil
}

// operationSpec is the vanilla operation spec: a controller task and a worker task running
// binary (a Cypress file given to the jobs when uploaded, else a path on the job's host).
// Each job exits 0 once the pipeline is completed, so the operation completes with it.
func (p deployPlan) operationSpec(path, proxy, binary string, uploaded bool) map[string]any {
	exe := binary
	if uploaded {
		exe = "./yt-flow"
	}
	task := func(name string, count int, args string) map[string]any {
		t := map[string]any{
			"job_count": int64(count),
			"command":   fmt.Sprintf("exec %s %s --path %s --exit-when-completed%s", shellQuote(exe), name, shellQuote(path), args),
		}
		for k, v := range p.task[name] {
			t[k] = v
		}
		envs := map[string]any{}
		if e, ok := t["environment"].(map[string]any); ok {
			for k, v := range e {
				envs[k] = v
			}
		}
		envs["YT_PROXY"] = proxy
		t["environment"] = envs
		if uploaded {
			t["file_paths"] = []any{fmt.Sprintf("<file_name=%q;executable=%%true>%s", "yt-flow", binary)}
		}
		return t
	}
	sp := map[string]any{
		"title":                p.title,
		"max_failed_job_count": p.maxFailedJobs,
		"tasks": map[string]any{
			"controller": task("controller", p.controllers, " --lease-timeout "+p.leaseTimeout.String()),
			"worker":     task("worker", p.workers, p.workerArgs),
		},
	}
	if p.pool != "" {
		sp["pool"] = p.pool
	}
	return sp
}

// workerArgs are the transport flags of the worker command: --listen unless the default,
// --advertise-host or --advertise-hostname when set.
func workerArgs(f deployFlags) string {
	var b strings.Builder
	if f.workerListen != "" && f.workerListen != "127.0.0.1:0" {
		b.WriteString(" --listen " + shellQuote(f.workerListen))
	}
	if f.workerAdvertiseHost != "" {
		b.WriteString(" --advertise-host " + shellQuote(f.workerAdvertiseHost))
	}
	if f.workerAdvertiseHostname {
		b.WriteString(" --advertise-hostname")
	}
	return b.String()
}

// withSecureVault returns a copy of sp with its secure vault (the token travels there:
// jobs see it as $YT_SECURE_VAULT_YT_TOKEN, and the cluster never shows it).
func withSecureVault(sp map[string]any, vault map[string]any) map[string]any {
	out := make(map[string]any, len(sp)+1)
	for k, v := range sp {
		out[k] = v
	}
	out["secure_vault"] = vault
	return out
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// placeBinary returns where the jobs find the binary, its version (the SHA-256 of its
// content) and its flow core version (its VCS commit, else that SHA-256: internal/corever):
// uploaded to cachePath under a name carrying the version, or its local path.
func placeBinary(ctx context.Context, env *environ, st *ytstore.Store, f deployFlags, cachePath string) (dst, version, core string, err error) {
	bin := f.binary
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", "", "", fmt.Errorf("find this binary (pass --binary): %w", err)
		}
		bin = exe
	}
	bin, err = filepath.Abs(bin)
	if err != nil {
		return "", "", "", err
	}
	file, err := os.Open(bin)
	if err != nil {
		return "", "", "", fmt.Errorf("binary: %w", err)
	}
	defer file.Close()
	h := sha256.New()
	if _, err := io.Copy(h, file); err != nil {
		return "", "", "", fmt.Errorf("binary %s: %w", bin, err)
	}
	version = hex.EncodeToString(h.Sum(nil))
	core, ok := corever.VCSOfFile(bin)
	if !ok {
		core = version
	}
	if f.localBinary {
		fmt.Fprintf(env.stdout, "binary %s (local), version %s\n", bin, version[:16])
		return bin, version, core, nil
	}
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		return "", "", "", err
	}
	dst = strings.TrimSuffix(cachePath, "/") + "/yt-flow-" + version[:32]
	uploaded, err := st.UploadFile(ctx, dst, file)
	if err != nil {
		return "", "", "", err
	}
	note := "already uploaded"
	if uploaded {
		note = "uploaded"
	}
	fmt.Fprintf(env.stdout, "binary %s (%s), version %s\n", dst, note, version[:16])
	return dst, version, core, nil
}

// errDeployed is returned when the pipeline already runs as an operation.
var errDeployed = errors.New("the pipeline already runs as an operation")

// envGracefulUpdate chooses how deploy --replace ends the old operation: "0" pauses the
// pipeline (in-flight messages stay in the stores), anything else drains and stops it.
const envGracefulUpdate = "YT_FLOW_GRACEFUL_UPDATE"

// previousOperation returns the running operation the pipeline was last deployed as ("" if
// none); a running one is refused unless replace.
func previousOperation(ctx context.Context, st *ytstore.Store, path string, replace bool) (string, error) {
	d, ok, err := st.Deployment(ctx)
	if err != nil || !ok {
		return "", err
	}
	op, err := st.Operation(ctx, d.OperationID)
	if errors.Is(err, ytstore.ErrNoSuchOperation) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if op.Finished {
		return "", nil
	}
	if !replace {
		return "", fmt.Errorf("%w: %s is operation %s (%s); pass --replace to replace it, or end it with 'yt-flow stop --path %s --abort-operation'",
			errDeployed, path, op.ID, op.State, path)
	}
	return op.ID, nil
}

// retire ends the old operation of a release: the pipeline is drained and stopped (graceful)
// or paused, then the operation aborted. A pipeline already there, completed, or never run
// by a controller (no state: nothing in flight) needs no wait.
func retire(ctx context.Context, env *environ, st *ytstore.Store, path, old string, graceful bool, timeout time.Duration) error {
	target, done := ytstore.TargetStopped, []string{ytstore.StateStopped, ytstore.StateCompleted}
	if !graceful {
		target, done = ytstore.TargetPaused, []string{ytstore.StatePaused, ytstore.StateStopped, ytstore.StateCompleted}
	}
	attrs, err := st.Attributes(ctx)
	if err != nil {
		return err
	}
	if attrs.PipelineState != "" && !slices.Contains(done, attrs.PipelineState) {
		if _, err := status.SetTarget(ctx, st, target); err != nil {
			return err
		}
		state, err := waitDeployed(ctx, st, "", timeout, done)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.stdout, "pipeline %s: %s\n", path, state)
	}
	if err := st.AbortOperation(ctx, old, "replaced by yt-flow deploy"); err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "operation %s: aborted (replaced)\n", old)
	return nil
}

// waitDeployed polls until the pipeline state is one of done, failing early when operation
// opID (if not "") ends first.
func waitDeployed(ctx context.Context, st *ytstore.Store, opID string, timeout time.Duration, done []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	last := "unknown"
	for {
		if attrs, err := st.Attributes(ctx); err == nil {
			last = orDash(attrs.PipelineState)
			for _, s := range done {
				if attrs.PipelineState == s {
					return s, nil
				}
			}
		}
		if opID != "" {
			if op, err := st.Operation(ctx, opID); err == nil && op.Finished {
				return "", fmt.Errorf("operation %s is %s before the pipeline became %v (state %s): %s", opID, op.State, done, last, orDash(op.Error))
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("timed out after %v waiting for the pipeline to be %v (state %s)", timeout, done, last)
		case <-tick.C:
		}
	}
}

// deploymentLine describes the operation the pipeline is deployed as, for status; "" when
// it was never deployed.
func deploymentLine(ctx context.Context, st *ytstore.Store) string {
	d, ok, err := st.Deployment(ctx)
	if err != nil {
		return "unreadable: " + err.Error()
	}
	if !ok {
		return ""
	}
	op, err := st.Operation(ctx, d.OperationID)
	if errors.Is(err, ytstore.ErrNoSuchOperation) {
		return d.OperationID + " (unknown to the cluster)"
	}
	if err != nil {
		return d.OperationID + " (unreadable: " + err.Error() + ")"
	}
	line := fmt.Sprintf("%s %s (jobs: %d running, %d completed, %d failed, %d aborted)", op.ID, op.State, op.Running, op.Completed, op.Failed, op.Aborted)
	if op.Error != "" {
		line += ": " + strings.ReplaceAll(op.Error, "\n", " ")
	}
	return line
}

func init() {
	register(&command{
		name:     "reanimate",
		examples: []string{"yt-flow reanimate --proxy localhost:8000 --path //home/me/pipe"},
		summary:  "resubmit the vanilla operation of a deployed pipeline whose operation died (refused while it runs)",
		setup: func(fs *flag.FlagSet, env *environ) runFunc {
			var pf pipelineFlags
			pf.define(fs)
			return func(ctx context.Context, s *settings) int {
				if code := pf.check(fs, true); code >= 0 {
					return code
				}
				return runReanimate(ctx, env, s, pf)
			}
		},
	})
}

// runReanimate starts the recorded operation spec of the pipeline again (with the caller's
// token in its secure vault) when the recorded operation has ended or is unknown.
func runReanimate(ctx context.Context, env *environ, s *settings, pf pipelineFlags) int {
	token, err := s.token()
	if err != nil {
		return failf(env.stderr, "reanimate: %v", err)
	}
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: pf.proxy, Path: pf.path, Token: token})
	if err != nil {
		return failf(env.stderr, "reanimate: %v", err)
	}
	defer st.Close()
	d, ok, err := st.Deployment(ctx)
	if err != nil {
		return failf(env.stderr, "reanimate: %v", explain(err, pf.path))
	}
	if !ok || len(d.Spec) == 0 {
		return failf(env.stderr, "reanimate: pipeline %s was never deployed (yt-flow deploy --spec FILE)", pf.path)
	}
	op, err := st.Operation(ctx, d.OperationID)
	switch {
	case errors.Is(err, ytstore.ErrNoSuchOperation):
	case err != nil:
		return failf(env.stderr, "reanimate: %v", err)
	case !op.Finished:
		return failf(env.stderr, "reanimate: %v: %s is operation %s (%s)", errDeployed, pf.path, op.ID, op.State)
	}
	spec := d.Spec
	if token != "" {
		spec = withSecureVault(spec, map[string]any{"YT_TOKEN": token})
	}
	id, err := st.StartVanilla(ctx, spec)
	if err != nil {
		return failf(env.stderr, "reanimate: %v", err)
	}
	prev := d.OperationID
	d.OperationID = id
	if err := st.SetDeployment(ctx, d); err != nil {
		return failf(env.stderr, "reanimate: operation %s started, but not recorded on the pipeline: %v", id, err)
	}
	fmt.Fprintf(env.stdout, "operation %s: started in place of %s\n", id, prev)
	return 0
}
