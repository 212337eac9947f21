package app

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode"

	"github.com/ytflow/yt-flow/controller"
	"github.com/ytflow/yt-flow/job"
	"github.com/ytflow/yt-flow/monitoring"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/status"
	"github.com/ytflow/yt-flow/ytlocal/ytlocaltest"
	"github.com/ytflow/yt-flow/ytstore"
)

// scraped is one scrape of /metrics: every sample by its series as the text format prints it
// (name{label="value",…}, labels sorted by name), and every family's type.
type scraped struct {
	samples map[string]float64
	types   map[string]string
	text    string
}

// scrape fetches url and parses the Prometheus text format.
func scrape(t *testing.T, url string) scraped {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v\n%s", url, resp.Status, err, body)
	}
	s := scraped{samples: map[string]float64{}, types: map[string]string{}, text: string(body)}
	sc := bufio.NewScanner(strings.NewReader(s.text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			s.types[f[2]] = f[3]
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("%s: bad sample %q: %v", url, line, err)
		}
		s.samples[line[:i]] = v
	}
	return s
}

// value returns the sample of a series, failing the test when it is absent.
func (s scraped) value(t *testing.T, series string) float64 {
	t.Helper()
	v, ok := s.samples[series]
	if !ok {
		t.Fatalf("no sample %s in:\n%s", series, s.yfFamilies())
	}
	return v
}

// yfFamilies is the yt_flow_ part of the scrape, for failure messages.
func (s scraped) yfFamilies() string {
	var b strings.Builder
	for _, l := range strings.Split(s.text, "\n") {
		if strings.HasPrefix(l, "yt_flow_") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// requireFamilies checks that the scrape has every family with its type.
func (s scraped) requireFamilies(t *testing.T, want map[string]string) {
	t.Helper()
	for name, typ := range want {
		if got, ok := s.types[name]; !ok || got != typ {
			t.Errorf("family %s: type %q (present %v), want %s", name, got, ok, typ)
		}
	}
}

// waitUntil polls cond every 50ms until it holds or timeout passes (then the test fails,
// naming what it waited for).
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// setUpExample creates an example's tables and input on proxy and starts its pipeline, as
// `yt-flow run` does; it returns the pipeline's store.
func setUpExample(t *testing.T, proxy, example string) (*ytstore.Store, *spec.Config) {
	t.Helper()
	ctx := context.Background()
	specFile := filepath.Join("..", "examples", example, "pipeline.yson")
	cfg, err := spec.ParseConfigFile(specFile)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(specFile)
	if err != nil {
		t.Fatal(err)
	}
	static, dynamic, err := specBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: proxy, Path: cfg.Path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	setup, err := loadSetup(filepath.Join("..", "examples", example, "local.yson"))
	if err != nil {
		t.Fatal(err)
	}
	if err := setup.apply(ctx, st, func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	if _, err := startPipeline(ctx, st, static, dynamic); err != nil {
		t.Fatal(err)
	}
	return st, cfg
}

// inProcessPipeline runs a controller and two workers in the test process against proxy,
// each process part with its own monitoring endpoint on a random loopback port, until the
// test ends; the controller's metrics read the source backlog through st. It returns the
// two /metrics URLs (controller, workers).
func inProcessPipeline(t *testing.T, st *ytstore.Store, proxy, path string) (controllerURL, workersURL string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	cm := monitoring.NewController(nil)
	reportBacklog(cm, st)
	csrv, err := monitoring.New(monitoring.Config{}, cm)
	if err != nil {
		t.Fatal(err)
	}
	wm := monitoring.NewWorker(nil)
	wsrv, err := monitoring.New(monitoring.Config{}, wm)
	if err != nil {
		t.Fatal(err)
	}
	for _, srv := range []*monitoring.Server{csrv, wsrv} {
		wg.Go(func() {
			if err := srv.Run(ctx); err != nil {
				t.Errorf("monitoring server: %v", err)
			}
		})
	}
	for i := range 2 {
		w := job.NewWorker(job.Config{Proxy: proxy, Path: path, WorkerID: fmt.Sprintf("metrics-%d", i)})
		wm.Add(w)
		wg.Go(func() {
			if err := w.Run(ctx); err != nil {
				t.Errorf("worker %s: %v", w.ID(), err)
			}
		})
		select {
		case <-w.Ready():
		case <-time.After(30 * time.Second):
			t.Fatalf("worker %s did not register", w.ID())
		}
	}
	wg.Go(func() {
		if err := controller.Run(ctx, controller.Config{Proxy: proxy, Path: path, Observe: cm.Observe}); err != nil {
			t.Errorf("controller: %v", err)
		}
	})
	return "http://" + csrv.Addr() + "/metrics", "http://" + wsrv.Addr() + "/metrics"
}

// inputWords counts the words of an example input by SplitWords's rule.
func inputWords(t *testing.T, file string) int {
	t.Helper()
	n := 0
	for _, w := range expectedAllWords(t, file) {
		n += int(w.count)
	}
	return n
}

// expectedAllWords is expectedTopWords without the top-ten cut.
func expectedAllWords(t *testing.T, file string) []wordCount {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	for _, w := range strings.FieldsFunc(strings.ToLower(string(data)), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		counts[w]++
	}
	var out []wordCount
	for w, n := range counts {
		out = append(out, wordCount{w, n})
	}
	return out
}

// waitCompleted waits until the pipeline's state is completed and the controller at url
// has reported a cycle that observed the tables after the completion (its current_epoch
// passed the one that first reported completed), and returns that scrape.
func waitCompleted(t *testing.T, st *ytstore.Store, url string) scraped {
	t.Helper()
	waitUntil(t, 2*time.Minute, "pipeline completed", func() bool {
		a, err := st.Attributes(context.Background())
		return err == nil && a.PipelineState == ytstore.StateCompleted
	})
	const completed = `yt_flow_pipeline_state{state="completed"}`
	var first float64
	var last scraped
	waitUntil(t, time.Minute, "the controller's metrics to show a cycle after the completion", func() bool {
		last = scrape(t, url)
		if last.samples[completed] != 1 {
			return false
		}
		epoch := last.samples["yt_flow_current_epoch"]
		if first == 0 {
			first = epoch
		}
		return epoch > first
	})
	return last
}

var controllerFamilies = map[string]string{
	"yt_flow_controller_leader": "gauge", "yt_flow_pipeline_state": "gauge", "yt_flow_spec_version": "gauge",
	"yt_flow_dynamic_spec_version": "gauge", "yt_flow_current_epoch": "gauge", "yt_flow_computation_count": "gauge",
	"yt_flow_worker_count": "gauge", "yt_flow_version_mismatch_worker_count": "gauge", "yt_flow_partition_count": "gauge", "yt_flow_job_status": "gauge",
	"yt_flow_computation_input_lag": "gauge", "yt_flow_computation_in_flight": "gauge",
	"yt_flow_system_watermark_seconds": "gauge", "yt_flow_stream_time_lag_seconds": "gauge",
	"yt_flow_stream_event_time_lag_seconds": "gauge", "yt_flow_stream_count_lag": "gauge",
}

var workerFamilies = map[string]string{
	"yt_flow_worker_jobs": "gauge", "yt_flow_computation_messages_total": "counter",
	"yt_flow_computation_messages_per_second": "gauge", "yt_flow_computation_epochs_total": "counter",
	"yt_flow_epoch_part_seconds_total": "counter", "yt_flow_duplicates_dropped_total": "counter",
	"yt_flow_dedup_lookups_skipped_total": "counter", "yt_flow_fenced_commits_total": "counter",
	"yt_flow_commits_not_applied_total": "counter", "yt_flow_commits_unknown_total": "counter",
	"yt_flow_at_most_once_dropped_total": "counter", "yt_flow_payload_mismatches_total": "counter",
	"yt_flow_alignment_holds_total": "counter", "yt_flow_pushes_total": "counter",
	"yt_flow_computation_inbox_messages": "gauge", "yt_flow_computation_outbox_messages": "gauge",
	"go_goroutines": "gauge", "process_cpu_seconds_total": "counter",
}

// TestMetricsOfWordCount runs the word count with a controller and two workers in process,
// each part with its monitoring endpoint, and scrapes /metrics over HTTP from 127.0.0.1 once
// the pipeline completed: every family is there; the controller reports itself leader, the
// pipeline completed, the spec versions and, per computation and state, the partitions and
// jobs `yt-flow status` reads; the workers report that split processed each input line once
// and count each word once (exactly-once: duplicates are dropped, not counted), epochs and
// epoch part times for both computations, and pushes from split to count. /debug/pprof/
// serves the profiles.
func TestMetricsOfWordCount(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a pipeline")
	}
	ctx := context.Background()
	proxy := ytlocaltest.New(t)
	st, cfg := setUpExample(t, proxy, "word_count")
	curl, wurl := inProcessPipeline(t, st, proxy, cfg.Path)
	for _, u := range []string{curl, wurl} {
		if !strings.HasPrefix(u, "http://127.0.0.1:") {
			t.Errorf("monitoring endpoint %s is not on loopback", u)
		}
	}

	c := waitCompleted(t, st, curl)
	c.requireFamilies(t, controllerFamilies)
	attrs, err := st.Attributes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for series, want := range map[string]float64{
		"yt_flow_controller_leader":                        1,
		`yt_flow_pipeline_state{state="working"}`:          0,
		`yt_flow_pipeline_state{state="completed"}`:        1,
		"yt_flow_spec_version":                             float64(attrs.SpecVersion),
		"yt_flow_dynamic_spec_version":                     float64(attrs.DynamicSpecVersion),
		"yt_flow_computation_count":                        2,
		`yt_flow_worker_count{state="alive"}`:              2,
		`yt_flow_stream_count_lag{stream_id="__united__"}`: 0,
	} {
		if got := c.value(t, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}

	// Partitions and jobs per computation and state: what `yt-flow status` reads.
	snap, err := status.Read(ctx, st, 0)
	if err != nil {
		t.Fatal(err)
	}
	aggs := map[string]status.Computation{}
	for _, c := range snap.Computations() {
		aggs[c.ID] = c
	}
	for _, comp := range []string{"split", "count"} {
		a, ok := aggs[comp]
		if !ok || a.Partitions == 0 {
			t.Fatalf("status shows no partitions of %s", comp)
		}
		for state, want := range map[string]int{
			ytstore.PartitionActive:    a.Partitions - a.Retiring - a.Completed,
			ytstore.PartitionDraining:  a.Retiring,
			ytstore.PartitionCompleted: a.Completed,
		} {
			series := fmt.Sprintf(`yt_flow_partition_count{computation_id=%q,state=%q}`, comp, state)
			if got := c.value(t, series); got != float64(want) {
				t.Errorf("%s = %v, yt-flow status shows %d", series, got, want)
			}
		}
		jobs := map[string]int{}
		for _, j := range snap.Jobs {
			if j.ComputationID != comp {
				continue
			}
			if s, ok := snap.Statuses[j.JobID]; ok {
				jobs[s.State]++
			} else {
				jobs[monitoring.JobStarting]++
			}
		}
		for _, state := range []string{monitoring.JobStarting, ytstore.JobRunning, ytstore.JobFailed, ytstore.JobCompleted} {
			series := fmt.Sprintf(`yt_flow_job_status{computation_id=%q,status=%q}`, comp, state)
			if got := c.value(t, series); got != float64(jobs[state]) {
				t.Errorf("%s = %v, yt-flow status shows %d", series, got, jobs[state])
			}
		}
	}

	// The source stream's count lag is the backlog `yt-flow status` shows: nothing unread.
	if n, ok := snap.Backlog["lines"]; !ok || c.value(t, `yt_flow_stream_count_lag{stream_id="lines"}`) != float64(n) {
		t.Errorf("count lag of lines: %v, yt-flow status shows %d (known: %v)", c.samples[`yt_flow_stream_count_lag{stream_id="lines"}`], n, ok)
	}
	c.value(t, `yt_flow_stream_count_lag{stream_id="__united_source__"}`)

	w := scrape(t, wurl)
	w.requireFamilies(t, workerFamilies)
	input := filepath.Join("..", "examples", "word_count", "input.txt")
	for series, want := range map[string]float64{
		`yt_flow_computation_messages_total{computation_id="split"}`: float64(nonEmptyLines(t, input)),
		`yt_flow_computation_messages_total{computation_id="count"}`: float64(inputWords(t, input)),
		`yt_flow_payload_mismatches_total{computation_id="count"}`:   0,
		`yt_flow_at_most_once_dropped_total{computation_id="count"}`: 0,
	} {
		if got := w.value(t, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	for _, comp := range []string{"split", "count"} {
		if got := w.value(t, fmt.Sprintf(`yt_flow_computation_epochs_total{computation_id=%q}`, comp)); got <= 0 {
			t.Errorf("%s applied %v epochs", comp, got)
		}
		for _, part := range job.EpochPartNames {
			w.value(t, fmt.Sprintf(`yt_flow_epoch_part_seconds_total{computation_id=%q,part=%q}`, comp, part))
		}
		if got := w.value(t, fmt.Sprintf(`yt_flow_epoch_part_seconds_total{computation_id=%q,part="commit"}`, comp)); got <= 0 {
			t.Errorf("%s spent %vs committing", comp, got)
		}
		for _, fam := range []string{"yt_flow_duplicates_dropped_total", "yt_flow_fenced_commits_total", "yt_flow_commits_not_applied_total", "yt_flow_commits_unknown_total"} {
			w.value(t, fmt.Sprintf(`%s{computation_id=%q}`, fam, comp))
		}
	}
	var pushes float64
	for _, tr := range []string{"local", "in_process", "http"} {
		pushes += w.value(t, fmt.Sprintf(`yt_flow_pushes_total{computation_id="split",transport=%q}`, tr))
	}
	if pushes == 0 {
		t.Errorf("split pushed nothing to count")
	}

	base := strings.TrimSuffix(wurl, "/metrics")
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/goroutine?debug=1"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine") {
			t.Errorf("GET %s: %s\n%.300s", path, resp.Status, body)
		}
	}
}

// TestMetricsOfAsyncSink runs the sessions example (its sum computation delivers to an async
// queue sink) in process and checks, once it completed, that the workers report the
// batches the sink held and its failed deliveries.
func TestMetricsOfAsyncSink(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a pipeline")
	}
	proxy := ytlocaltest.New(t)
	st, cfg := setUpExample(t, proxy, "sessions")
	curl, wurl := inProcessPipeline(t, st, proxy, cfg.Path)
	waitCompleted(t, st, curl)
	w := scrape(t, wurl)
	w.requireFamilies(t, map[string]string{"yt_flow_sink_delivered_total": "counter", "yt_flow_sink_delivery_failures_total": "counter"})
	if got := w.value(t, `yt_flow_sink_delivered_total{computation_id="sum",sink="output"}`); got <= 0 {
		t.Errorf("the output sink held %v batches", got)
	}
	w.value(t, `yt_flow_sink_delivery_failures_total{computation_id="sum",sink="output"}`)
}

// metricsURL matches the line a command logs when its monitoring endpoint is up.
var metricsURL = regexp.MustCompile(`monitoring at (http://[^\s]+/metrics)`)

// TestMonitoringPortOfTheBinary builds yt-flow and runs `yt-flow controller` and
// `yt-flow worker` as processes with --monitoring-port 0 against a ytlocal of the test
// process; each logs the URL of its endpoint (a random loopback port), which serves the
// controller's and the worker's metrics while the word count runs to completion. The
// processes are stopped by their pids.
func TestMonitoringPortOfTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs a pipeline")
	}
	bin := filepath.Join(t.TempDir(), "yt-flow")
	if out, err := goCmd("..", "build", "-o", bin, "./cmd/yt-flow").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/yt-flow: %v\n%s", err, out)
	}
	proxy := ytlocaltest.New(t)
	st, cfg := setUpExample(t, proxy, "word_count")

	start := func(name string, args ...string) (url string) {
		t.Helper()
		logPath := filepath.Join(t.TempDir(), name+".log")
		f, err := os.Create(logPath)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, append(args, "--proxy", proxy, "--path", cfg.Path, "--monitoring-port", "0")...)
		cmd.Env = userEnv()
		cmd.Stdout, cmd.Stderr = f, f
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := cmd.Process.Pid
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait(); f.Close() }()
		t.Cleanup(func() {
			// SIGTERM stops it gracefully; SIGKILL if it has not exited within a minute.
			_ = syscall.Kill(pid, syscall.SIGTERM)
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("%s (pid %d) exited with %v", name, pid, err)
				}
			case <-time.After(time.Minute):
				_ = syscall.Kill(pid, syscall.SIGKILL)
				<-exited
				t.Errorf("%s (pid %d) did not stop on SIGTERM", name, pid)
			}
			if t.Failed() {
				log, _ := os.ReadFile(logPath)
				t.Logf("--- log of %s (pid %d) ---\n%s", name, pid, log)
			}
		})
		waitUntil(t, time.Minute, name+" to log its monitoring URL", func() bool {
			log, _ := os.ReadFile(logPath)
			if m := metricsURL.FindSubmatch(log); m != nil {
				url = string(m[1])
				return true
			}
			return false
		})
		if !strings.HasPrefix(url, "http://127.0.0.1:") || strings.HasSuffix(url, ":0/metrics") {
			t.Errorf("%s serves monitoring at %s, want a random port on 127.0.0.1", name, url)
		}
		return url
	}
	wurl := start("worker", "worker")
	curl := start("controller", "controller")

	c := waitCompleted(t, st, curl)
	c.requireFamilies(t, controllerFamilies)
	if got := c.value(t, "yt_flow_controller_leader"); got != 1 {
		t.Errorf("yt_flow_controller_leader = %v, want 1", got)
	}
	if got := c.value(t, `yt_flow_worker_count{state="alive"}`); got != 1 {
		t.Errorf("yt_flow_worker_count{state=\"alive\"} = %v, want 1", got)
	}
	w := scrape(t, wurl)
	w.requireFamilies(t, workerFamilies)
	input := filepath.Join("..", "examples", "word_count", "input.txt")
	if got, want := w.value(t, `yt_flow_computation_messages_total{computation_id="count"}`), float64(inputWords(t, input)); got != want {
		t.Errorf("count processed %v messages, want %v (the words of the input)", got, want)
	}
}

// TestMonitoringFlags: --monitoring-port outside -1…65535 is a usage error of controller,
// worker and run, also when it comes from the environment.
func TestMonitoringFlags(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		args []string
	}{
		{nil, []string{"controller", "--proxy", "x", "--path", "//p", "--monitoring-port", "70000"}},
		{nil, []string{"worker", "--proxy", "x", "--path", "//p", "--monitoring-port", "-2"}},
		{nil, []string{"run", "--spec", "x.yson", "--monitoring-port", "65536"}},
		{map[string]string{"YT_FLOW_MONITORING_PORT": "99999"}, []string{"worker", "--proxy", "x", "--path", "//p"}},
	} {
		code, _, errs := runWithEnv(tc.env, tc.args...)
		if code != 2 || !strings.Contains(errs, "--monitoring-port") {
			t.Errorf("%v %v: exit %d, stderr %q; want 2 naming --monitoring-port", tc.env, tc.args, code, errs)
		}
	}
}
