package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ytflow/yt-flow/internal/torture"
	"github.com/ytflow/yt-flow/ytstore"
)

func init() {
	register(&command{
		name: "torture",
		examples: []string{
			"yt-flow torture --duration 2m",
			"yt-flow torture --spec pipeline.yson --duration 5m --faults kill,freeze --seed 42",
		},
		summary: "run a pipeline (yours or a built-in one) under killed, frozen and restarted processes and check its output exactly once against a fault-free run",
		setup:   setupTorture,
	})
}

// tortureOptions are the flags of `yt-flow torture`.
type tortureOptions struct {
	specFile, setup, dataDir, faults string
	duration, interval, progress     time.Duration
	settle                           time.Duration
	seed                             uint64
	rate, keys, workers              int
}

func setupTorture(fs *flag.FlagSet, env *environ) runFunc {
	var o tortureOptions
	fs.StringVar(&o.specFile, "spec", "", "runner config (pipeline.yson) of the pipeline to torture; default: the built-in one (a keyed count)")
	fs.StringVar(&o.setup, "setup", "", "setup file with the pipeline's tables (default: local.yson next to the spec)")
	fs.DurationVar(&o.duration, "duration", time.Minute, "how long the tortured run feeds input and injects faults")
	fs.StringVar(&o.faults, "faults", "all", "faults to inject, comma-separated: kill (SIGKILL of a worker), freeze (SIGSTOP of a worker past its session, then SIGCONT), failover (SIGKILL of the leading controller), store (SIGKILL and restart of the embedded YTsaurus); all or none")
	fs.Uint64Var(&o.seed, "seed", 0, "seed of the input and of the fault schedule (default: random, printed)")
	fs.DurationVar(&o.interval, "fault-interval", 5*time.Second, "mean time between two faults")
	fs.IntVar(&o.rate, "rate", 100, "rows per second written into each input queue during the tortured run")
	fs.IntVar(&o.keys, "keys", 50, "size of the key vocabulary of string columns")
	fs.IntVar(&o.workers, "workers", 3, "workers of each run")
	fs.StringVar(&o.dataDir, "data-dir", "", "folder of the runs' servers and logs (default: a new temporary folder, removed after a PASS)")
	fs.DurationVar(&o.progress, "progress", 5*time.Second, "how often a throughput line is printed")
	fs.DurationVar(&o.settle, "settle-timeout", 5*time.Minute, "how long a run may take to process its input after the feeding ends")
	return func(ctx context.Context, s *settings) int {
		kinds, err := torture.ParseKinds(o.faults)
		if err != nil {
			fmt.Fprintf(env.stderr, "yt-flow torture: --faults: %v\n", err)
			return 2
		}
		if fs.NArg() != 0 || o.duration <= 0 || o.interval <= 0 || o.rate < 1 || o.keys < 1 || o.workers < 1 || o.settle <= 0 {
			fmt.Fprintln(env.stderr, "usage: yt-flow torture [--spec FILE] [--duration D] [--faults kill,freeze,failover,store] [--seed N] [--rate N] [--keys N] [--workers N]")
			return 2
		}
		seedSet := false
		fs.Visit(func(f *flag.Flag) { seedSet = seedSet || f.Name == "seed" })
		if !seedSet {
			o.seed = rand.Uint64() % 1000000
		}
		t := &tortureRun{env: env, o: o, kinds: kinds}
		return t.run(ctx)
	}
}

// tortureRun is one `yt-flow torture` invocation.
type tortureRun struct {
	env   *environ
	o     tortureOptions
	kinds []torture.Kind
	start time.Time
	// injected counts the faults injected, per kind.
	injected map[torture.Kind]int
	// frozen is the worker a freeze fault stopped, until thaw resumes it.
	frozen *frozenWorker
	// lost is set when a fault left the run without its server (its restart failed).
	lost error
}

func (t *tortureRun) say(format string, args ...any) {
	fmt.Fprintf(t.env.stdout, format+"\n", args...)
}

func (t *tortureRun) run(ctx context.Context) int {
	bin, err := os.Executable()
	if err != nil {
		return failf(t.env.stderr, "torture: %v", err)
	}
	dir := t.o.dataDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "yt-flow-torture-"); err != nil {
			return failf(t.env.stderr, "torture: %v", err)
		}
	}
	specFile := t.o.specFile
	if specFile == "" {
		if specFile, err = writeBuiltinTorture(filepath.Join(dir, "builtin")); err != nil {
			return failf(t.env.stderr, "torture: %v", err)
		}
	}
	plan, err := loadTorturePlan(specFile, t.o.setup, t.env)
	if err != nil {
		return failf(t.env.stderr, "torture: %v", err)
	}
	n := int(float64(t.o.rate) * t.o.duration.Seconds())
	rows := plan.generate(n, t.o.keys, t.o.seed)
	t.say("torture: pipeline %s (%s), seed %d (repeat with --seed %d), %d rows into each of %d input queue(s), faults %s every ~%s for %s; data and logs in %s",
		plan.path, specFile, t.o.seed, t.o.seed, n, len(plan.inputs), kindList(t.kinds), t.o.interval, t.o.duration, dir)

	t.start = time.Now()
	ref, err := t.reference(ctx, bin, filepath.Join(dir, "reference"), plan, rows)
	if err != nil {
		return t.abort(ctx, "reference run: %v", err)
	}
	got, err := t.tortured(ctx, bin, filepath.Join(dir, "tortured"), plan, rows)
	if err != nil {
		return t.abort(ctx, "tortured run: %v", err)
	}
	pass := true
	for _, s := range plan.sinks {
		res := torture.Compare(ref[s.name], got[s.name], s.keys, s.kind == "queue")
		line := fmt.Sprintf("sink %s (%s %s): expected %d, found %d, lost %d, duplicated %d, unexpected %d",
			s.name, s.kind, s.path, res.Expected, res.Found, res.Lost, res.Duplicated, res.Unexpected)
		if s.kind == "queue" {
			line += fmt.Sprintf(", reordered %d (over %d keys)", res.Reordered, res.Keys)
		}
		t.say("%s", line)
		for _, e := range res.Examples {
			t.say("  %s", e)
		}
		pass = pass && res.OK()
	}
	faults := t.faultSummary()
	if !pass {
		t.say("FAIL: the output under faults differs from the fault-free run (%s); data and logs kept in %s", faults, dir)
		return 1
	}
	t.say("PASS: every sink holds exactly the output of the fault-free run (%s) in %.1fs", faults, time.Since(t.start).Seconds())
	if t.o.dataDir == "" {
		_ = os.RemoveAll(dir)
	}
	return 0
}

// abort reports a run that could not finish (not a verdict on the output): exit 1, or 130
// when interrupted.
func (t *tortureRun) abort(ctx context.Context, format string, args ...any) int {
	fmt.Fprintf(t.env.stderr, "yt-flow: torture: "+format+"\n", args...)
	if ctx.Err() != nil {
		return exitInterrupted
	}
	t.say("FAIL: the run did not finish (%s)", t.faultSummary())
	return 1
}

func (t *tortureRun) faultSummary() string {
	var parts []string
	total := 0
	for _, k := range torture.Kinds {
		if n := t.injected[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
			total += n
		}
	}
	if total == 0 {
		return "no fault injected"
	}
	return fmt.Sprintf("%d faults injected: %s", total, strings.Join(parts, ", "))
}

func kindList(kinds []torture.Kind) string {
	if len(kinds) == 0 {
		return "none"
	}
	s := make([]string, len(kinds))
	for i, k := range kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ",")
}

// launch starts a run's server, tables, pipeline, the workers and two controllers (a
// leader and a standby).
func (t *tortureRun) launch(ctx context.Context, bin, dir string, plan *torturePlan) (*tortureCluster, error) {
	c, err := startTortureCluster(ctx, bin, dir, plan.path, t.say)
	if err != nil {
		return nil, err
	}
	if err := ensureTables(ctx, c.st, plan.setup); err != nil {
		c.stop()
		return nil, err
	}
	if _, err := startPipeline(ctx, c.st, plan.static, plan.dynamic); err != nil {
		c.stop()
		return nil, err
	}
	// Workers first: a controller that found only some of them would place every job on
	// those and move some a cycle later.
	for range t.o.workers {
		if _, err := c.addWorker(); err != nil {
			c.stop()
			return nil, err
		}
	}
	for i := range 2 {
		if err := c.addController(fmt.Sprintf("controller-%d", i)); err != nil {
			c.stop()
			return nil, err
		}
	}
	return c, nil
}

// reference runs the pipeline without faults on all the input and returns its outputs.
func (t *tortureRun) reference(ctx context.Context, bin, dir string, plan *torturePlan, rows map[string][]map[string]any) (map[string][]map[string]any, error) {
	begin := time.Now()
	c, err := t.launch(ctx, bin, dir, plan)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	f := newFeeder(rows)
	if err := f.feed(ctx, c.st, f.total); err != nil {
		return nil, err
	}
	if err := t.settle(ctx, c, f); err != nil {
		return nil, err
	}
	out, err := c.readOutputs(ctx, plan.sinks)
	if err != nil {
		return nil, err
	}
	var parts []string
	empty := true
	for _, s := range plan.sinks {
		parts = append(parts, fmt.Sprintf("%s %d rows", s.name, len(out[s.name])))
		empty = empty && len(out[s.name]) == 0
	}
	t.say("reference run (no faults): %d rows processed in %.1fs; output: %s", f.fedRows(), time.Since(begin).Seconds(), strings.Join(parts, ", "))
	if empty {
		return nil, errors.New("the fault-free run wrote no output: nothing to compare")
	}
	return out, nil
}

// settle feeds what is left, waits until the sources have read every input row, then
// stops the pipeline (it drains: every message in flight is processed and delivered) and
// waits for it to be stopped, supervising the processes meanwhile.
func (t *tortureRun) settle(ctx context.Context, c *tortureCluster, f *feeder) error {
	deadline := time.Now().Add(t.o.settle)
	stopping := false
	why := ""
	for time.Now().Before(deadline) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := c.supervise(); err != nil {
			return err
		}
		if err := f.feed(ctx, c.st, f.total); err != nil {
			why = err.Error()
		} else if attrs, err := c.st.Attributes(ctx); err != nil {
			why = err.Error()
		} else if !stopping {
			p := readSourceProgress(ctx, c.st, attrs)
			why = fmt.Sprintf("sources read %d rows, %d unread", p.read, p.unread)
			if p.ok && p.unread == 0 && p.read >= int64(f.total) {
				if err := c.st.SetTargetState(ctx, ytstore.TargetStopped); err != nil {
					why = err.Error()
				} else {
					stopping = true
				}
			}
		} else {
			why = "pipeline " + attrs.PipelineState + ", waiting for stopped"
			if attrs.PipelineState == ytstore.StateStopped {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("not settled within --settle-timeout %s: %s (logs in %s)", t.o.settle, why, filepath.Join(c.dir, "logs"))
}
