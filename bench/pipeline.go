package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap/zapcore"
	"go.ytsaurus.tech/library/go/core/log"
	logzap "go.ytsaurus.tech/library/go/core/log/zap"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/controller"
	"github.com/ytflow/yt-flow/e2e"
	_ "github.com/ytflow/yt-flow/examples/word_count" // SplitWords and CountWords
	"github.com/ytflow/yt-flow/job"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytstore"
)

// Options shape a word-count pipeline.
type Options struct {
	// Tablets of the input queue (= source partitions); 0 means 1.
	Tablets int
	// CountPartitions of the keyed count computation; 0 means 1.
	CountPartitions int
	// CountByLoad leaves the count without desired_partition_count: partitioned by load with
	// Flow's defaults (3 partitions at first); CountPartitions is not used.
	CountByLoad bool
	// ProcessingMode of the count computation; "" is exactly-once.
	ProcessingMode string
	// Finite makes the source finite: the pipeline completes once the input is read.
	Finite bool
	// BatchDuration of both computations; 0 means 100ms.
	BatchDuration time.Duration
	// EmptyBatchBackoff of both computations (how long an idle source job waits before it
	// polls its queue again); 0 keeps the default (250ms).
	EmptyBatchBackoff time.Duration
	// SwiftSource runs split as a swift source (no output store) instead of a transform source.
	SwiftSource bool
	// MaxRowsPerBatch of both computations; 0 keeps the default (1000), or the value of the
	// environment variable BENCH_MAX_ROWS_PER_BATCH when set.
	MaxRowsPerBatch int
}

// Pipeline is one word-count pipeline under Root: input queue and consumer, the result
// table counts, the output queue with its producer and a consumer for readers, and the
// pipeline node Root/pipeline.
type Pipeline struct {
	Root  string
	Path  string
	Store *ytstore.Store
	opts  Options
	// created is set by Create: Start then only stores the specs.
	created bool
}

// Input is the input queue.
func (p *Pipeline) Input() string { return p.Root + "/input" }

// Counts is the result table (sorted, sync sink).
func (p *Pipeline) Counts() string { return p.Root + "/counts" }

// Output is the output queue (async sink).
func (p *Pipeline) Output() string { return p.Root + "/output" }

// OutputConsumer is the consumer readers of the output queue use.
func (p *Pipeline) OutputConsumer() string { return p.Root + "/output_consumer" }

// countsSchema is the schema of the result table (and, without sort order, the output queue).
func countsSchema(sorted bool) schema.Schema {
	s := schema.Schema{Columns: []schema.Column{
		{Name: "hash", Type: schema.TypeUint64},
		{Name: "word", Type: schema.TypeString},
		{Name: "count", Type: schema.TypeInt64},
	}}
	if sorted {
		s.UniqueKeys = true
		s.Columns[0].SortOrder = schema.SortAscending
		s.Columns[1].SortOrder = schema.SortAscending
	}
	return s
}

// NewPipeline creates the user tables of a word-count pipeline under root (which must not
// exist yet) on the cluster at proxy. The pipeline node is created by Start.
func NewPipeline(ctx context.Context, proxy, root string, o Options) (*Pipeline, error) {
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: proxy, Path: root + "/pipeline"})
	if err != nil {
		return nil, err
	}
	p := &Pipeline{Root: root, Path: root + "/pipeline", Store: st, opts: o}
	tables := []ytstore.UserTable{
		// Consumed input is trimmed, as a production queue would be: the embedded server's
		// memory holds what is in flight, not everything ever written.
		{Path: p.Input(), Kind: ytstore.UserQueue, TabletCount: o.Tablets, AutoTrim: true,
			Schema: schema.Schema{Columns: []schema.Column{{Name: "text", Type: schema.TypeString}}}},
		{Path: root + "/consumer", Kind: ytstore.UserConsumer, Queue: p.Input()},
		{Path: p.Counts(), Kind: ytstore.UserSortedTable, Schema: countsSchema(true)},
		// The output queue trims what its consumer has passed too; only the latency runs'
		// reader advances it (the throughput checks read the queue from its start).
		{Path: p.Output(), Kind: ytstore.UserQueue, Schema: countsSchema(false), AutoTrim: true},
		{Path: root + "/producer", Kind: ytstore.UserProducer},
		{Path: p.OutputConsumer(), Kind: ytstore.UserConsumer, Queue: p.Output()},
	}
	for _, t := range tables {
		if err := st.EnsureUserTable(ctx, t); err != nil {
			st.Close()
			return nil, fmt.Errorf("bench: pipeline %s: %w", root, err)
		}
	}
	return p, nil
}

// Close releases the pipeline's store.
func (p *Pipeline) Close() { p.Store.Close() }

// Write appends one input row per word to the input queue, spread round-robin over the
// tablets starting at tablet first, in one insert_rows call.
func (p *Pipeline) Write(ctx context.Context, words []string, first int) error {
	tablets := max(p.opts.Tablets, 1)
	rows := make([]inputRow, len(words))
	for i, w := range words {
		rows[i] = inputRow{text: w, tablet: int64((first + i) % tablets)}
	}
	return ytstore.InsertValues(ctx, p.Store, p.Input(), rows)
}

// inputRow is a row of the input queue, written by the SDK's writer without reflection or
// a map per row (the latency runs write tens of thousands per second in the process under
// test).
type inputRow struct {
	text   string
	tablet int64
}

// MarshalYSON implements yson.StreamMarshaler.
func (r inputRow) MarshalYSON(w *yson.Writer) error {
	w.BeginMap()
	w.MapKeyString("$tablet_index")
	w.Int64(r.tablet)
	w.MapKeyString("text")
	w.String(r.text)
	w.EndMap()
	return nil
}

// Load writes words to the input queue in calls of at most 1000 rows.
func (p *Pipeline) Load(ctx context.Context, words []string) error {
	for i := 0; i < len(words); i += 1000 {
		if err := p.Write(ctx, words[i:min(i+1000, len(words))], i); err != nil {
			return err
		}
	}
	return nil
}

// Specs returns the static and dynamic spec of the pipeline, checked by the spec parser.
func (p *Pipeline) Specs() (static, dynamic yson.RawValue, err error) {
	o := p.opts
	maxRows := o.MaxRowsPerBatch
	if v, err := strconv.Atoi(os.Getenv("BENCH_MAX_ROWS_PER_BATCH")); err == nil && v > 0 && maxRows == 0 {
		maxRows = v
	}
	text := e2e.WordCountSpec(e2e.SpecParams{Root: p.Root, ProcessingMode: o.ProcessingMode, Finite: o.Finite,
		BatchDuration: o.BatchDuration, SplitPartitions: o.Tablets, CountPartitions: o.CountPartitions, CountByLoad: o.CountByLoad, SwiftSource: o.SwiftSource,
		MaxRowsPerBatch: maxRows})
	if o.EmptyBatchBackoff > 0 {
		text = strings.ReplaceAll(text, "batch_duration = ", fmt.Sprintf("empty_batch_backoff = %d; batch_duration = ", o.EmptyBatchBackoff.Milliseconds()))
	}
	if _, err := spec.ParseConfig([]byte(text)); err != nil {
		return nil, nil, fmt.Errorf("bench: spec of %s: %w", p.Path, err)
	}
	var doc struct {
		Spec        any `yson:"spec"`
		DynamicSpec any `yson:"dynamic_spec"`
	}
	if err := yson.Unmarshal([]byte(text), &doc); err != nil {
		return nil, nil, fmt.Errorf("bench: spec of %s: %w", p.Path, err)
	}
	if static, err = yson.Marshal(doc.Spec); err != nil {
		return nil, nil, err
	}
	if dynamic, err = yson.Marshal(doc.DynamicSpec); err != nil {
		return nil, nil, err
	}
	return static, dynamic, nil
}

// Create creates the pipeline node with its internal tables (what `yt-flow create` does).
func (p *Pipeline) Create(ctx context.Context) error {
	if err := p.Store.CreatePipeline(ctx); err != nil {
		return err
	}
	p.created = true
	return nil
}

// Start creates the pipeline node unless Create did, stores the specs and sets the target
// state to working.
func (p *Pipeline) Start(ctx context.Context) error {
	static, dynamic, err := p.Specs()
	if err != nil {
		return err
	}
	if !p.created {
		if err := p.Create(ctx); err != nil {
			return err
		}
	}
	return p.Store.SetSpecs(ctx, ytstore.SpecUpdate{
		Spec: static, SpecVersion: 1, DynamicSpec: dynamic, DynamicSpecVersion: 1,
		TargetState: ytstore.TargetWorking,
	})
}

// State reads @pipeline_state ("" when unreadable).
func (p *Pipeline) State(ctx context.Context) string {
	a, err := p.Store.Attributes(ctx)
	if err != nil {
		return ""
	}
	return a.PipelineState
}

// Totals reads the result table as word → count.
func (p *Pipeline) Totals(ctx context.Context) (map[string]int64, error) {
	rows, err := p.Store.SelectRows(ctx, fmt.Sprintf("word, count FROM [%s]", p.Counts()))
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		w, _ := r["word"].(string)
		n, _ := asInt(r["count"])
		out[w] = n
	}
	return out, nil
}

// Counted is the sum of the result table's counts: the number of input messages the table
// reflects (one small aggregate query).
func (p *Pipeline) Counted(ctx context.Context) (int64, error) {
	rows, err := p.Store.SelectRows(ctx, fmt.Sprintf("sum(count) AS n FROM [%s] GROUP BY 1", p.Counts()))
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	n, _ := asInt(rows[0]["n"])
	return n, nil
}

// OutputRow is one row of the output queue.
type OutputRow struct {
	Offset int64
	Word   string
	Count  int64
}

// ReadOutput reads up to limit rows of the output queue from offset (one tablet).
func (p *Pipeline) ReadOutput(ctx context.Context, offset, limit int64) ([]OutputRow, error) {
	rows, err := p.Store.PullQueue(ctx, p.Output(), p.OutputConsumer(), 0, offset, limit)
	if err != nil {
		return nil, err
	}
	out := make([]OutputRow, len(rows))
	for i, r := range rows {
		w, _ := r.Columns["word"].(string)
		n, _ := asInt(r.Columns["count"])
		out[i] = OutputRow{Offset: r.Offset, Word: w, Count: n}
	}
	return out, nil
}

// CheckExact compares the result table and the output queue with want (word → count): the
// table must hold exactly want, and the output queue must reach want's count for every
// word with no (word, count) pair twice. It returns nil when the sinks are exact.
func (p *Pipeline) CheckExact(ctx context.Context, want map[string]int64) error {
	got, err := p.Totals(ctx)
	if err != nil {
		return err
	}
	if len(got) != len(want) {
		return fmt.Errorf("table has %d words, want %d", len(got), len(want))
	}
	for w, n := range want {
		if got[w] != n {
			return fmt.Errorf("table: %s = %d, want %d", w, got[w], n)
		}
	}
	reached := map[string]int64{}
	seen := map[OutputRow]bool{}
	for off := int64(0); ; {
		rows, err := p.ReadOutput(ctx, off, 10000)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			break
		}
		for _, r := range rows {
			k := OutputRow{Word: r.Word, Count: r.Count}
			if seen[k] {
				return fmt.Errorf("output: (%s, %d) delivered twice", r.Word, r.Count)
			}
			seen[k] = true
			reached[r.Word] = max(reached[r.Word], r.Count)
		}
		off = rows[len(rows)-1].Offset + 1
	}
	for w, n := range want {
		if reached[w] != n {
			return fmt.Errorf("output: %s reaches %d, want %d", w, reached[w], n)
		}
	}
	return nil
}

// CheckAtLeast is the at-least-once check: every word of want is in the result table with
// at least want's count, and the output queue reaches that count. It returns how many
// messages were counted more than once in the table (the table's total minus want's).
func (p *Pipeline) CheckAtLeast(ctx context.Context, want map[string]int64) (extra int64, err error) {
	got, err := p.Totals(ctx)
	if err != nil {
		return 0, err
	}
	for w, n := range want {
		if got[w] < n {
			return 0, fmt.Errorf("table: %s = %d, want at least %d", w, got[w], n)
		}
		extra += got[w] - n
	}
	if len(got) != len(want) {
		return 0, fmt.Errorf("table has %d words, want %d", len(got), len(want))
	}
	reached := map[string]int64{}
	for off := int64(0); ; {
		rows, err := p.ReadOutput(ctx, off, 10000)
		if err != nil {
			return 0, err
		}
		if len(rows) == 0 {
			break
		}
		for _, r := range rows {
			reached[r.Word] = max(reached[r.Word], r.Count)
		}
		off = rows[len(rows)-1].Offset + 1
	}
	for w, n := range want {
		if reached[w] < n {
			return 0, fmt.Errorf("output: %s reaches %d, want at least %d", w, reached[w], n)
		}
	}
	return extra, nil
}

// Runtime is a controller and workers running in this process against one pipeline, as
// `yt-flow run` runs them.
type Runtime struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	errs    []error
	workers []*job.Worker
}

// Stats returns the job counters of every worker (Worker.Stats), one map per worker.
func (r *Runtime) Stats() []map[string]job.JobStats {
	out := make([]map[string]job.JobStats, len(r.workers))
	for i, w := range r.workers {
		out[i] = w.Stats()
	}
	return out
}

// workerLogger is nil (logs discarded) unless BENCH_WORKER_LOG=1, which sends the workers'
// and the controller's info logs to stderr (e.g. the epoch phase times each job logs when it
// stops, the controller's layout events).
func workerLogger() log.Structured {
	if os.Getenv("BENCH_WORKER_LOG") != "1" {
		return nil
	}
	return logzap.NewWithCore(zapcore.NewCore(zapcore.NewConsoleEncoder(logzap.ConsoleConfig(log.InfoLevel).EncoderConfig), zapcore.AddSync(os.Stderr), logzap.ZapifyLevel(log.InfoLevel)))
}

// StartRuntime runs n job workers and, once they have registered, controller.Run for the
// pipeline at path until Stop.
func StartRuntime(proxy, path string, n int) *Runtime {
	return StartRuntimeWith(proxy, path, n, nil)
}

// StartRuntimeWith is StartRuntime with each worker's configuration passed through tune
// (nil: unchanged) before it starts: a benchmark selects a worker behaviour with it.
func StartRuntimeWith(proxy, path string, n int, tune func(*job.Config)) *Runtime {
	ctx, cancel := context.WithCancel(context.Background())
	r := &Runtime{cancel: cancel}
	fail := func(err error) {
		if err != nil && ctx.Err() == nil {
			r.mu.Lock()
			r.errs = append(r.errs, err)
			r.mu.Unlock()
		}
	}
	for i := range n {
		// As yt-flow run does: the workers of the process hand pushes to each other in memory.
		cfg := job.Config{Proxy: proxy, Path: path, WorkerID: fmt.Sprintf("bench-%d-%d", os.Getpid(), i), Logger: workerLogger(), InProcessPeers: true}
		if tune != nil {
			tune(&cfg)
		}
		w := job.NewWorker(cfg)
		r.workers = append(r.workers, w)
		stopped := make(chan struct{})
		r.wg.Go(func() {
			defer close(stopped)
			fail(w.Run(ctx))
		})
		// As `yt-flow run`: the controller starts once the workers have registered, so that
		// it does not place every job on the first worker and move half of them a cycle later.
		select {
		case <-w.Ready():
		case <-stopped:
		case <-time.After(time.Minute): // not registered: the run's own checks will say why
		}
	}
	r.wg.Go(func() {
		fail(controller.Run(ctx, controller.Config{Proxy: proxy, Path: path, Logger: workerLogger()}))
	})
	return r
}

// Err returns the errors of components that stopped on their own so far.
func (r *Runtime) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.errs...)
}

// Stop cancels every component and waits for them.
func (r *Runtime) Stop() {
	r.cancel()
	r.wg.Wait()
}

// WaitUntil polls cond every 20ms until it returns true, ctx ends, or the runtime fails.
func (r *Runtime) WaitUntil(ctx context.Context, cond func() (bool, error)) error {
	return r.WaitUntilEvery(ctx, func() time.Duration { return 20 * time.Millisecond }, cond)
}

// WaitUntilEvery is WaitUntil with the pause between checks given by every (asked before
// each pause).
func (r *Runtime) WaitUntilEvery(ctx context.Context, every func() time.Duration, cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if rerr := r.Err(); rerr != nil {
			return rerr
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("%w (last check: %v)", ctx.Err(), err)
			}
			return ctx.Err()
		case <-time.After(every()):
		}
	}
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case uint64:
		return int64(x), true
	case int:
		return int64(x), true
	}
	return 0, false
}
