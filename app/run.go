package app

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"go.ytsaurus.tech/library/go/core/log"

	"github.com/ytflow/yt-flow/controller"
	"github.com/ytflow/yt-flow/job"
	"github.com/ytflow/yt-flow/monitoring"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytstore"
)

func init() {
	register(&command{
		name:     "run",
		examples: []string{"yt-flow run --spec examples/word_count/pipeline.yson", "yt-flow run --spec pipeline.yson --proxy my-cluster --workers 4 --status-listen 127.0.0.1:0"},
		summary:  "run a pipeline end to end: embedded YTsaurus (or --proxy), controller and workers in one process",
		setup:    setupRun,
	})
}

// exitInterrupted is the exit code of a run stopped by SIGINT/SIGTERM (128 + SIGINT).
const exitInterrupted = 130

// runOptions are the flags of `yt-flow run`.
type runOptions struct {
	specFile string
	proxy    string
	workers  int
	dataDir  string
	setup    string
	logFile  string
	progress time.Duration
	// statusListen is --status-listen: where the controller serves the status page ("" none).
	statusListen string
	monitor      monitoringFlags
	// kafkaEmbedded is --kafka-embedded: a kfake broker in the process (see embeddedKafka),
	// loaded from kafkaInput (--kafka-input, default input.txt next to the spec).
	kafkaEmbedded bool
	// clickHouseEmbedded is --clickhouse-embedded (see embeddedClickHouse).
	clickHouseEmbedded bool
	kafkaInput         string
}

func setupRun(fs *flag.FlagSet, env *environ) runFunc {
	var o runOptions
	fs.StringVar(&o.specFile, "spec", "", "runner config file (pipeline.yson) with path, spec and dynamic_spec (required)")
	addConnFlags(fs, &o.proxy, "YTsaurus HTTP proxy; default $YT_PROXY, then the config's proxy, else an embedded server")
	fs.IntVar(&o.workers, "workers", 2, "number of workers to run")
	fs.StringVar(&o.dataDir, "data-dir", "yt-flow-data", "data folder of the embedded server (kept between runs)")
	fs.StringVar(&o.setup, "setup", "", "setup file with user tables and input (default: local.yson next to the spec, embedded server only)")
	fs.StringVar(&o.logFile, "log", "", "log file (default: DATA_DIR/yt-flow.log, or stderr with --proxy)")
	fs.DurationVar(&o.progress, "progress", time.Second, "how often progress is printed (0: never)")
	fs.StringVar(&o.statusListen, "status-listen", "", statusListenUsage)
	fs.BoolVar(&o.clickHouseEmbedded, "clickhouse-embedded", false, "start a ClickHouse server (chDB; $CHDB_LIB names libchdb.so) for the spec's ClickHouse sinks, run the setup's clickhouse statements on it and print its clickhouse results at the end")
	fs.BoolVar(&o.kafkaEmbedded, "kafka-embedded", false, "start a Kafka broker (kfake) in the process for the spec's Kafka source and sinks, load --kafka-input into the source topic, stop once it is consumed and print the sink topics")
	fs.StringVar(&o.kafkaInput, "kafka-input", "", "with --kafka-embedded: file whose lines are the source topic's records (default: input.txt next to the spec)")
	o.monitor.define(fs)
	return func(ctx context.Context, s *settings) int {
		if o.specFile == "" || fs.NArg() != 0 || o.workers < 1 {
			fmt.Fprintln(env.stderr, "usage: yt-flow run --spec FILE [--proxy P] [--workers N] [--data-dir DIR] [--setup FILE] [--monitoring-port N]")
			return 2
		}
		if err := o.monitor.check(); err != nil {
			fmt.Fprintf(env.stderr, "yt-flow run: %v\n", err)
			return 2
		}
		token, err := s.token()
		if err != nil {
			return failf(env.stderr, "run: %v", err)
		}
		return (&runner{env: env, o: o, token: token}).run(ctx)
	}
}

// runner is one `yt-flow run` invocation.
type runner struct {
	env    *environ
	o      runOptions
	token  string
	start  time.Time
	logger log.Structured
	kafka  *embeddedKafka      // --kafka-embedded, else nil
	ch     *embeddedClickHouse // --clickhouse-embedded, else nil
}

func (r *runner) say(format string, args ...any) {
	fmt.Fprintf(r.env.stdout, format+"\n", args...)
}

func (r *runner) run(ctx context.Context) int {
	r.start = time.Now()
	cfg, err := spec.ParseConfigFile(r.o.specFile)
	if err != nil {
		return failf(r.env.stderr, "run: %s: %v", r.o.specFile, err)
	}
	if refuseUnrunnable(r.env.stderr, "run", r.o.specFile, cfg) {
		return 1
	}
	data, err := os.ReadFile(r.o.specFile)
	if err != nil {
		return failf(r.env.stderr, "run: %v", err)
	}
	static, dynamic, err := specBytes(data)
	if err != nil {
		return failf(r.env.stderr, "run: %s: %v", r.o.specFile, err)
	}
	if r.o.kafkaEmbedded {
		input := cmp.Or(r.o.kafkaInput, filepath.Join(filepath.Dir(r.o.specFile), "input.txt"))
		if r.kafka, static, err = startEmbeddedKafka(ctx, static, input); err != nil {
			return failf(r.env.stderr, "run: %v", err)
		}
		defer r.kafka.close()
		r.say("embedded Kafka (kfake) at %s: topic %s loaded from %s", strings.Join(r.kafka.cluster.ListenAddrs(), ","), r.kafka.in, input)
	}
	if r.o.clickHouseEmbedded {
		if r.ch, err = startEmbeddedClickHouse(ctx, r.o.dataDir); err != nil {
			return failf(r.env.stderr, "run: %v", err)
		}
		defer r.ch.close()
		var n int
		if static, n, err = pointClickHouseSinks(static, r.ch.tcp); err != nil {
			return failf(r.env.stderr, "run: %v", err)
		}
		r.say("embedded ClickHouse (chDB) at %s (HTTP %s), data in %s: %d sink(s) pointed at it", r.ch.tcp, r.ch.http, filepath.Dir(r.ch.logPath), n)
	}
	proxy := cmp.Or(r.o.proxy, cfg.Proxy) // --proxy, $YT_PROXY or the config file, then the spec's
	embedded := proxy == ""

	// Logs go to a file next to the data so that the console shows progress only.
	logPath := r.o.logFile
	if logPath == "" && embedded {
		logPath = filepath.Join(r.o.dataDir, "yt-flow.log")
	}
	logOut := r.env.stderr
	if logPath != "" {
		if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
			return failf(r.env.stderr, "run: %v", err)
		}
		f, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return failf(r.env.stderr, "run: %v", err)
		}
		defer f.Close()
		logOut = f
	}
	r.logger = newStderrLogger(logOut, log.InfoLevel)

	if embedded {
		// The controller and the workers share this process with the server: their
		// requests reach it as calls (ytlocal.Config.InProcess); it listens on loopback as
		// well, for anything outside the process.
		srv, err := ytlocal.Start(ctx, ytlocal.Config{DataDir: r.o.dataDir, Logger: r.logger.Logger(), InProcess: true})
		if err != nil {
			return failf(r.env.stderr, "run: start embedded YTsaurus in %s: %v", r.o.dataDir, err)
		}
		defer srv.Close()
		proxy = srv.Addr()
		r.say("embedded YTsaurus at %s, data in %s, logs in %s", proxy, r.o.dataDir, logPath)
	} else {
		r.say("YTsaurus proxy %s", proxy)
	}

	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: proxy, Path: cfg.Path, Token: r.token})
	if err != nil {
		return failf(r.env.stderr, "run: %v", err)
	}
	defer st.Close()
	if r.kafka != nil {
		if err := r.kafka.fresh(ctx, st, cfg.Path, r.o.dataDir); err != nil {
			return failf(r.env.stderr, "run: %v", err)
		}
	}

	setup, err := r.loadSetup(embedded)
	if err != nil {
		return failf(r.env.stderr, "run: %v", err)
	}
	if setup != nil {
		if err := setup.apply(ctx, st, r.say); err != nil {
			return failf(r.env.stderr, "run: setup: %v", err)
		}
		if r.ch != nil {
			if err := r.ch.prepare(ctx, setup.ClickHouse); err != nil {
				return failf(r.env.stderr, "run: %v", err)
			}
		}
	}
	if err := st.CreatePipeline(ctx); err != nil {
		return failf(r.env.stderr, "run: %v", err)
	}
	if setup != nil {
		if err := setup.applyStates(ctx, st, cfg.Path, cfg.Spec, r.say); err != nil {
			return failf(r.env.stderr, "run: %v", err)
		}
	}
	if err := storeClusters(ctx, r.env, st, cfg); err != nil {
		return failf(r.env.stderr, "run: %v", err)
	}
	summary, err := startPipeline(ctx, st, static, dynamic)
	if err != nil {
		return failf(r.env.stderr, "run: %v", err)
	}
	r.say("%s", summary)

	// One monitoring endpoint serves the controller's and every worker's metrics.
	controllerMetrics, workerMetrics := monitoring.NewController(nil), monitoring.NewWorker(nil)
	reportBacklog(controllerMetrics, st)
	mon, err := r.o.monitor.start(ctx, controllerMetrics, workerMetrics)
	if err != nil {
		return failf(r.env.stderr, "run: %v", err)
	}
	defer mon.stop()
	if mon != nil {
		r.say("monitoring at %s", mon.url())
	}

	// Controller and workers run until the pipeline completes or the user interrupts.
	runCtx, stopAll := context.WithCancel(context.WithoutCancel(ctx))
	defer stopAll()
	var wg sync.WaitGroup
	errs := make(chan error, r.o.workers+2)
	for i := range r.o.workers {
		w := job.NewWorker(job.Config{
			Proxy: proxy, Token: r.token, Path: cfg.Path,
			WorkerID: fmt.Sprintf("run-%d-%d", os.Getpid(), i), Logger: r.logger, FlowCoreVersion: flowCoreVersion(r.logger),
			// The workers share this process: pushes between them are handed over in memory.
			InProcessPeers: true,
		})
		workerMetrics.Add(w)
		stopped := make(chan struct{})
		wg.Go(func() {
			defer close(stopped)
			if err := w.Run(runCtx); err != nil {
				errs <- fmt.Errorf("worker %s: %w", w.ID(), err)
			}
		})
		// The controller starts once the workers have registered: one that cycled before the
		// last registration would place every job on the first workers and move some of them
		// a cycle later, restarting them (an at_least_once pipeline sees that as duplicates).
		select {
		case <-w.Ready():
		case <-stopped: // its error is in errs
		case <-ctx.Done(): // interrupted: watch below reports it
		}
	}
	ccfg := controller.Config{Proxy: proxy, Token: r.token, Path: cfg.Path, Logger: r.logger, Observe: controllerMetrics.Observe,
		FlowCoreVersion: flowCoreVersion(r.logger)}
	if r.o.statusListen != "" {
		page, err := openStatusPage(ctx, r.o.statusListen, proxy, r.token, cfg.Path, "", r.logger)
		if err != nil {
			stopAll()
			wg.Wait()
			return failf(r.env.stderr, "run: %v", err)
		}
		ccfg.Address = page.url
		r.say("status page at %s", page.url)
		wg.Go(func() {
			if err := page.Run(runCtx); err != nil {
				errs <- fmt.Errorf("status page: %w", err)
			}
		})
	}
	wg.Go(func() {
		if err := controller.Run(runCtx, ccfg); err != nil {
			errs <- fmt.Errorf("controller: %w", err)
		}
	})
	code := r.watch(ctx, st, errs)
	stopAll()
	wg.Wait()
	switch code {
	case 0:
		if r.kafka != nil {
			r.say("pipeline %s consumed topic %s and stopped in %.1fs", cfg.Path, r.kafka.in, time.Since(r.start).Seconds())
			if err := r.kafka.report(context.WithoutCancel(ctx), r.say); err != nil {
				return failf(r.env.stderr, "run: read the Kafka output: %v", err)
			}
		} else {
			r.say("pipeline %s completed in %.1fs", cfg.Path, time.Since(r.start).Seconds())
		}
		r.report(context.WithoutCancel(ctx), st, setup)
		if r.ch != nil && setup != nil {
			if err := r.ch.report(context.WithoutCancel(ctx), setup.ClickHouse, r.say); err != nil {
				return failf(r.env.stderr, "run: ClickHouse results: %v", err)
			}
		}
	case exitInterrupted:
		// An unbounded pipeline ends with Ctrl-C: show what it has produced so far.
		r.report(context.WithoutCancel(ctx), st, setup)
	}
	return code
}

// loadSetup finds the setup file: --setup, else local.yson next to the spec when the
// server is embedded (on a real cluster the user's tables are the user's business).
func (r *runner) loadSetup(embedded bool) (*setupFile, error) {
	path := r.o.setup
	if path == "" {
		if !embedded {
			return nil, nil
		}
		path = filepath.Join(filepath.Dir(r.o.specFile), "local.yson")
		if _, err := os.Stat(path); err != nil {
			return nil, nil
		}
	}
	return loadSetup(path)
}

// watchPoll is how often watch looks at the pipeline: a finite pipeline's end is reported
// within it, while progress lines come at most once per --progress period.
const watchPoll = 100 * time.Millisecond

// watch prints progress until the pipeline completes (0), the user interrupts (the
// pipeline is stopped gracefully first; 130), or a component fails (1).
func (r *runner) watch(ctx context.Context, st *ytstore.Store, errs <-chan error) int {
	tick := time.NewTicker(min(watchPoll, cmp.Or(r.o.progress, time.Second)))
	defer tick.Stop()
	lastErrors := map[string]string{}
	lastLine := ""
	lastPrint := time.Now()
	var rate progressRate
	terminal := isTerminal(r.env.stdout)
	if terminal {
		defer fmt.Fprintln(r.env.stdout) // end the rewritten line
	}
	for {
		select {
		case err := <-errs:
			fmt.Fprintf(r.env.stderr, "yt-flow: run: %v\n", err)
			return 1
		case <-ctx.Done():
			r.say("interrupted: stopping the pipeline gracefully (up to 30s)")
			return r.stopGracefully(st)
		case <-tick.C:
		}
		attrs, err := st.Attributes(ctx)
		if err != nil {
			continue // transient; the next tick retries
		}
		statuses, _ := st.JobStatuses(ctx)
		for _, s := range statuses {
			if s.Error != "" && lastErrors[s.JobID] != s.Error {
				fmt.Fprintf(r.env.stderr, "job %s: %s\n", s.JobID, s.Error)
			}
			lastErrors[s.JobID] = s.Error
		}
		if attrs.PipelineState == ytstore.StateCompleted {
			return 0
		}
		// A Kafka source never ends: an embedded-Kafka run stops once its input is consumed.
		if r.kafka != nil && r.kafka.drained(ctx, time.Now()) {
			return r.stopDrained(st)
		}
		if r.o.progress > 0 && time.Since(lastPrint) >= r.o.progress {
			line := progressLine(attrs.PipelineState, statuses)
			if src := rate.line(readSourceProgress(ctx, st, attrs), time.Now()); src != "" {
				line = src + " | " + line
			}
			if line != lastLine {
				if terminal {
					// One line, rewritten in place.
					fmt.Fprintf(r.env.stdout, "\r\033[K[%5.1fs] %s", time.Since(r.start).Seconds(), line)
				} else {
					r.say("[%5.1fs] %s", time.Since(r.start).Seconds(), line)
				}
				lastLine, lastPrint = line, time.Now()
			}
		}
	}
}

// stopGracefully asks the controller to stop the pipeline and waits for it, so that the
// next run resumes from a clean, committed point (committed data is safe either way).
func (r *runner) stopGracefully(st *ytstore.Store) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := st.SetTargetState(ctx, ytstore.TargetStopped); err != nil {
		fmt.Fprintf(r.env.stderr, "yt-flow: run: stop: %v\n", err)
		return exitInterrupted
	}
	for ctx.Err() == nil {
		if attrs, err := st.Attributes(ctx); err == nil && attrs.PipelineState == ytstore.StateStopped {
			r.say("pipeline stopped; run the same command again to resume")
			return exitInterrupted
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.say("pipeline did not stop within 30s; committed data is safe, the next run resumes from it")
	return exitInterrupted
}

// progressLine summarises job statuses per computation: jobs, epochs, in-flight messages.
func progressLine(state string, statuses []ytstore.JobStatus) string {
	type agg struct {
		jobs, done            int
		epochs, inFlight, lag int64
	}
	per := map[string]*agg{}
	for _, s := range statuses {
		comp, _, _ := strings.Cut(s.JobID, "/")
		a := per[comp]
		if a == nil {
			a = &agg{}
			per[comp] = a
		}
		a.jobs++
		if s.State == ytstore.JobCompleted {
			a.done++
		}
		a.epochs += s.Epoch
		a.inFlight += s.InFlight
		a.lag += s.InputLag
	}
	names := make([]string, 0, len(per))
	for n := range per {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := []string{"state=" + cmp.Or(state, "starting")}
	for _, n := range names {
		a := per[n]
		p := fmt.Sprintf("%s: %d jobs, %d epochs, %d in flight", n, a.jobs, a.epochs, a.inFlight)
		if a.lag > 0 {
			p += fmt.Sprintf(", lag %d", a.lag)
		}
		if a.done > 0 {
			p += fmt.Sprintf(", %d done", a.done)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " | ")
}

// report prints where the results are and the setup's result queries.
func (r *runner) report(ctx context.Context, st *ytstore.Store, setup *setupFile) {
	if setup == nil {
		return
	}
	for _, t := range setup.Tables {
		if t.Kind == ytstore.UserSortedTable || (t.Kind == ytstore.UserQueue && !isInput(setup, t.Path)) {
			r.say("results: %s", t.Path)
		}
	}
	for _, q := range setup.Results {
		rows, err := st.SelectRows(ctx, q.Query)
		if err != nil {
			fmt.Fprintf(r.env.stderr, "yt-flow: run: result query %q: %v\n", q.Query, err)
			continue
		}
		r.say("\n%s:", cmp.Or(q.Title, q.Query))
		r.say("%s", formatRows(rows, q.Query))
	}
}

func isInput(s *setupFile, path string) bool {
	for _, in := range s.Inputs {
		if in.Queue == path {
			return true
		}
	}
	return false
}

// formatRows renders rows as an aligned text table, columns in the order the query names
// them (then alphabetically).
func formatRows(rows []map[string]any, query string) string {
	if len(rows) == 0 {
		return "  (no rows)"
	}
	var cols []string
	seen := map[string]bool{}
	for _, row := range rows {
		keys := make([]string, 0, len(row))
		for k := range row {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !seen[k] {
				seen[k] = true
				cols = append(cols, k)
			}
		}
	}
	pos := func(c string) int {
		if i := strings.Index(query, c); i >= 0 {
			return i
		}
		return len(query)
	}
	sort.SliceStable(cols, func(i, j int) bool { return pos(cols[i]) < pos(cols[j]) })
	width := make([]int, len(cols))
	cells := make([][]string, len(rows))
	for i, c := range cols {
		width[i] = len(c)
	}
	for j, row := range rows {
		cells[j] = make([]string, len(cols))
		for i, c := range cols {
			v := fmt.Sprint(row[c])
			if row[c] == nil {
				v = "#"
			}
			cells[j][i] = v
			width[i] = max(width[i], len(v))
		}
	}
	var b strings.Builder
	line := func(vals []string) {
		b.WriteString(" ")
		for i, v := range vals {
			fmt.Fprintf(&b, " %-*s", width[i], v)
		}
		b.WriteString("\n")
	}
	line(cols)
	for _, c := range cells {
		line(c)
	}
	return strings.TrimRight(b.String(), "\n")
}
