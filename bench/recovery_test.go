package bench

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ytflow/yt-flow/e2e"
	"github.com/ytflow/yt-flow/ytstore"
)

// workerSessionTimeout is the session timeout of `yt-flow worker` (job.Config default); the
// recovery target after a freeze is this plus 2s.
const workerSessionTimeout = 10 * time.Second

// killTarget is the recovery target after kill -9 of a worker (issue 42).
const killTarget = 3 * time.Second

// recoveryMode is how benchRecovery makes the victim worker fail, and whether the
// controller probes the workers' endpoints (its default) or only waits for their sessions to
// time out (--probe-period=-1s: the behaviour before probing, for comparison).
type recoveryMode struct {
	name    string // metric prefix
	freeze  bool   // SIGSTOP instead of SIGKILL
	noProbe bool
}

// recoveryModes are the modes the recovery benchmark runs, alternating within each iteration:
// BENCH_RECOVERY_MODES (comma-separated names of allRecoveryModes), default "kill,freeze".
func recoveryModes() []recoveryMode {
	names := strings.Split(cmp.Or(os.Getenv("BENCH_RECOVERY_MODES"), "kill,freeze"), ",")
	var out []recoveryMode
	for _, n := range names {
		for _, m := range allRecoveryModes {
			if m.name == strings.TrimSpace(n) {
				out = append(out, m)
			}
		}
	}
	return out
}

var allRecoveryModes = []recoveryMode{
	{name: "kill"},
	{name: "freeze", freeze: true},
	{name: "kill_no_probe", noProbe: true},
	{name: "freeze_no_probe", freeze: true, noProbe: true},
}

// benchRecovery runs the infinite word-count pipeline as real processes (`yt-flow local`
// with a data dir, one `yt-flow controller` with its default probing, two `yt-flow worker`
// with their default session timeout), feeds it at rate msgs/s, makes the worker holding the
// most jobs fail (kill -9, or SIGSTOP: a frozen process whose port still accepts) and
// reports the time from the failure until every message written before it is visible in the
// output queue (so the failed worker's keys produce output again through the replacement
// jobs), the worst latency of messages written in the 5s after it, and where the time went
// (recoveryMilestones).
func benchRecovery(b *testing.B, m medians, rate float64, vocab int, mode recoveryMode) {
	ctx := context.Background()
	c := e2e.NewCluster(b)
	if c.Real() {
		b.Skip("recovery kills processes next to ytlocal; not run against YT_PROXY")
	}
	p, err := NewPipeline(ctx, c.Proxy, fmt.Sprintf("//home/bench/recovery-%d", rand.IntN(1000000)), Options{Tablets: 2, CountPartitions: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	if err := p.Start(ctx); err != nil {
		b.Fatal(err)
	}
	// The processes of an iteration stop when it ends (cleanup would keep them running
	// through the later iterations).
	defer c.KillLocal()
	args := []string{"controller", "--proxy", c.Proxy, "--path", p.Path, "--lease-timeout", "30s", "--session-timeout", "3s"}
	if mode.noProbe {
		args = append(args, "--probe-period=-1s")
	}
	ctl := e2e.Start(b, "controller", args...)
	defer ctl.Kill()
	workers := map[string]*e2e.Proc{}
	for i := range 2 {
		id := fmt.Sprintf("worker-%d", i)
		workers[id] = e2e.Start(b, id, "worker", "--proxy", c.Proxy, "--path", p.Path, "--id", id)
		defer workers[id].Kill() // SIGKILL ends a frozen process too
	}
	e2e.Eventually(b, time.Minute, func() (bool, string) {
		s := p.State(ctx)
		return s == ytstore.StateWorking, "pipeline state " + s
	})

	lctx, stopPoll := context.WithCancel(ctx)
	defer stopPoll()
	load, stopWriting := StartLoad(lctx, p, rate, vocab)
	defer load.Close()
	// Warm up: both workers hold jobs and output flows.
	var victim string
	var before []ytstore.Job
	e2e.Eventually(b, time.Minute, func() (bool, string) {
		if err := load.Err(); err != nil {
			b.Fatal(err)
		}
		jobs, err := p.Store.Jobs(ctx)
		if err != nil {
			return false, err.Error()
		}
		per := map[string]int{}
		for _, j := range jobs {
			per[j.WorkerID]++
		}
		_, arrived := load.Progress()
		victim = ""
		for id := range workers {
			if victim == "" || per[id] > per[victim] || per[id] == per[victim] && id < victim {
				victim = id
			}
		}
		before = jobs
		return len(per) == 2 && arrived > int(rate*3), fmt.Sprintf("jobs per worker %v, %d outputs", per, arrived)
	})
	session, err := workerSession(ctx, p.Store, victim)
	if err != nil {
		b.Fatal(err)
	}
	watch := watchRecovery(ctx, p.Store, victim, session, before)
	kill := time.Now()
	if mode.freeze {
		if err := workers[victim].Freeze(); err != nil {
			b.Fatal(err)
		}
	} else {
		workers[victim].Kill()
	}
	killed := time.Now()

	var recovered time.Time
	e2e.Eventually(b, 2*time.Minute, func() (bool, string) {
		if err := load.Err(); err != nil {
			b.Fatal(err)
		}
		ok, last := load.AllBeforeVisible(kill)
		recovered = last
		sent, arrived := load.Progress()
		return ok, fmt.Sprintf("messages written before the failure not all visible (%d written, %d visible)", sent, arrived)
	})
	// Messages written right after the failure wait for the new jobs too.
	after := killed.Add(5 * time.Second)
	e2e.Eventually(b, 2*time.Minute, func() (bool, string) {
		ok, _ := load.AllBeforeVisible(after)
		return ok, "messages written in the 5s after the failure not all visible"
	})
	stopWriting()
	ms := watch.stop()
	var survivor *e2e.Proc
	for id, w := range workers {
		if id != victim {
			survivor = w
		}
	}
	ms.fromLogs(survivor.Log())
	lat, _ := load.Latencies(killed, after)
	rec := recovered.Sub(kill)
	target := killTarget
	how := "kill -9"
	if mode.freeze {
		target, how = workerSessionTimeout+2*time.Second, "SIGSTOP"
	}
	b.Logf("recovery (%s) at %.0f msgs/s: %s of %s; all messages written before it visible %v after it; worst latency of messages written in the next 5s %v; target ≤ %v: %v; %s",
		mode.name, rate, how, victim, rec.Round(time.Millisecond), Percentile(lat, 1).Round(time.Millisecond), target, rec <= target, ms.describe(kill))
	prefix := mode.name + "_"
	if mode.name == "kill" {
		prefix = "" // recovery_s: the figure BENCHMARKS.md has always reported
	}
	m.add(rec.Seconds(), prefix+"recovery_s")
	m.add(Percentile(lat, 1).Seconds(), prefix+"max_latency_after_kill_s")
	ms.report(m, mode.name, kill)
}

// benchLatencyProcesses is benchLatency with the parts in their own processes, as they are
// deployed: `yt-flow local --data-dir`, one `yt-flow controller` and pr.workers `yt-flow
// worker`; the load generator and the sink polling stay in the benchmark process. The CPU
// figure is the sum over those processes (/proc/PID/stat).
func benchLatencyProcesses(b *testing.B, m medians, pr params, rate float64) {
	ctx := context.Background()
	c := e2e.NewCluster(b)
	if c.Real() {
		b.Skip("the CPU figure reads local processes; not run against YT_PROXY")
	}
	p, err := NewPipeline(ctx, c.Proxy, fmt.Sprintf("//home/bench/latency-processes-%d", rand.IntN(1000000)),
		Options{Tablets: pr.partitions, CountPartitions: pr.countPartitions, BatchDuration: latencyBatch, EmptyBatchBackoff: latencyBackoff})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	if err := p.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer c.KillLocal() // this iteration's processes stop when it ends
	procs := startRuntimeProcesses(b, c.Proxy, p.Path, pr.workers)
	defer killAll(procs)
	pids := []int{c.LocalPid()}
	for _, pr := range procs {
		pids = append(pids, pr.Pid())
	}
	cpu := func() time.Duration {
		var sum time.Duration
		for _, pid := range pids {
			sum += procCPU(pid)
		}
		return sum
	}
	failed := func() error {
		for _, pr := range procs {
			if pr.Exited() {
				return fmt.Errorf("%s exited; its log:\n%s", pr.Name, pr.Log())
			}
		}
		return nil
	}
	measureLatency(b, m, pr, p, rate, cpu, failed)
}

// procCPU is the user+system CPU time of process pid from /proc/PID/stat (clock ticks of
// 1/100 s, the Linux USER_HZ); 0 when unreadable.
func procCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) is in parentheses and may hold spaces: split after it.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state); utime and stime are fields 14, 15
	if len(f) < 13 {
		return 0
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// finiteRunProcesses is finiteRun with the runtime as processes (as benchLatencyProcesses
// starts them) on its own `yt-flow local --data-dir`: the time from Start until the sinks are
// exact, and until the result table first counted every input message (the data path).
func finiteRunProcesses(b *testing.B, pr params, words []string, want map[string]int64) (elapsed, counted time.Duration) {
	ctx := context.Background()
	c := e2e.NewCluster(b)
	if c.Real() {
		b.Skip("compared with the in-process runs on this machine; not run against YT_PROXY")
	}
	defer c.KillLocal() // this iteration's server stops when it ends
	p, err := NewPipeline(ctx, c.Proxy, fmt.Sprintf("//home/bench/processes-%d", rand.IntN(1000000)),
		Options{Tablets: pr.partitions, CountPartitions: pr.countPartitions, Finite: true})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	if err := p.Load(ctx, words); err != nil {
		b.Fatal(err)
	}
	if err := p.Create(ctx); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := p.Start(ctx); err != nil {
		b.Fatal(err)
	}
	procs := startRuntimeProcesses(b, c.Proxy, p.Path, pr.workers)
	defer killAll(procs)
	// Polled as finiteRun's runtime polls: every 20 ms.
	deadline := time.Now().Add(10 * time.Minute)
	dp := dataPath{p: p, start: start, want: int64(len(words))}
	for {
		for _, pr := range procs {
			if pr.Exited() {
				b.Fatalf("%s exited; its log:\n%s", pr.Name, pr.Log())
			}
		}
		s := p.State(ctx)
		dp.poll(ctx, s == ytstore.StateCompleted)
		if s == ytstore.StateCompleted {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("pipeline %s not completed within 10m (state %q, %d of %d counted)", p.Path, s, dp.seen, len(words))
		}
		time.Sleep(20 * time.Millisecond)
	}
	counted = dp.counted
	var last error
	e2e.Eventually(b, 2*time.Minute, func() (bool, string) {
		elapsed = time.Since(start)
		last = p.CheckExact(ctx, want)
		return last == nil, fmt.Sprint(last)
	})
	if counted == 0 {
		counted = elapsed
	}
	return elapsed, counted
}

// startRuntimeProcesses starts the runtime of the pipeline at path as processes: one `yt-flow
// controller` (the first of the returned processes) and workers `yt-flow worker`.
func startRuntimeProcesses(b *testing.B, proxy, path string, workers int) []*e2e.Proc {
	procs := []*e2e.Proc{e2e.Start(b, "controller", "controller", "--proxy", proxy, "--path", path)}
	for i := range workers {
		id := fmt.Sprintf("worker-%d", i)
		procs = append(procs, e2e.Start(b, id, "worker", "--proxy", proxy, "--path", path, "--id", id))
	}
	return procs
}

// killAll kills procs (by pid; the harness waits for each).
func killAll(procs []*e2e.Proc) {
	for _, p := range procs {
		p.Kill()
	}
}
