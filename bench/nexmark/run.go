package nexmark

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/ytflow/yt-flow/bench"
	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytstore"
)

// Config shapes a benchmark run. The zero value of a field is its default.
type Config struct {
	// Events is the number of generated events per query (default 100,000).
	Events int
	// Gen is the generator's configuration (seed, event-time rate, base time).
	Gen GenConfig
	// Tablets of the input queue = partitions of the source (default 2).
	Tablets int
	// Partitions of the keyed stage of q3, q5 and q7 (default 2).
	Partitions int
	// Workers is how many in-process workers run the pipeline (default 2, `yt-flow run`'s).
	Workers int
	// Rate feeds the input at this many events a second of wall time while the pipeline runs
	// (latency under load); 0 writes it all before the pipeline starts (burst: throughput).
	Rate int
	// Timeout bounds one query's run (default 10 minutes).
	Timeout time.Duration
	// Profile, when set, writes a CPU profile of each run's measured span (from the
	// pipeline's start to its end) to Profile-<query>-<rate>.pprof.
	Profile string
	// Trace, in a live run of q5 or q7, measures the watermark's path (tracer, Result.Path):
	// it reads the statuses and attributes every 10 ms, which costs CPU of its own.
	Trace bool
}

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Events, 100_000)
	def(&c.Tablets, 2)
	def(&c.Partitions, 2)
	def(&c.Workers, 2)
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Minute
	}
	c.Gen = c.Gen.withDefaults()
	return c
}

// Result is one query's run.
type Result struct {
	Query Query
	// Rate is the run's Config.Rate (0: burst).
	Rate int
	// Events is the number of input events; Outputs the rows the output queue holds.
	Events, Outputs int
	// Wall is from the pipeline's start (burst) or the first write (live) to the last
	// expected output row read; CPU is this process's CPU time over the same span (the
	// pipeline's workers and controller, the embedded server, the writer and the reader).
	Wall, CPU time.Duration
	// P50 and P99 are over the output rows of a live run: from the write of the input that
	// made the row computable (Want.Dep) to the reader first seeing the row.
	P50, P99 time.Duration
	// Path is where a live run's window latency went (Config.Trace; zero without).
	Path WatermarkPath
	// Err is why the run failed: verification (wrapping ErrVerification) or the run itself.
	Err error
}

// EventsPerSecond is the events over the wall time.
func (r Result) EventsPerSecond() float64 { return float64(r.Events) / r.Wall.Seconds() }

// EventsPerCoreSecond is the events over the CPU time: events/s per core.
func (r Result) EventsPerCoreSecond() float64 { return float64(r.Events) / r.CPU.Seconds() }

// cpuTime is the user+system CPU time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// RunQuery runs q once on its own embedded server (in memory, in process) with a controller
// and workers in this process, as `yt-flow run` runs them: it generates the events, computes
// the model's output, feeds the input (all before the start, or at Rate), reads the output
// queue until it holds as many rows as the model (burst: until the pipeline completed, its
// source being finite), and verifies the rows against the model.
func RunQuery(ctx context.Context, c Config, q Query) Result {
	c = c.withDefaults()
	res := Result{Query: q, Rate: c.Rate, Events: c.Events}
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	events := Generate(c.Gen, c.Events)
	want := Model(q, events, c.Tablets)
	inputs := append(slices.Clip(events), endMarkers(events[len(events)-1].DateTime, c.Tablets)...)

	srv, err := ytlocal.Start(context.WithoutCancel(ctx), ytlocal.Config{InProcess: true})
	if err != nil {
		res.Err = fmt.Errorf("nexmark: start ytlocal: %w", err)
		return res
	}
	defer srv.Close()
	p := &pipeline{q: q, root: "//home/nexmark/" + string(q), tablets: c.Tablets, partitions: c.Partitions,
		finite: c.Rate == 0, n: len(events)}
	p.path = p.root + "/pipeline"
	if p.store, err = ytstore.Open(ctx, ytstore.Config{Proxy: srv.Addr(), Path: p.path}); err != nil {
		res.Err = fmt.Errorf("nexmark: open %s: %w", p.path, err)
		return res
	}
	defer p.store.Close()
	if err := p.create(ctx); err != nil {
		res.Err = err
		return res
	}
	written := make([]time.Time, len(inputs))
	if c.Rate == 0 {
		for i := 0; i < len(inputs); i += 1000 {
			if err := p.write(ctx, inputs[i:min(i+1000, len(inputs))], i); err != nil {
				res.Err = fmt.Errorf("nexmark: load the input of %s: %w", q, err)
				return res
			}
		}
	}
	stopProfile := startProfile(c.Profile, q, c.Rate)
	defer stopProfile()
	cpu0, t0 := cpuTime(), time.Now()
	if err := p.start(ctx); err != nil {
		res.Err = err
		return res
	}
	rt := bench.StartRuntime(srv.Addr(), p.path, c.Workers)
	defer rt.Stop()

	var (
		wg       sync.WaitGroup
		writeErr error
		wmu      sync.Mutex // guards written while the writer runs
	)
	wctx, stopWriter := context.WithCancel(ctx)
	defer stopWriter()
	if c.Rate > 0 {
		cpu0, t0 = cpuTime(), time.Now()
		wg.Go(func() { writeErr = feed(wctx, p, inputs, c.Rate, written, &wmu) })
	}
	var tr *tracer
	if c.Trace && c.Rate > 0 && (q == Q5 || q == Q7) {
		tr = &tracer{p: p, stream: p.timerStream(), source: "read"}
		tctx, stopTracer := context.WithCancel(ctx)
		var traced sync.WaitGroup
		traced.Go(func() { tr.run(tctx) })
		defer traced.Wait()
		defer stopTracer()
	}
	r := &reader{p: p}
	// The run ends when the source committed past every input (the consumer's offsets) and
	// the output holds the model's row count; a run whose output stays short ends 30 s after
	// the input was consumed (or at completion, burst) and fails verification.
	var consumedAt, tEnd time.Time
	var cpuEnd time.Duration
	done := func() (bool, error) {
		if consumedAt.IsZero() && (r.polls%5 == 0 || r.rows >= len(want)) {
			n, err := p.consumed(ctx)
			if err != nil {
				return false, err
			}
			if n >= int64(len(inputs)) {
				consumedAt = time.Now()
			}
		}
		if consumedAt.IsZero() {
			return false, nil
		}
		if r.rows >= len(want) {
			tEnd, cpuEnd = time.Now(), cpuTime()
			return true, nil
		}
		if time.Since(consumedAt) > 30*time.Second {
			return true, nil
		}
		if c.Rate == 0 && r.polls%10 == 0 {
			if st, err := p.store.Attributes(ctx); err == nil && st.PipelineState == ytstore.StateCompleted {
				return true, nil
			}
		}
		return false, nil
	}
	err = r.until(ctx, rt, done)
	if tEnd.IsZero() {
		tEnd, cpuEnd = time.Now(), cpuTime()
	}
	res.Wall, res.CPU = tEnd.Sub(t0), cpuEnd-cpu0
	stopProfile()
	if err != nil {
		stopWriter() // the run failed: the rest of the input is not needed
	}
	wg.Wait()
	if err == nil {
		err = writeErr
	}
	if err == nil {
		// What was committed after the last expected row: a finite run reads to its
		// completion (nothing can follow); a live run reads on for a second.
		err = r.settle(ctx, rt, c.Rate == 0)
	}
	if err != nil {
		res.Err = fmt.Errorf("nexmark: %s: %w (%d of %d rows read)", q, err, r.rows, len(want))
		return res
	}
	res.Outputs = r.rows
	if res.Err = Verify(q, r.got, want); res.Err == nil && c.Rate > 0 {
		wmu.Lock()
		res.P50, res.P99 = latencies(q, r.got, r.seen, want, written)
		if tr != nil {
			res.Path = watermarkPath(q, tr.samples(), r.got, r.seen, want, written)
		}
		wmu.Unlock()
	}
	return res
}

// consumed is how many input rows the source committed past: the sum of the input
// consumer's offsets over the tablets.
func (p *pipeline) consumed(ctx context.Context) (int64, error) {
	rows, err := p.store.SelectRows(ctx, fmt.Sprintf("[offset] FROM [%s/consumer]", p.root))
	if err != nil {
		return 0, fmt.Errorf("read the offsets of %s/consumer: %w", p.root, err)
	}
	var n int64
	for _, r := range rows {
		switch v := r["offset"].(type) {
		case int64:
			n += v
		case uint64:
			n += int64(v)
		}
	}
	return n, nil
}

// startProfile starts a CPU profile into prefix-<q>-<rate>.pprof (nothing when prefix is
// empty or a profile is running) and returns its idempotent stop.
func startProfile(prefix string, q Query, rate int) func() {
	if prefix == "" {
		return func() {}
	}
	f, err := os.Create(fmt.Sprintf("%s-%s-%d.pprof", prefix, q, rate))
	if err != nil {
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return func() {}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			f.Close()
		})
	}
}

// feed writes inputs at rate a second (one insert_rows call every 10 ms, catching up when a
// call is slow), recording when each was written.
func feed(ctx context.Context, p *pipeline, inputs []Event, rate int, written []time.Time, mu *sync.Mutex) error {
	start := time.Now()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for next := 0; next < len(inputs); {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		due := min(int(float64(rate)*time.Since(start).Seconds()), p.n)
		if due >= p.n {
			due = len(inputs) // the end markers follow the last event
		}
		if due <= next {
			continue
		}
		now := time.Now()
		mu.Lock()
		for i := next; i < due; i++ {
			written[i] = now
		}
		mu.Unlock()
		if err := p.write(ctx, inputs[next:due], next); err != nil {
			return fmt.Errorf("write inputs %d..%d: %w", next, due-1, err)
		}
		next = due
	}
	return nil
}

// reader polls the output queue (one tablet) every 10 ms and keeps every row and when it
// was first read.
type reader struct {
	p      *pipeline
	off    int64
	got    []Row
	seen   []time.Time
	rows   int
	polls  int
	lastAt time.Time // when the last row so far was read
}

func (r *reader) poll(ctx context.Context) (int, error) {
	rows, err := r.p.store.PullQueue(ctx, r.p.output(), r.p.outConsumer(), 0, r.off, 10000)
	r.polls++
	if err != nil {
		return 0, fmt.Errorf("read %s at %d: %w", r.p.output(), r.off, err)
	}
	now := time.Now()
	for _, qr := range rows {
		r.off = qr.Offset + 1
		row := Row{}
		for _, c := range r.p.q.Columns() {
			row[c] = qr.Columns[c]
		}
		r.got = append(r.got, row)
		r.seen = append(r.seen, now)
	}
	r.rows = len(r.got)
	if len(rows) > 0 {
		r.lastAt = now
	}
	return len(rows), nil
}

// until polls until done, ctx ends or the runtime fails.
func (r *reader) until(ctx context.Context, rt *bench.Runtime, done func() (bool, error)) error {
	for {
		n, err := r.poll(ctx)
		if err != nil {
			return err
		}
		if ok, err := done(); ok || err != nil {
			return err
		}
		if err := rt.Err(); err != nil {
			return err
		}
		if n == 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
}

// settle reads what the pipeline commits after the expected rows: until it completed
// (finite) or for one more second (live).
func (r *reader) settle(ctx context.Context, rt *bench.Runtime, finite bool) error {
	if !finite {
		deadline := time.Now().Add(time.Second)
		return r.until(ctx, rt, func() (bool, error) { return time.Now().After(deadline), nil })
	}
	completed := false
	return r.until(ctx, rt, func() (bool, error) {
		if completed {
			return true, nil // one more read after completion was seen
		}
		st, err := r.p.store.Attributes(ctx)
		completed = err == nil && st.PipelineState == ytstore.StateCompleted
		return false, nil
	})
}

// latencies matches the rows read to the model's rows (the same row, in the order read) and
// returns p50 and p99 of the time from the write of each row's Dep input to its first read.
func latencies(q Query, got []Row, seen []time.Time, want []Want, written []time.Time) (p50, p99 time.Duration) {
	cols := q.Columns()
	deps := map[string][]int{}
	for _, w := range want {
		k := w.Row.key(cols)
		deps[k] = append(deps[k], w.Dep)
	}
	var ls []time.Duration
	for i, r := range got {
		k := r.key(cols)
		d := deps[k]
		if len(d) == 0 {
			continue
		}
		deps[k] = d[1:]
		if w := written[d[0]]; !w.IsZero() {
			ls = append(ls, seen[i].Sub(w))
		}
	}
	if len(ls) == 0 {
		return 0, 0
	}
	slices.Sort(ls)
	return ls[len(ls)*50/100], ls[min(len(ls)*99/100, len(ls)-1)]
}

// ErrUnknownQuery is a query name this benchmark does not run.
var ErrUnknownQuery = errors.New("nexmark: unknown query")

// ParseQueries reads a comma-free list of names ("q0", "q5") into queries.
func ParseQueries(names []string) ([]Query, error) {
	var out []Query
	for _, n := range names {
		q := Query(n)
		if !slices.Contains(Queries(), q) {
			return nil, fmt.Errorf("%w %q (want one of %v)", ErrUnknownQuery, n, Queries())
		}
		out = append(out, q)
	}
	return out, nil
}
