package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/examples/sessions"
	"github.com/ytflow/yt-flow/ytstore"
)

// sessionsParams of a BenchmarkSessions run, from the environment (besides loadParams').
type sessionsParams struct {
	params
	events, users int // BENCH_SESSIONS_EVENTS (50000), BENCH_SESSIONS_USERS (1000)
}

func loadSessionsParams() sessionsParams {
	return sessionsParams{
		params: loadParams(),
		events: envInt("BENCH_SESSIONS_EVENTS", 50000),
		users:  envInt("BENCH_SESSIONS_USERS", 1000),
	}
}

func newSessions(tb testing.TB, proxy, name string, o SessionsOptions) *Sessions {
	tb.Helper()
	s, err := NewSessions(context.Background(), proxy, fmt.Sprintf("//home/bench/%s-%d", name, rand.IntN(1000000)), o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}

// sessionsRun is the outcome of one finite sessions run.
type sessionsRun struct {
	elapsed, startup time.Duration // spec stored → completed with a checked output; → first seen working
	completed        time.Duration // spec stored → first seen completed
	// counted is spec stored → the sum stage's committed states first seen counting every
	// event (0 when not seen: states are polled every 100ms and cleared at completion).
	counted      time.Duration
	extra        int64 // events counted more than once (at-least-once only)
	fullDedup    int64 // rows of input_messages once completed
	compactDedup int64 // rows of compact_input_messages once completed
}

// sessionsFiniteRun runs a finite sessions pipeline over events with the in-process runtime
// at runtimeProxy and times it from storing the spec (input already loaded) to
// `completed` with an exact output queue (atLeastOnce: every user with at least its events).
// When after is not nil it is called once the output is checked, before the runtime stops.
func sessionsFiniteRun(tb testing.TB, s *Sessions, runtimeProxy string, workers int, events []Event, want map[string]Total, atLeastOnce bool, after func()) sessionsRun {
	tb.Helper()
	ctx := context.Background()
	if err := s.Load(ctx, events); err != nil {
		tb.Fatal(err)
	}
	var r sessionsRun
	start := time.Now()
	if err := s.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	rt := StartRuntime(runtimeProxy, s.Path, workers)
	defer rt.Stop()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	var polled time.Time
	err := rt.WaitUntil(wctx, func() (bool, error) {
		st := s.State(wctx)
		if r.startup == 0 && (st == ytstore.StateWorking || st == ytstore.StateCompleted) {
			r.startup = time.Since(start)
		}
		if r.counted == 0 && st != ytstore.StateCompleted && time.Since(polled) >= 100*time.Millisecond {
			polled = time.Now()
			if states, err := s.SumStates(wctx); err == nil {
				var n int64
				for _, t := range states {
					n += t.Events
				}
				if n >= int64(len(events)) {
					r.counted = time.Since(start)
				}
			}
		}
		return st == ytstore.StateCompleted, nil
	})
	if err == nil {
		r.completed = time.Since(start)
		var last error // the last check's own verdict, not a cut-off call
		err = rt.WaitUntil(wctx, func() (bool, error) {
			var err error
			if atLeastOnce {
				r.extra, err = s.CheckAtLeast(wctx, want)
			} else {
				err = s.CheckExact(wctx, want)
			}
			if wctx.Err() == nil {
				last = err
			}
			return err == nil, last
		})
		if err != nil {
			err = fmt.Errorf("%w; output: %v", err, last)
		}
	}
	r.elapsed = time.Since(start)
	if err != nil {
		tb.Fatalf("pipeline %s: %v (state %q)", s.Path, err, s.State(ctx))
	}
	if after != nil {
		after()
	}
	if r.fullDedup, r.compactDedup, err = s.Store.DedupRowCounts(ctx); err != nil {
		tb.Fatal(err)
	}
	return r
}

// checkDedupIndex fails the benchmark or test when the dedup rows of a finite run are not in
// the index its options ask for. The controller's collection keeps rows for 30s below the
// watermark: a run longer than 25s may have lost some, and is only logged.
func checkDedupIndex(tb testing.TB, o SessionsOptions, r sessionsRun) {
	tb.Helper()
	if r.elapsed > 25*time.Second {
		tb.Logf("dedup rows after a %v run (collection may have started): %d full, %d compact", r.elapsed, r.fullDedup, r.compactDedup)
		return
	}
	switch {
	case o.ProcessingMode != "":
		if r.fullDedup+r.compactDedup != 0 {
			tb.Errorf("%s: %d full and %d compact dedup rows, want none", o.ProcessingMode, r.fullDedup, r.compactDedup)
		}
	case o.Dedup == DedupFull:
		if r.fullDedup == 0 || r.compactDedup != 0 {
			tb.Errorf("full dedup index: %d full and %d compact dedup rows", r.fullDedup, r.compactDedup)
		}
	default:
		if r.compactDedup == 0 || r.fullDedup != 0 {
			tb.Errorf("compact dedup index: %d full and %d compact dedup rows", r.fullDedup, r.compactDedup)
		}
	}
}

// sessionsModes are the finite runs of BenchmarkSessions.
var sessionsModes = []struct {
	name string
	opts SessionsOptions
}{
	{"exactly_once_compact", SessionsOptions{Dedup: DedupCompact}},
	{"exactly_once_full", SessionsOptions{Dedup: DedupFull}},
	{"at_least_once", SessionsOptions{ProcessingMode: "at_least_once_consistent"}},
}

// finiteOptions completes o with the shape every finite run shares: 2 input tablets, 2
// partitions of parse and sum.
func finiteOptions(o SessionsOptions) SessionsOptions {
	o.Tablets, o.ParsePartitions, o.SumPartitions, o.Finite = 2, 2, 2, true
	return o
}

// BenchmarkSessions measures, side by side in one run, the three-stage sessions pipeline
// (queue source → swift map ParseEvents → keyed SumByUser with state and timers → async
// queue sink): throughput with the compact and the full dedup index and in at-least-once
// mode against a raw SDK baseline, latency at half of the exactly-once peak, and the rows
// it writes to YTsaurus per event. Run it with -benchtime 1x or 2x (each iteration is a full
// pipeline run); see BENCHMARKS.md "Three-stage pipeline" for the command and the package doc for the knobs.
func BenchmarkSessions(b *testing.B) {
	pr := loadSessionsParams()
	events, want := SessionEvents(pr.events, pr.users, 1)
	rates := map[string]float64{} // to completed with a checked output
	sum := sessionsSummary{all: map[string]medians{}, tables: map[string]map[TableCommand]float64{}}

	b.Run("raw", func(b *testing.B) {
		const rawPasses = 5 // as the word-count raw: one pass takes a fraction of a second
		var total, cpu time.Duration
		m := medians{}
		for i := range b.N {
			srv := startServer(b, pr.durable)
			totalBefore, cpuBefore := total, cpu
			for pass := range rawPasses {
				s := newSessions(b, srv.Addr(), fmt.Sprintf("sraw%d-%d", i, pass), SessionsOptions{})
				start, cpu0 := time.Now(), cpuTime()
				if _, err := WriteRawSessions(context.Background(), s, events, 1000); err != nil {
					b.Fatal(err)
				}
				total += time.Since(start)
				cpu += cpuTime() - cpu0
				if err := checkRaw(context.Background(), s, want, len(events)); err != nil {
					b.Fatal(err)
				}
			}
			m.add(float64(pr.events*rawPasses)/(total-totalBefore).Seconds(), "msgs/s")
			m.add((cpu-cpuBefore).Seconds()*1e6/float64(pr.events*rawPasses), "cpu_us/msg")
			closeServer(srv)
		}
		sum.collect("raw", m)
		n := float64(pr.events * b.N * rawPasses)
		rates["raw"] = n / total.Seconds()
		b.ReportMetric(rates["raw"], "msgs/s")
		b.ReportMetric(cpu.Seconds()*1e6/n, "cpu_us/msg")
		b.Logf("raw: %.0f msgs/s, %.1f cpu-µs/msg, load average %s", rates["raw"], cpu.Seconds()*1e6/n, loadAvg())
	})

	for _, mode := range sessionsModes {
		b.Run(mode.name, func(b *testing.B) {
			var total, startup, counted, cpu time.Duration
			var extra, full, compact int64
			countedRuns := 0
			m := medians{}
			for i := range b.N {
				cpu0 := cpuTime()
				srv := startServer(b, pr.durable)
				o := finiteOptions(mode.opts)
				s := newSessions(b, srv.Addr(), fmt.Sprintf("%s%d", mode.name, i), o)
				r := sessionsFiniteRun(b, s, srv.Addr(), pr.workers, events, want, o.ProcessingMode != "", nil)
				cpu += cpuTime() - cpu0 // includes loading the input (a small part)
				checkDedupIndex(b, o, r)
				total, startup, extra = total+r.elapsed, startup+r.startup, extra+r.extra
				if r.counted > 0 {
					counted += r.counted
					countedRuns++
				}
				full, compact = full+r.fullDedup, compact+r.compactDedup
				n := float64(pr.events)
				m.add(n/r.elapsed.Seconds(), "msgs/s")
				if r.counted > 0 {
					m.add(n/r.counted.Seconds(), "to_sum_commit_msgs/s")
					m.add((r.elapsed - r.counted).Seconds(), "completion_tail_s")
				}
				m.add(r.startup.Seconds(), "startup_s")
				m.add((cpuTime()-cpu0).Seconds()*1e6/n, "cpu_us/msg")
				m.add(float64(r.extra), "counted_twice")
				m.add(float64(r.fullDedup)/n, "full_dedup_rows/msg")
				m.add(float64(r.compactDedup)/n, "compact_dedup_rows/msg")
				closeServer(srv)
			}
			sum.collect(mode.name, m)
			n := float64(pr.events * b.N)
			rates[mode.name] = n / total.Seconds()
			b.ReportMetric(rates[mode.name], "msgs/s")
			b.ReportMetric(startup.Seconds()/float64(b.N), "startup_s")
			b.ReportMetric(n/(total-startup).Seconds(), "after_startup_msgs/s")
			b.ReportMetric(cpu.Seconds()*1e6/n, "cpu_us/msg")
			countedRate, tail := 0.0, 0.0
			if countedRuns > 0 {
				countedRate = float64(pr.events*countedRuns) / counted.Seconds()
				tail = (total.Seconds() - counted.Seconds()*float64(b.N)/float64(countedRuns)) / float64(b.N)
				b.ReportMetric(countedRate, "to_sum_commit_msgs/s")
				b.ReportMetric(tail, "completion_tail_s")
			}
			b.ReportMetric(float64(extra)/float64(b.N), "counted_twice")
			b.ReportMetric(float64(full)/n, "full_dedup_rows/msg")
			b.ReportMetric(float64(compact)/n, "compact_dedup_rows/msg")
			if raw := rates["raw"]; raw > 0 {
				b.ReportMetric(rates[mode.name]/raw, "x_raw")
			}
			b.Logf("%s: %.0f msgs/s (%.3f× raw) to completed, %.0f msgs/s to every event counted at the sum stage (%d of %d runs seen), %.0f cpu-µs/msg, startup %.2fs, %d events counted more than once, dedup rows %d full + %d compact, load average %s",
				mode.name, rates[mode.name], rates[mode.name]/max(rates["raw"], 1), countedRate, countedRuns, b.N, cpu.Seconds()*1e6/n, startup.Seconds()/float64(b.N),
				extra/int64(b.N), full/int64(b.N), compact/int64(b.N), loadAvg())
		})
	}

	// The peak is the rate at which the sum stage commits a backlog (the completion tail is a
	// fixed cost of a finite run, not a rate the pipeline sustains).
	rate := pr.rate
	if rate == 0 {
		eo := sum.all["exactly_once_compact"]
		rate = cmp.Or(eo.median("to_sum_commit_msgs/s"), eo.median("msgs/s")) / 2
	}
	if rate == 0 {
		rate = 200
	}
	low := float64(envInt("BENCH_LOW_RATE", 100))
	for _, run := range []struct {
		name string
		rate float64
	}{{"latency", rate}, {fmt.Sprintf("latency_%.0f", low), low}} {
		b.Run(run.name, func(b *testing.B) {
			m := medians{}
			for range b.N {
				benchSessionsLatency(b, m, pr, run.rate)
			}
			sum.collect(run.name, m)
			m.report(b)
		})
	}

	for _, mode := range []struct {
		name string
		opts SessionsOptions
	}{
		{"writes_exactly_once", SessionsOptions{}},
		{"writes_at_least_once", SessionsOptions{ProcessingMode: "at_least_once_consistent"}},
	} {
		b.Run(mode.name, func(b *testing.B) {
			m := medians{}
			var byTable map[TableCommand]float64
			for i := range b.N {
				byTable = benchSessionsWrites(b, m, pr, fmt.Sprintf("%s%d", mode.name, i), finiteOptions(mode.opts), events, want)
			}
			sum.collect(mode.name, m)
			m.report(b)
			sum.tables[mode.name] = byTable
		})
	}

	// A parent benchmark's own log is not printed: the summary is a sub-benchmark's.
	logged := false
	b.Run("summary", func(b *testing.B) {
		for range b.N {
		}
		if logged {
			return
		}
		logged = true
		// Straight to stdout: the test framework keeps only 10 lines of a benchmark's log.
		fmt.Printf("\n=== BenchmarkSessions: the tables of BENCHMARKS.md \"Three-stage pipeline\" (commit %s, %s UTC, load average %s; %d events over %d users, durable server %v, %d in-process workers; figures are the median (min–max) over every iteration run)\n\n%s\n",
			commitOf(), time.Now().UTC().Format("2006-01-02 15:04"), loadAvg(), pr.events, len(want), pr.durable, pr.workers, sum.String())
	})
}

// sessionsSummary collects the figures of every iteration of every sub-benchmark (Go runs a
// sub-benchmark once with b.N = 1 before -benchtime Nx) and renders BENCHMARKS.md's tables.
type sessionsSummary struct {
	all    map[string]medians                  // by sub-benchmark name
	tables map[string]map[TableCommand]float64 // by writes run: rows per event by command and table (its last iteration)
}

func (s sessionsSummary) collect(name string, m medians) {
	a := s.all[name]
	if a == nil {
		a = medians{}
		s.all[name] = a
	}
	for unit, vs := range m {
		a[unit] = append(a[unit], vs...)
	}
}

func (s sessionsSummary) String() string {
	var b strings.Builder
	raw := s.all["raw"].median("msgs/s")
	ratio := func(v float64) string {
		if raw == 0 || v == 0 {
			return "—"
		}
		return fmt.Sprintf("%.3f", v/raw)
	}
	b.WriteString("| sub-benchmark | msgs/s to `completed` | × raw | msgs/s to sum commit | × raw | cpu µs/msg | completion tail s | dedup rows/msg (full + compact) |\n|---|---|---|---|---|---|---|---|\n")
	if m := s.all["raw"]; m != nil {
		fmt.Fprintf(&b, "| `raw` | %s | 1 | | | %s | | |\n", m.span("msgs/s"), m.span("cpu_us/msg"))
	}
	for _, mode := range sessionsModes {
		m := s.all[mode.name]
		if m == nil {
			continue
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s | %.2f + %.2f |\n", mode.name,
			m.span("msgs/s"), ratio(m.median("msgs/s")), m.span("to_sum_commit_msgs/s"), ratio(m.median("to_sum_commit_msgs/s")),
			m.span("cpu_us/msg"), m.span("completion_tail_s"), m.median("full_dedup_rows/msg"), m.median("compact_dedup_rows/msg"))
	}
	b.WriteString("\n| run | target msgs/s | offered msgs/s | sum commit p50 ms | p99 ms | max ms | output p50 ms | output p99 ms | cores busy |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, name := range sortedNames(s.all, "latency") {
		m := s.all[name]
		fmt.Fprintf(&b, "| `%s` | %.0f | %.0f | %s | %s | %s | %s | %s | %s |\n", name, m.median("target_msgs/s"), m.median("offered_msgs/s"),
			m.span("sum_p50_ms"), m.span("sum_p99_ms"), m.span("sum_max_ms"), m.span("output_p50_ms"), m.span("output_p99_ms"), m.span("cpu_cores_busy"))
	}
	b.WriteString("\n| mode | rows written / msg | insert | delete | push | outputs / msg | budget (2/msg + 1/output) | requests / msg |\n|---|---|---|---|---|---|---|---|\n")
	writes := sortedNames(s.all, "writes_")
	slices.Reverse(writes) // exactly-once first
	for _, name := range writes {
		m := s.all[name]
		fmt.Fprintf(&b, "| `%s` | %s | %.2f | %.2f | %.3f | %.3f | %.2f | %.3f |\n", name, m.span("rows/msg"), m.median("insert/msg"),
			m.median("delete/msg"), m.median("push/msg"), m.median("outputs/msg"), m.median("budget_rows/msg"), m.median("requests/msg"))
	}
	per := make([]map[TableCommand]float64, len(writes))
	for i, name := range writes {
		per[i] = s.tables[name]
	}
	b.WriteString("\n" + tableBreakdown(writes, per))
	return b.String()
}

// sortedNames returns the keys of m with the prefix, sorted.
func sortedNames(m map[string]medians, prefix string) []string {
	var out []string
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// tableBreakdown renders rows per event by table (rows) and mode × command (columns);
// tables below 0.005 rows per event in every cell are summed into one row.
func tableBreakdown(modes []string, per []map[TableCommand]float64) string {
	cmds := []string{"insert_rows", "delete_rows", "push_queue_producer"}
	const other = "other tables (coordination)"
	cells := map[string][]float64{} // table → mode*len(cmds)+cmd
	big := map[string]bool{}
	for mi, m := range per {
		for k, v := range m {
			t := "`" + k.Path[strings.LastIndex(k.Path, "/")+1:] + "`"
			if cells[t] == nil {
				cells[t] = make([]float64, len(modes)*len(cmds))
			}
			cells[t][mi*len(cmds)+slices.Index(cmds, k.Command)] += v
			if v >= 0.005 {
				big[t] = true
			}
		}
	}
	rows := map[string][]float64{}
	for t, c := range cells {
		name := t
		if !big[t] {
			name = other
		}
		if rows[name] == nil {
			rows[name] = make([]float64, len(c))
		}
		for i, v := range c {
			rows[name][i] += v
		}
	}
	names := make([]string, 0, len(rows))
	for t := range rows {
		names = append(names, t)
	}
	total := func(t string) (n float64) {
		for _, v := range rows[t] {
			n += v
		}
		return n
	}
	sort.Slice(names, func(i, j int) bool {
		if (names[i] == other) != (names[j] == other) {
			return names[j] == other
		}
		return total(names[i]) > total(names[j]) || total(names[i]) == total(names[j]) && names[i] < names[j]
	})
	var b strings.Builder
	b.WriteString("| table |")
	for _, m := range modes {
		fmt.Fprintf(&b, " `%s` insert | delete | push |", m)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(modes)*len(cmds)) + "\n")
	for _, t := range names {
		fmt.Fprintf(&b, "| %s |", t)
		for _, v := range rows[t] {
			if v == 0 {
				b.WriteString(" |")
			} else {
				fmt.Fprintf(&b, " %.3f |", v)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// median returns the median of unit's values (0 when none).
func (m medians) median(unit string) float64 {
	vs := slices.Clone(m[unit])
	if len(vs) == 0 {
		return 0
	}
	slices.Sort(vs)
	return vs[len(vs)/2]
}

// span formats unit's median with the range over the iterations ("—" when none).
func (m medians) span(unit string) string {
	vs := slices.Clone(m[unit])
	switch len(vs) {
	case 0:
		return "—"
	case 1:
		return num(vs[0])
	}
	slices.Sort(vs)
	return fmt.Sprintf("%s (%s–%s)", num(vs[len(vs)/2]), num(vs[0]), num(vs[len(vs)-1]))
}

// num formats a figure with the precision its size calls for.
func num(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

// commitOf is the checked-out commit of the working tree ("" when git is not available).
func commitOf() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// checkRaw checks a raw pass: the sorted table holds want, and the output queue holds one
// running row per event whose last row per user is want's.
func checkRaw(ctx context.Context, s *Sessions, want map[string]Total, events int) error {
	got, err := s.RawTotalsOf(ctx)
	if err != nil {
		return err
	}
	if len(got) != len(want) {
		return fmt.Errorf("raw: %w: table has %d users, want %d", ErrSessionsMismatch, len(got), len(want))
	}
	rows, err := s.AllOutput(ctx)
	if err != nil {
		return err
	}
	if len(rows) != events {
		return fmt.Errorf("raw: %w: output has %d rows, want %d", ErrSessionsMismatch, len(rows), events)
	}
	last := map[string]Total{}
	for _, r := range rows {
		last[r.User] = r.Total
	}
	for u, w := range want {
		if got[u] != w || last[u] != w {
			return fmt.Errorf("raw: %w: %s: table %v, output %v, want %v", ErrSessionsMismatch, u, got[u], last[u], w)
		}
	}
	return nil
}

// benchSessionsLatency runs an infinite exactly-once sessions pipeline fed at rate events/s
// (over the run's users, amount 1 each) and reports the p50/p99/max latency from queue
// write to the sum stage's commit (the user's state counts the event) for events written
// after a 3s warm-up, and, when SumByUser emits running rows (EmitRunningParam), from queue
// write to the output queue.
func benchSessionsLatency(b *testing.B, m medians, pr sessionsParams, rate float64) {
	ctx := context.Background()
	srv := startServer(b, pr.durable)
	defer closeAtReturn(srv)()
	batch := 100 * time.Millisecond
	s := newSessions(b, srv.Addr(), "slatency", SessionsOptions{Tablets: 2, ParsePartitions: 2, SumPartitions: 2,
		BatchDuration: batch, EmitRunning: true})
	if err := s.Start(ctx); err != nil {
		b.Fatal(err)
	}
	rt := StartRuntime(srv.Addr(), s.Path, pr.workers)
	defer rt.Stop()
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := rt.WaitUntil(wctx, func() (bool, error) { return s.State(wctx) == ytstore.StateWorking, nil }); err != nil {
		b.Fatal(err)
	}
	lctx, stopPoll := context.WithCancel(ctx)
	defer stopPoll()
	loadStart := time.Now()
	load, stopWriting := StartSessionsLoad(lctx, s, rate, pr.users)
	defer load.Close()
	warm := loadStart.Add(3 * time.Second)
	end := warm.Add(time.Duration(pr.latencySeconds) * time.Second)
	time.Sleep(time.Until(warm))
	cpu0 := cpuTime()
	time.Sleep(time.Until(end)) // the load runs for a fixed wall-clock time
	busy := (cpuTime() - cpu0).Seconds() / time.Since(warm).Seconds()
	stopWriting()
	dctx, cancelD := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelD()
	_ = rt.WaitUntil(dctx, func() (bool, error) {
		_, _, outRows := load.Progress()
		_, outMissing := load.OutputLatencies(warm, end)
		return load.AllBeforeCommitted(end) && (outRows == 0 || outMissing == 0) || load.Err() != nil, nil
	})
	if err := load.Err(); err != nil {
		b.Fatal(err)
	}
	lat, missing := load.SumLatencies(warm, end)
	sent, _, outRows := load.Progress()
	olat, omissing := load.OutputLatencies(warm, end)
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	p50, p99 := Percentile(lat, 0.5), Percentile(lat, 0.99)
	out := "no running rows in the output queue (SumByUser without " + EmitRunningParam + ")"
	if outRows > 0 {
		out = fmt.Sprintf("output queue (running rows, %d seen, %d not yet) p50 %v, p99 %v, max %v",
			len(olat), omissing, ms(Percentile(olat, 0.5)), ms(Percentile(olat, 0.99)), ms(Percentile(olat, 1)))
	}
	target := 2*batch + 100*time.Millisecond
	b.Logf("latency at %.0f events/s (batch_duration %v): %d events measured, %d missing; sum-stage commit p50 %v, p99 %v, max %v (target p99 ≤ %v: %v); %s; process CPU %.2f cores busy; load average %s",
		rate, batch, len(lat), missing, ms(p50), ms(p99), ms(Percentile(lat, 1)), target, p99 <= target, out, busy, loadAvg())
	if missing > 0 {
		b.Errorf("%d of the measured events were never committed at the sum stage", missing)
	}
	if outRows > 0 && omissing > 0 {
		b.Errorf("%d of the measured events never reached the output queue as running rows", omissing)
	}
	m.add(float64(sent)/end.Sub(loadStart).Seconds(), "offered_msgs/s")
	m.add(rate, "target_msgs/s")
	m.add(busy, "cpu_cores_busy")
	m.add(float64(p50.Milliseconds()), "sum_p50_ms")
	m.add(float64(p99.Milliseconds()), "sum_p99_ms")
	m.add(float64(Percentile(lat, 1).Milliseconds()), "sum_max_ms")
	if outRows > 0 {
		m.add(float64(Percentile(olat, 0.5).Milliseconds()), "output_p50_ms")
		m.add(float64(Percentile(olat, 0.99).Milliseconds()), "output_p99_ms")
		m.add(float64(Percentile(olat, 1).Milliseconds()), "output_max_ms")
	}
}

// benchSessionsWrites runs the finite pipeline with the runtime behind a counting proxy and
// reports rows written to YTsaurus per input event, against Flow's budget of about 2 per
// input message plus 1 per output.
func benchSessionsWrites(b *testing.B, m medians, pr sessionsParams, name string, o SessionsOptions, events []Event, want map[string]Total) (byTable map[TableCommand]float64) {
	srv := startServer(b, pr.durable)
	defer closeAtReturn(srv)()
	cp, err := StartCountingProxy(srv.Addr())
	if err != nil {
		b.Fatal(err)
	}
	defer cp.Close()
	tc, err := StartTableCounter(cp.Addr()) // runtime → tc → cp → server
	if err != nil {
		b.Fatal(err)
	}
	defer tc.Close()
	s := newSessions(b, srv.Addr(), name, o)
	before := cp.Tally()
	var d Tally
	var tables map[TableCommand]int64
	var badTables int64
	sessionsFiniteRun(b, s, tc.Addr(), pr.workers, events, want, o.ProcessingMode != "", func() {
		d = cp.Tally().Sub(before)
		tables, badTables = tc.Rows()
	})
	rows, err := s.AllOutput(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	outputs := float64(len(rows))
	n := float64(len(events))
	if d.BadBodies > 0 {
		b.Errorf("%d row-command bodies could not be decoded", d.BadBodies)
	}
	b.Logf("%s: %d events, %.0f outputs; %d rows written (%.2f/msg; budget 2/msg + 1/output = %.2f/msg); insert %.2f, delete %.2f, push %.2f per msg; %d requests (%.3f/msg)\n  %s",
		name, len(events), outputs, d.WrittenRows(), float64(d.WrittenRows())/n, (2*n+outputs)/n,
		float64(d.Rows["insert_rows"])/n, float64(d.Rows["delete_rows"])/n, float64(d.Rows["push_queue_producer"])/n,
		d.Requests(), float64(d.Requests())/n, d)
	b.Logf("%s rows per event by table: %s", name, FormatTableRows(tables, s.Root, n))
	byTable = map[TableCommand]float64{}
	for k, v := range tables {
		byTable[k] = float64(v) / n
	}
	if badTables > 0 {
		b.Errorf("%d write requests could not be attributed to a table", badTables)
	}
	m.add(float64(d.WrittenRows())/n, "rows/msg")
	m.add((2*n+outputs)/n, "budget_rows/msg")
	m.add(outputs/n, "outputs/msg")
	m.add(float64(d.Rows["insert_rows"])/n, "insert/msg")
	m.add(float64(d.Rows["delete_rows"])/n, "delete/msg")
	m.add(float64(d.Rows["push_queue_producer"])/n, "push/msg")
	m.add(float64(d.Requests())/n, "requests/msg")
	return byTable
}

// TestSessionsSpecs checks that every variant the benchmark runs is a valid spec and that
// the dedup knob lands on the sum computation.
func TestSessionsSpecs(t *testing.T) {
	for _, c := range []struct {
		o           SessionsOptions
		compact     bool
		atLeastOnce bool
	}{
		{SessionsOptions{}, true, false},
		{SessionsOptions{Dedup: DedupCompact, Finite: true}, true, false},
		{SessionsOptions{Dedup: DedupFull, Tablets: 2, SumPartitions: 3}, false, false},
		{SessionsOptions{ProcessingMode: "at_least_once_consistent", EmitRunning: true}, true, true},
	} {
		s := &Sessions{Root: "//home/bench/specs", Path: "//home/bench/specs/pipeline", opts: c.o}
		cfg, err := s.Config()
		require.NoError(t, err, "%+v", c.o)
		sum := cfg.Spec.Computations["sum"]
		require.NotNil(t, sum)
		assert.Equal(t, c.compact, sum.CompactDedup(), "%+v", c.o)
		assert.Equal(t, c.atLeastOnce, sum.ProcessingMode != "exactly_once", "%+v: mode %s", c.o, sum.ProcessingMode)
		assert.Equal(t, c.o.EmitRunning, sum.ProcessingFunctionParameters[EmitRunningParam] == true, "%+v", c.o)
		assert.Equal(t, c.o.EmitRunning, slices.Contains(sum.OutputStreamIDs, "running"), "%+v", c.o)
		assert.Equal(t, c.o.EmitRunning, slices.Contains(sum.Sinks["output"].InputStreamIDs, "running"), "%+v", c.o)
		assert.Contains(t, cfg.Spec.Computations, "parse")
	}
}

// TestSessionsSmoke runs the harness end to end on a small input: the raw baseline, a
// finite run per mode with its output checked and its dedup rows in the index asked for, a
// second of the steady load with every event committed at the sum stage, and the counting
// proxy seeing the runtime's writes.
func TestSessionsSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs pipelines")
	}
	ctx := context.Background()
	srv := startServer(t, false)
	events, want := SessionEvents(400, 30, 5)

	raw := newSessions(t, srv.Addr(), "smoke-raw", SessionsOptions{})
	totals, err := WriteRawSessions(ctx, raw, events, 64)
	require.NoError(t, err)
	assert.Equal(t, want, totals)
	require.NoError(t, checkRaw(ctx, raw, want, len(events)))

	for _, mode := range sessionsModes {
		t.Run(mode.name, func(t *testing.T) {
			o := finiteOptions(mode.opts)
			s := newSessions(t, srv.Addr(), "smoke-"+mode.name, o)
			cp, err := StartCountingProxy(srv.Addr())
			require.NoError(t, err)
			defer cp.Close()
			tc, err := StartTableCounter(cp.Addr())
			require.NoError(t, err)
			defer tc.Close()
			var d Tally
			var tables map[TableCommand]int64
			var bad int64
			r := sessionsFiniteRun(t, s, tc.Addr(), 2, events, want, o.ProcessingMode != "", func() {
				// The runtime still writes (status reports): take both tallies at a moment no
				// request is between the two proxies, so they describe the same requests.
				for range 100 {
					tables, bad = tc.Rows()
					d = cp.Tally()
					again, _ := tc.Rows()
					if sumRows(tables) == sumRows(again) && sumRows(tables) == d.WrittenRows() {
						return
					}
					time.Sleep(5 * time.Millisecond)
				}
			})
			checkDedupIndex(t, o, r)
			t.Logf("%s: %v from spec to checked output (working after %v, every event counted at the sum stage after %v, completed after %v); dedup rows %d full, %d compact; writes: %s",
				mode.name, r.elapsed.Round(time.Millisecond), r.startup.Round(time.Millisecond), r.counted.Round(time.Millisecond), r.completed.Round(time.Millisecond), r.fullDedup, r.compactDedup, d)
			assert.Zero(t, r.extra)
			assert.Positive(t, r.startup)
			assert.LessOrEqual(t, r.startup, r.elapsed)
			require.NoError(t, s.CheckExact(ctx, want), "no fault: at-least-once is exact too")
			assert.Zero(t, d.BadBodies)
			assert.Zero(t, bad)
			t.Logf("rows per event by table: %s", FormatTableRows(tables, s.Root, float64(len(events))))
			assert.Equal(t, d.WrittenRows(), sumRows(tables), "every written row is attributed to a table")
			assert.Equal(t, int64(len(want)), tables[TableCommand{"push_queue_producer", s.Output()}])
			assert.Equal(t, int64(len(want)), d.Rows["push_queue_producer"], "one flushed total per user pushed once")
			assert.GreaterOrEqual(t, d.Rows["insert_rows"], int64(len(want)), "states at least")
			states, err := s.SumStates(ctx)
			require.NoError(t, err)
			assert.Empty(t, states, "completion flushed and cleared every session")
		})
	}

	t.Run("load", func(t *testing.T) {
		s := newSessions(t, srv.Addr(), "smoke-load", SessionsOptions{Tablets: 2, ParsePartitions: 2, SumPartitions: 2, EmitRunning: true})
		require.NoError(t, s.Start(ctx))
		rt := StartRuntime(srv.Addr(), s.Path, 2)
		t.Cleanup(rt.Stop)
		lctx, cancel := context.WithCancel(ctx)
		t.Cleanup(cancel)
		load, stop := StartSessionsLoad(lctx, s, 200, 7)
		t.Cleanup(load.Close)
		start := time.Now()
		wctx, cancelW := context.WithTimeout(ctx, 2*time.Minute)
		defer cancelW()
		require.NoError(t, rt.WaitUntil(wctx, func() (bool, error) {
			sent, _, _ := load.Progress()
			return sent >= 200, load.Err()
		}))
		stop()
		end := time.Now()
		require.NoError(t, rt.WaitUntil(wctx, func() (bool, error) {
			return load.AllBeforeCommitted(end) || load.Err() != nil, nil
		}))
		require.NoError(t, load.Err())
		sent, atSum, _ := load.Progress()
		assert.Equal(t, sent, atSum)
		lat, missing := load.SumLatencies(start, end)
		assert.Zero(t, missing)
		assert.Len(t, lat, sent)
		wantStates := map[string]Total{}
		for i := range sent {
			u := userName(i % 7)
			w := wantStates[u]
			wantStates[u] = Total{w.Total + 1, w.Events + 1}
		}
		states, err := s.SumStates(ctx)
		require.NoError(t, err)
		assert.Equal(t, wantStates, states, "the sum stage counted every event once")
		if !emitsRunning() {
			_, _, outRows := load.Progress()
			assert.Zero(t, outRows, "no session closes, and SumByUser has no running rows")
			return
		}
		// SumByUser emits running rows: each event is delivered once to the output queue.
		require.NoError(t, rt.WaitUntil(wctx, func() (bool, error) {
			_, missing := load.OutputLatencies(start, end)
			return missing == 0 || load.Err() != nil, nil
		}))
		require.NoError(t, load.Err())
		rows, err := s.AllOutput(ctx)
		require.NoError(t, err)
		assert.Len(t, rows, sent, "one running row per event")
		seen := map[SessionsRow]bool{}
		for _, r := range rows {
			k := SessionsRow{User: r.User, Total: r.Total}
			assert.False(t, seen[k], "running row %v delivered twice", k)
			seen[k] = true
		}
	})
}

// emitsRunning reports whether the linked SumByUser knows EmitRunningParam.
func emitsRunning() bool {
	for f := range reflect.TypeFor[sessions.Params]().Fields() {
		if strings.Split(f.Tag.Get("yson"), ",")[0] == EmitRunningParam {
			return true
		}
	}
	return false
}

// TestSessionsCheckMismatch shows the output checks fail on a wrong total.
func TestSessionsCheckMismatch(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	ctx := context.Background()
	srv := startServer(t, false)
	events, want := SessionEvents(50, 5, 9)
	s := newSessions(t, srv.Addr(), "mismatch", SessionsOptions{})
	_, err := WriteRawSessions(ctx, s, events, 50)
	require.NoError(t, err)
	// The raw output holds one running row per event: not the one-row-per-user a finite
	// pipeline delivers.
	assert.True(t, errors.Is(s.CheckExact(ctx, want), ErrSessionsMismatch))
	extra, err := s.CheckAtLeast(ctx, want)
	require.NoError(t, err, "the last running row per user reaches its events")
	assert.Zero(t, extra)
	bad := map[string]Total{}
	for u, w := range want {
		bad[u] = Total{w.Total, w.Events + 1}
	}
	_, err = s.CheckAtLeast(ctx, bad)
	assert.True(t, errors.Is(err, ErrSessionsMismatch))
}

func sumRows(rows map[TableCommand]int64) int64 {
	var n int64
	for _, v := range rows {
		n += v
	}
	return n
}
