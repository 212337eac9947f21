package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytstore"
)

// envInt reads a positive integer from the environment, def when unset or invalid.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// params of a benchmark run, from the environment.
type params struct {
	messages, words int     // BENCH_MESSAGES, BENCH_WORDS: finite throughput input
	durable         bool    // BENCH_MEMORY=1 turns the server's DataDir off
	latencySeconds  int     // BENCH_LATENCY_SECONDS: measured part of the latency run
	rate            float64 // BENCH_RATE: msgs/s of latency and recovery runs (default half of exactly_once); BENCH_LOW_RATE: a second latency run (100)
	workers         int     // BENCH_WORKERS: in-process workers
	partitions      int     // BENCH_PARTITIONS: input queue tablets (= split partitions)
	countPartitions int     // BENCH_COUNT_PARTITIONS: partitions of the keyed count (BENCH_PARTITIONS)
}

func loadParams() params {
	return params{
		messages:        envInt("BENCH_MESSAGES", 100000),
		words:           envInt("BENCH_WORDS", 1000),
		durable:         os.Getenv("BENCH_MEMORY") != "1",
		latencySeconds:  envInt("BENCH_LATENCY_SECONDS", 15),
		rate:            float64(envInt("BENCH_RATE", 0)),
		workers:         envInt("BENCH_WORKERS", 2),
		partitions:      envInt("BENCH_PARTITIONS", 2),
		countPartitions: envInt("BENCH_COUNT_PARTITIONS", envInt("BENCH_PARTITIONS", 2)),
	}
}

// writeHeapProfile writes the heap profile of this process to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// startCPUProfile writes a CPU profile to path until the returned function is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}

// cpuTime is the user+system CPU time of this process so far (ytlocal, controller and
// workers all run in it in the throughput runs).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadAvg is the first three fields of /proc/loadavg ("" when unreadable): the machine is
// shared, so each figure is logged with the load around it.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// medians collects per-iteration figures by unit and reports each one's median, so that a
// run with -benchtime Nx reports a typical iteration rather than the last one (every
// iteration is logged too).
type medians map[string][]float64

func (m medians) add(v float64, unit string) { m[unit] = append(m[unit], v) }

func (m medians) report(b *testing.B) {
	for unit, vs := range m {
		slices.Sort(vs)
		b.ReportMetric(vs[len(vs)/2], unit)
	}
}

// startServer starts an in-process ytlocal (durable in a temp dir unless BENCH_MEMORY=1),
// closed when the benchmark ends at the latest; iterations close theirs (closeServer) when
// they end, so that the data of earlier iterations (kept in memory, and written to disk)
// does not slow later ones down.
func startServer(tb testing.TB, durable bool) *ytlocal.Server {
	tb.Helper()
	cfg := ytlocal.Config{InProcess: os.Getenv("BENCH_TCP") != "1"}
	if durable {
		cfg.DataDir = filepath.Join(tb.TempDir(), "ytlocal")
	}
	srv, err := ytlocal.Start(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	if durable {
		serverDirs.Store(srv, cfg.DataDir)
	}
	tb.Cleanup(func() { closeServer(srv) })
	return srv
}

// serverDirs maps the durable servers of startServer to their data directories.
var serverDirs sync.Map

// closeServer closes srv and removes its data directory: the log files of an iteration
// would otherwise stay in the page cache and on disk until the benchmark ends, and their
// writeback slow the fsyncs of the iterations after it.
func closeServer(srv *ytlocal.Server) {
	_ = srv.Close()
	if dir, ok := serverDirs.LoadAndDelete(srv); ok {
		_ = os.RemoveAll(dir.(string))
	}
}

// closeAtReturn is for defer: it closes srv when the iteration's function returns.
func closeAtReturn(srv *ytlocal.Server) func() {
	return func() { closeServer(srv) }
}

// inputWords returns n words drawn from a vocabulary of size words, and their counts.
func inputWords(n, words int, seed uint64) ([]string, map[string]int64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := make([]string, n)
	want := map[string]int64{}
	for i := range out {
		out[i] = fmt.Sprintf("w%04d", rng.IntN(words))
		want[out[i]]++
	}
	return out, want
}

func newPipeline(tb testing.TB, proxy, name string, o Options) *Pipeline {
	tb.Helper()
	p, err := NewPipeline(context.Background(), proxy, fmt.Sprintf("//home/bench/%s-%d", name, rand.IntN(1000000)), o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.Close)
	return p
}

// dataPath finds when the result table of a finite run first counted every input message
// (want), polled with the run's state. The sum over the table costs the server a scan of it:
// it is read every fifth poll (100 ms at finiteRun's 20 ms) until it reaches 90 % of the
// input, then at every poll, so that measuring the data path does not take much of the CPU
// the pipeline runs on.
type dataPath struct {
	p           *Pipeline
	start       time.Time
	want        int64
	polls, seen int64
	counted     time.Duration // 0 until every message is counted
}

// poll is one poll; completed says the pipeline reported completion.
func (d *dataPath) poll(ctx context.Context, completed bool) {
	d.polls++
	if d.counted != 0 || !(d.polls%5 == 1 || d.seen*10 >= d.want*9 || completed) {
		return
	}
	if n, err := d.p.Counted(ctx); err == nil {
		if d.seen = n; n >= d.want {
			d.counted = time.Since(d.start)
		}
	}
}

// finiteRun runs a finite word-count pipeline over words with the in-process runtime at
// runtimeProxy and returns the time from Start (which stores the specs of a pipeline created
// before the clock starts) to "completed with exact sinks" (with
// atLeastOnce: sinks holding at least the expected counts), the part of it until the
// controller first reported the pipeline working, the part until the result table first
// counted every input message (the data path; the rest is the completion protocol: status
// reports and controller cycles), and how many messages the table counted more than once (0
// unless atLeastOnce). When after is not nil it is called once the sinks are checked, before
// the runtime stops (for counting proxies).
func finiteRun(tb testing.TB, p *Pipeline, runtimeProxy string, workers int, words []string, want map[string]int64, atLeastOnce bool, after func()) (elapsed, startup, counted time.Duration, extra int64) {
	tb.Helper()
	ctx := context.Background()
	if err := p.Load(ctx, words); err != nil {
		tb.Fatal(err)
	}
	// The pipeline node and its internal tables are created before the clock starts, as the
	// raw baseline's tables are: the run times starting the pipeline, not setting it up.
	if err := p.Create(ctx); err != nil {
		tb.Fatal(err)
	}
	start := time.Now()
	if prefix := os.Getenv("BENCH_DATAPATH_PROFILE"); prefix != "" {
		// A CPU profile of this run from Start to the check of the sinks, one file per
		// run: PREFIX.<unix nanoseconds> (merge them with go tool pprof -proto).
		stop, err := startCPUProfile(fmt.Sprintf("%s.%d", prefix, time.Now().UnixNano()))
		if err != nil {
			tb.Fatal(err)
		}
		defer stop()
	}
	if err := p.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	if os.Getenv("BENCH_CPU_SAMPLE") == "1" {
		// The process's CPU use in each 100 ms of the run, in percent of one core: how busy
		// the run keeps the machine's cores, and when it does not.
		stop := make(chan struct{})
		done := make(chan []string)
		go func() {
			var busy []string
			last, lastT := cpuTime(), time.Now()
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					done <- busy
					return
				case <-tick.C:
					c, t := cpuTime(), time.Now()
					busy = append(busy, fmt.Sprintf("%.0f", 100*float64(c-last)/float64(t.Sub(lastT))))
					last, lastT = c, t
				}
			}
		}()
		defer func() {
			close(stop)
			tb.Logf("%s: CPU %% per 100 ms: %s", p.Path, strings.Join(<-done, " "))
		}()
	}
	rt := StartRuntime(runtimeProxy, p.Path, workers)
	defer rt.Stop()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	dp := dataPath{p: p, start: start, want: int64(len(words))}
	// Once every message is counted only the completion protocol is left: the state is
	// looked at every 2 ms instead of 20, so that the run's end is timed within 2 ms of the
	// controller's state change, not up to 20 ms after it.
	every := func() time.Duration {
		if dp.counted != 0 {
			return 2 * time.Millisecond
		}
		return 20 * time.Millisecond
	}
	err := rt.WaitUntilEvery(wctx, every, func() (bool, error) {
		s := p.State(wctx)
		if startup == 0 && (s == ytstore.StateWorking || s == ytstore.StateCompleted) {
			startup = time.Since(start)
		}
		dp.poll(wctx, s == ytstore.StateCompleted)
		return s == ytstore.StateCompleted, nil
	})
	counted = dp.counted
	if err == nil {
		var last error // the last check's own verdict, not a cut-off call
		// The run ends when a check that starts after completion finds exact sinks: the
		// time the check takes to read them (~0.13 s for 100 000 messages) is the
		// benchmark's, not the pipeline's.
		var checkStart time.Time
		err = rt.WaitUntil(wctx, func() (bool, error) {
			var err error
			checkStart = time.Now()
			if atLeastOnce {
				extra, err = p.CheckAtLeast(wctx, want)
			} else {
				err = p.CheckExact(wctx, want)
			}
			if wctx.Err() == nil {
				last = err
			}
			return err == nil, last
		})
		if err != nil {
			err = fmt.Errorf("%w; sinks: %v", err, last)
		}
		elapsed = checkStart.Sub(start)
	}
	if err != nil {
		tb.Fatalf("pipeline %s: %v (state %q)", p.Path, err, p.State(ctx))
	}
	if after != nil {
		after()
	}
	if counted == 0 {
		counted = elapsed
	}
	return elapsed, startup, counted, extra
}

// e2eCountPartitions is the count partitions of the e2e fault test's pipeline.
const e2eCountPartitions = 4

// pairedRun is one paired benchmark: b.N pairs of a raw iteration and an exactly-once
// iteration whose count runs in countPartitions partitions, in alternating order.
func pairedRun(b *testing.B, pr params, countPartitions int, words []string, want map[string]int64) {
	m := medians{}
	for i := range b.N {
		var raw float64
		measureRaw := func() {
			rawElapsed, _ := rawPasses(b, pr, fmt.Sprintf("paired-raw%d", i), 1000, words, want)
			raw = float64(pr.messages*rawPassCount) / rawElapsed.Seconds()
		}
		// The order alternates from pair to pair (raw first in even pairs), so that
		// whatever one run leaves behind in the process (heap size, memory returned to
		// the system) weighs on each side equally often.
		rawFirst := i%2 == 0
		if rawFirst {
			measureRaw()
		}
		srv := startServer(b, pr.durable)
		p := newPipeline(b, srv.Addr(), fmt.Sprintf("paired%d", i), Options{Tablets: pr.partitions, CountPartitions: countPartitions, Finite: true})
		e, _, c, _ := finiteRun(b, p, srv.Addr(), pr.workers, words, want, false, nil)
		closeServer(srv)
		if !rawFirst {
			measureRaw()
		}
		order := "raw first"
		if !rawFirst {
			order = "exactly-once first"
		}
		eo, counted := float64(pr.messages)/e.Seconds(), float64(pr.messages)/c.Seconds()
		b.Logf("pair %d (%s): raw %.0f msgs/s, exactly-once %.0f msgs/s (%.2fx), counted %.0f msgs/s (%.2fx)", i, order, raw, eo, eo/raw, counted, counted/raw)
		m.add(raw, "raw_msgs/s")
		m.add(eo, "exactly_once_msgs/s")
		m.add(eo/raw, "x_raw")
		m.add(counted/raw, "counted_x_raw")
	}
	m.report(b)
}

// rawPassCount is how many passes over the input one raw iteration makes, each into fresh
// tables: one pass takes a fraction of a second, several make the figure less sensitive to
// a scheduling hiccup.
const rawPassCount = 5

// rawPasses runs one raw iteration on its own server: rawPassCount passes of WriteRaw over
// words in calls of batch rows, each checked against want; it returns their wall and CPU time.
func rawPasses(b *testing.B, pr params, name string, batch int, words []string, want map[string]int64) (elapsed, cpu time.Duration) {
	srv := startServer(b, pr.durable)
	defer closeServer(srv) // an iteration's data must not weigh on the next (GC scans it)
	for pass := range rawPassCount {
		p := newPipeline(b, srv.Addr(), fmt.Sprintf("%s-%d", name, pass), Options{})
		start, cpu0 := time.Now(), cpuTime()
		if err := WriteRaw(context.Background(), p, words, batch); err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(start)
		cpu += cpuTime() - cpu0
		got, err := p.Totals(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		for w, n := range want {
			if got[w] != n {
				b.Fatalf("raw: %s = %d, want %d", w, got[w], n)
			}
		}
	}
	return elapsed, cpu
}

// BenchmarkPipeline measures, side by side in one run, the word-count pipeline's throughput
// in exactly-once and at-least-once mode against the raw SDK baseline, its latency at a
// steady rate, the rows it writes to YTsaurus per message, and its recovery after kill -9
// of a worker process. Run it with -benchtime 1x (each iteration is a full pipeline run);
// see the package doc for the command and the environment knobs (BENCH_*).
func BenchmarkPipeline(b *testing.B) {
	pr := loadParams()
	words, want := inputWords(pr.messages, pr.words, 1)
	rates := map[string]float64{}
	b.Logf("input: %d messages over %d words; durable server %v; %d in-process workers; load average %s", pr.messages, pr.words, pr.durable, pr.workers, loadAvg())

	// raw writes in calls of 1000 rows, as many as an epoch takes from one input at most by
	// default (max_rows_per_batch); raw_batch4000 in calls of 4000, the counterpart of
	// exactly_once_batch4000.
	for _, rawMode := range []struct {
		name  string
		batch int
	}{{"raw", 1000}, {"raw_batch4000", 4000}} {
		b.Run(rawMode.name, func(b *testing.B) {
			var total, cpu time.Duration
			for i := range b.N {
				e, c := rawPasses(b, pr, fmt.Sprintf("%s%d", rawMode.name, i), rawMode.batch, words, want)
				total, cpu = total+e, cpu+c
			}
			rates[rawMode.name] = float64(pr.messages*b.N*rawPassCount) / total.Seconds()
			b.ReportMetric(rates[rawMode.name], "msgs/s")
			b.ReportMetric(cpu.Seconds()*1e6/float64(pr.messages*b.N*rawPassCount), "cpu_us/msg")
			b.Logf("%s: %.0f msgs/s, load average %s", rawMode.name, rates[rawMode.name], loadAvg())
		})
	}

	for _, mode := range []struct {
		name, processing string
		swift            bool
		maxRows          int
	}{
		{"exactly_once", "", false, 0},
		{"at_least_once", "at_least_once_consistent", false, 0},
		{"exactly_once_swift_source", "", true, 0},
		// The same as exactly_once with max_rows_per_batch = 4000 instead of the default 1000:
		// fewer, larger epochs, and fewer writes per message (one count row per word and epoch).
		{"exactly_once_batch4000", "", false, 4000},
	} {
		b.Run(mode.name, func(b *testing.B) {
			var total, startup, counted, cpu time.Duration
			var extra int64
			for i := range b.N {
				cpu0 := cpuTime()
				srv := startServer(b, pr.durable)
				p := newPipeline(b, srv.Addr(), fmt.Sprintf("%s%d", mode.name, i), Options{
					Tablets: pr.partitions, CountPartitions: pr.countPartitions, ProcessingMode: mode.processing, Finite: true, SwiftSource: mode.swift,
					MaxRowsPerBatch: mode.maxRows,
				})
				e, s, c, x := finiteRun(b, p, srv.Addr(), pr.workers, words, want, mode.processing != "", nil)
				total, startup, counted, extra = total+e, startup+s, counted+c, extra+x
				cpu += cpuTime() - cpu0 // includes loading the input (a small part)
				b.Logf("%s iteration %d: counted after %v, completed with exact sinks after %v", mode.name, i, c.Round(time.Millisecond), e.Round(time.Millisecond))
				closeServer(srv)
			}
			rates[mode.name] = float64(pr.messages*b.N) / total.Seconds()
			b.ReportMetric(rates[mode.name], "msgs/s")
			b.ReportMetric(startup.Seconds()/float64(b.N), "startup_s")
			b.ReportMetric(float64(pr.messages*b.N)/(total-startup).Seconds(), "after_startup_msgs/s")
			// The data path alone: from the spec until the result table counted every message.
			rates[mode.name+"_counted"] = float64(pr.messages*b.N) / counted.Seconds()
			b.ReportMetric(rates[mode.name+"_counted"], "counted_msgs/s")
			b.ReportMetric((total-counted).Seconds()/float64(b.N), "completion_s")
			b.ReportMetric(cpu.Seconds()*1e6/float64(pr.messages*b.N), "cpu_us/msg")
			b.ReportMetric(float64(extra)/float64(b.N), "counted_twice")
			b.Logf("%s: %.0f msgs/s, %d messages counted more than once, load average %s", mode.name, rates[mode.name], extra/int64(b.N), loadAvg())
			if raw := rates["raw"]; raw > 0 {
				b.ReportMetric(rates[mode.name]/raw, "x_raw")
				b.ReportMetric(rates[mode.name+"_counted"]/raw, "counted_x_raw")
			}
			if raw := rates["raw_batch4000"]; raw > 0 && mode.maxRows == 4000 {
				b.ReportMetric(rates[mode.name]/raw, "x_raw_batch4000")
				b.ReportMetric(rates[mode.name+"_counted"]/raw, "counted_x_raw_batch4000")
			}
		})
	}

	// The same finite exactly-once run with the runtime as processes (one `yt-flow
	// controller`, pr.workers `yt-flow worker`) on a `yt-flow local --data-dir`: the setup of
	// latency_processes, whose peak this is. Its × raw is against the in-process raw above.
	b.Run("exactly_once_processes", func(b *testing.B) {
		var total, counted time.Duration
		for range b.N {
			e, c := finiteRunProcesses(b, pr, words, want)
			total, counted = total+e, counted+c
		}
		rates["exactly_once_processes"] = float64(pr.messages*b.N) / total.Seconds()
		rates["exactly_once_processes_counted"] = float64(pr.messages*b.N) / counted.Seconds()
		b.ReportMetric(rates["exactly_once_processes"], "msgs/s")
		b.ReportMetric(rates["exactly_once_processes_counted"], "counted_msgs/s")
		if raw := rates["raw"]; raw > 0 {
			b.ReportMetric(rates["exactly_once_processes"]/raw, "x_raw")
			b.ReportMetric(rates["exactly_once_processes_counted"]/raw, "counted_x_raw")
		}
		b.Logf("exactly_once_processes: %.0f msgs/s (counted %.0f), load average %s", rates["exactly_once_processes"], rates["exactly_once_processes_counted"], loadAvg())
	})

	// paired alternates one raw iteration and one exactly-once iteration and reports the
	// median of the pairs' ratios: the host's speed drifts by more than the figures above
	// differ (raw's iterations all run before exactly-once's), a pair shares its moment.
	b.Run("paired", func(b *testing.B) { pairedRun(b, pr, pr.countPartitions, words, want) })
	// The same with the count in four partitions, the shape of the pipeline of the e2e fault
	// test (TestExactlyOnceUnderFaults: two input tablets, four count partitions).
	if pr.countPartitions != e2eCountPartitions {
		b.Run("paired_count4", func(b *testing.B) { pairedRun(b, pr, e2eCountPartitions, words, want) })
	}

	rate := pr.rate
	if rate == 0 && rates["exactly_once"] > 0 {
		rate = rates["exactly_once"] / 2
	}
	if rate == 0 {
		rate = 200
	}

	b.Run("latency", func(b *testing.B) {
		m := medians{}
		for range b.N {
			benchLatency(b, m, pr, rate)
		}
		m.report(b)
	})
	// Half of the data path's peak: the counted rate excludes the completion protocol, so
	// it is the rate the pipeline sustains.
	if half := rates["exactly_once_counted"] / 2; half > 0 && pr.rate == 0 {
		b.Run("latency_half_counted", func(b *testing.B) {
			m := medians{}
			for range b.N {
				benchLatency(b, m, pr, half)
			}
			m.report(b)
		})
	}
	// The same with every part in its own process, at half of that setup's own peak (the
	// counted rate of exactly_once_processes; four processes on two cores sustain less than
	// the in-process runtime), or at BENCH_RATE.
	half := rates["exactly_once_processes_counted"] / 2
	if pr.rate > 0 {
		half = pr.rate
	}
	if half > 0 {
		b.Run("latency_processes", func(b *testing.B) {
			m := medians{}
			for range b.N {
				benchLatencyProcesses(b, m, pr, half)
			}
			m.report(b)
		})
	}
	low := float64(envInt("BENCH_LOW_RATE", 100))
	b.Run(fmt.Sprintf("latency_%.0f", low), func(b *testing.B) {
		m := medians{}
		for range b.N {
			benchLatency(b, m, pr, low)
		}
		m.report(b)
	})

	for _, mode := range []struct {
		name, processing string
		swift            bool
	}{
		{"writes_exactly_once", "", false},
		{"writes_at_least_once", "at_least_once_consistent", false},
		{"writes_exactly_once_swift_source", "", true},
	} {
		b.Run(mode.name, func(b *testing.B) {
			m := medians{}
			for i := range b.N {
				benchWrites(b, m, pr, fmt.Sprintf("%s%d", mode.name, i), mode.processing, mode.swift, words, want)
			}
			m.report(b)
		})
	}

	// Recovery runs on the processes too: at half of their own peak, as latency_processes
	// (or at BENCH_RATE).
	recoveryRate := rate
	if half > 0 {
		recoveryRate = half
	}
	b.Run("recovery", func(b *testing.B) {
		m := medians{}
		for range b.N {
			benchRecovery(b, m, recoveryRate, pr.words)
		}
		m.report(b)
	})

	if raw := rates["raw"]; raw > 0 {
		b.Logf("ratios in this run: exactly_once/raw = %.2f, at_least_once/raw = %.2f (raw %.0f msgs/s, exactly_once %.0f, at_least_once %.0f)",
			rates["exactly_once"]/raw, rates["at_least_once"]/raw, raw, rates["exactly_once"], rates["at_least_once"])
	}
	if raw4k := rates["raw_batch4000"]; raw4k > 0 && rates["raw"] > 0 {
		b.Logf("with max_rows_per_batch = 4000: exactly_once_batch4000/raw = %.2f, /raw_batch4000 = %.2f (raw_batch4000 %.0f msgs/s, exactly_once_batch4000 %.0f)",
			rates["exactly_once_batch4000"]/rates["raw"], rates["exactly_once_batch4000"]/raw4k, raw4k, rates["exactly_once_batch4000"])
	}
}

// latencyBatch and latencyBackoff configure the latency runs' pipeline: batch_duration, and
// the smallest empty_batch_backoff the spec allows, as a user who wants low latency sets it
// (it bounds how long an idle source job waits before it polls its queue again).
const (
	latencyBatch   = 100 * time.Millisecond
	latencyBackoff = 100 * time.Millisecond
)

// benchLatency runs an infinite exactly-once pipeline (batch_duration 100ms,
// empty_batch_backoff 100ms) fed at rate msgs/s and reports the p50/p99/max latency from
// queue write to the output queue (async sink) for messages written after a 3s warm-up.
// ytlocal, the controller and the workers run in the benchmark process.
func benchLatency(b *testing.B, m medians, pr params, rate float64) {
	ctx := context.Background()
	srv := startServer(b, pr.durable)
	defer closeAtReturn(srv)()
	p := newPipeline(b, srv.Addr(), "latency", Options{Tablets: pr.partitions, CountPartitions: pr.countPartitions, BatchDuration: latencyBatch, EmptyBatchBackoff: latencyBackoff})
	if err := p.Start(ctx); err != nil {
		b.Fatal(err)
	}
	rt := StartRuntime(srv.Addr(), p.Path, pr.workers)
	defer rt.Stop()
	measureLatency(b, m, pr, p, rate, cpuTime, rt.Err)
}

// measureLatency waits until p is working, feeds it at rate msgs/s for 3s of warm-up and
// pr.latencySeconds of measurement, waits until every measured message is visible and
// reports the figures. cpu is the CPU time of the processes under test; failed reports an
// error of a runtime component.
func measureLatency(b *testing.B, m medians, pr params, p *Pipeline, rate float64, cpu func() time.Duration, failed func() error) {
	ctx := context.Background()
	waitUntil := func(timeout time.Duration, cond func() bool) {
		deadline := time.Now().Add(timeout)
		for !cond() && time.Now().Before(deadline) {
			if err := failed(); err != nil {
				b.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// The pipeline must be working before the clock starts.
	waitUntil(time.Minute, func() bool { return p.State(ctx) == ytstore.StateWorking })
	if s := p.State(ctx); s != ytstore.StateWorking {
		b.Fatalf("pipeline state %q after a minute, want working", s)
	}
	lctx, stopPoll := context.WithCancel(ctx)
	defer stopPoll()
	loadStart := time.Now()
	load, stopWriting := StartLoad(lctx, p, rate, pr.words)
	defer load.Close()
	warm := loadStart.Add(3 * time.Second)
	end := warm.Add(time.Duration(pr.latencySeconds) * time.Second)
	time.Sleep(time.Until(warm))
	cpu0 := cpu()
	time.Sleep(time.Until(end)) // the load runs for a fixed wall-clock time
	busy := (cpu() - cpu0).Seconds() / time.Since(warm).Seconds()
	if f := os.Getenv("BENCH_HEAP"); f != "" {
		// What the process holds at the end of the window: run, read the figures, then look.
		runtime.GC()
		if err := writeHeapProfile(f); err != nil {
			b.Log(err)
		}
	}
	stopWriting()
	waitUntil(2*time.Minute, func() bool {
		ok, _ := load.AllBeforeVisible(end)
		return ok || load.Err() != nil
	})
	if err := load.Err(); err != nil {
		b.Fatal(err)
	}
	lat, missing := load.Latencies(warm, end)
	sent, _ := load.Progress()
	p50, p99 := Percentile(lat, 0.5), Percentile(lat, 0.99)
	target := 2*latencyBatch + 100*time.Millisecond
	tlat, _ := load.TableLatencies(warm, end)
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	b.Logf("latency at %.0f msgs/s (batch_duration %v): %d messages measured, %d missing; output queue (async sink) p50 %v, p99 %v, max %v; target p99 ≤ %v: %v; result table (sync sink, %d seen) p50 %v, p99 %v; CPU of the system under test %.2f cores busy; load average %s",
		rate, latencyBatch, len(lat), missing, ms(p50), ms(p99), ms(Percentile(lat, 1)), target, p99 <= target, len(tlat), ms(Percentile(tlat, 0.5)), ms(Percentile(tlat, 0.99)), busy, loadAvg())
	var worst []string
	for _, w := range load.WorstWindows(warm, end, 250*time.Millisecond, 6) {
		worst = append(worst, fmt.Sprintf("%.2fs: %v", w.Start.Seconds(), ms(w.Max)))
	}
	b.Logf("latency at %.0f msgs/s: slowest 250ms windows of send time (from the end of the warm-up): %s", rate, strings.Join(worst, ", "))
	if missing > 0 {
		b.Errorf("%d of the measured messages never reached the sink", missing)
	}
	m.add(float64(sent)/end.Sub(loadStart).Seconds(), "offered_msgs/s")
	m.add(rate, "target_msgs/s")
	m.add(busy, "cpu_cores_busy")
	m.add(float64(p50.Milliseconds()), "p50_ms")
	m.add(float64(p99.Milliseconds()), "p99_ms")
	m.add(float64(Percentile(lat, 1).Milliseconds()), "max_ms")
	m.add(float64(Percentile(tlat, 0.5).Milliseconds()), "table_p50_ms")
	m.add(float64(Percentile(tlat, 0.99).Milliseconds()), "table_p99_ms")
}

// benchWrites runs the finite pipeline with the runtime behind a counting proxy and
// reports rows written to YTsaurus per input message, against Flow's budget of about 2
// per input message plus 1 per output.
func benchWrites(b *testing.B, m medians, pr params, name, processing string, swift bool, words []string, want map[string]int64) {
	srv := startServer(b, pr.durable)
	defer closeAtReturn(srv)()
	cp, err := StartCountingProxy(srv.Addr())
	if err != nil {
		b.Fatal(err)
	}
	defer cp.Close()
	p := newPipeline(b, srv.Addr(), name, Options{Tablets: pr.partitions, CountPartitions: pr.countPartitions, ProcessingMode: processing, Finite: true, SwiftSource: swift})
	before := cp.Tally()
	var d Tally
	_, _, _, _ = finiteRun(b, p, cp.Addr(), pr.workers, words, want, processing != "", func() { d = cp.Tally().Sub(before) })
	outputs := int64(0)
	for off := int64(0); ; {
		rows, err := p.ReadOutput(context.Background(), off, 10000)
		if err != nil {
			b.Fatal(err)
		}
		if len(rows) == 0 {
			break
		}
		outputs += int64(len(rows))
		off = rows[len(rows)-1].Offset + 1
	}
	n := float64(len(words))
	if d.BadBodies > 0 {
		b.Errorf("%d row-command bodies could not be decoded", d.BadBodies)
	}
	b.Logf("%s: %d messages, %d outputs; %d rows written (%.2f/msg; budget 2/msg + 1/output = %.2f/msg); %d requests (%.2f/msg)\n  %s",
		name, len(words), outputs, d.WrittenRows(), float64(d.WrittenRows())/n, (2*n+float64(outputs))/n, d.Requests(), float64(d.Requests())/n, d)
	m.add(float64(d.WrittenRows())/n, "rows/msg")
	m.add((2*n+float64(outputs))/n, "budget_rows/msg")
	m.add(float64(d.Rows["insert_rows"])/n, "insert/msg")
	m.add(float64(d.Rows["delete_rows"])/n, "delete/msg")
	m.add(float64(d.Rows["push_queue_producer"])/n, "push/msg")
	m.add(float64(d.Requests())/n, "requests/msg")
}
