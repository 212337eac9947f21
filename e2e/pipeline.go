package e2e

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/ytstore"
)

// WordCount is the e2e pipeline: queue → SplitWords (source) → CountWords (keyed, state)
// → a sorted table (sync sink) and an output queue (async sink, producer dedup).
// Input lines hold one word each, so the expected counts are known exactly.
type WordCount struct {
	C    *Cluster
	Root string
	// Path is the pipeline node.
	Path string
	// SpecFile is the runner config written for the test.
	SpecFile string
	// Expected word → count of the input.
	Expected map[string]int64
	Store    *ytstore.Store
	// pending holds the input rows not inserted yet (WordCountOptions.Deferred; Feed).
	pending []map[string]any
}

// WordCountOptions shape the pipeline.
type WordCountOptions struct {
	Messages, Words int
	// Tablets of the input queue (= source partitions).
	Tablets int
	// CountPartitions of the keyed computation.
	CountPartitions int
	// ProcessingMode of the count computation ("" = exactly_once).
	ProcessingMode string
	// AtMostOnceBytes, when positive, turns on at_most_once_strategy on the async sink
	// with this total_queue_bytes_limit.
	AtMostOnceBytes int64
	// SwiftSource runs split as a swift source (TSwiftOrderedSourceComputation).
	SwiftSource bool
	// MaxRowsPerBatch of both computations; 0 keeps the default (1000). Fault tests lower it
	// so that the pipeline still runs while their faults are injected.
	MaxRowsPerBatch int
	Seed            uint64
	// Inject replaces the random word of input line i with Inject[i].
	Inject map[int]string
	// CountFunction is the count computation's processing function ("" = CountWords);
	// CountDynamic is added to its dynamic spec (e.g. "failure_policy = {mode = dead_letter}").
	CountFunction, CountDynamic string
	// Unbounded makes the queue source not end at the end of the queue (the pipeline never
	// completes); Deferred inserts no input: Feed inserts it.
	Unbounded, Deferred bool
}

// NewWordCount creates the user tables, loads the input and writes the spec file.
func NewWordCount(t *testing.T, c *Cluster, name string, o WordCountOptions) *WordCount {
	t.Helper()
	root := c.Root(name)
	w := &WordCount{C: c, Root: root, Path: root + "/pipeline", Expected: map[string]int64{}}
	w.Store = c.Store(w.Path)
	ctx := context.Background()
	mk := func(ut ytstore.UserTable) {
		t.Helper()
		if err := w.Store.EnsureUserTable(ctx, ut); err != nil {
			t.Fatal(err)
		}
	}
	mk(ytstore.UserTable{Path: root + "/input", Kind: ytstore.UserQueue, TabletCount: o.Tablets,
		Schema: schema.Schema{Columns: []schema.Column{{Name: "text", Type: schema.TypeString}}}})
	mk(ytstore.UserTable{Path: root + "/consumer", Kind: ytstore.UserConsumer, Queue: root + "/input"})
	mk(ytstore.UserTable{Path: root + "/counts", Kind: ytstore.UserSortedTable, Schema: schema.Schema{UniqueKeys: true, Columns: []schema.Column{
		{Name: "hash", Type: schema.TypeUint64, SortOrder: schema.SortAscending},
		{Name: "word", Type: schema.TypeString, SortOrder: schema.SortAscending},
		{Name: "count", Type: schema.TypeInt64},
	}}})
	mk(ytstore.UserTable{Path: root + "/output", Kind: ytstore.UserQueue, Schema: schema.Schema{Columns: []schema.Column{
		{Name: "hash", Type: schema.TypeUint64},
		{Name: "word", Type: schema.TypeString},
		{Name: "count", Type: schema.TypeInt64},
	}}})
	mk(ytstore.UserTable{Path: root + "/producer", Kind: ytstore.UserProducer})

	rng := rand.New(rand.NewPCG(o.Seed, 7))
	rows := make([]map[string]any, 0, 1000)
	flush := func() {
		if len(rows) == 0 {
			return
		}
		if err := w.Store.InsertRows(ctx, root+"/input", rows); err != nil {
			t.Fatal(err)
		}
		rows = rows[:0]
	}
	for i := range o.Messages {
		word := fmt.Sprintf("w%04d", rng.IntN(o.Words))
		if inj, ok := o.Inject[i]; ok {
			word = inj
		}
		w.Expected[word]++
		row := map[string]any{"text": word, "$tablet_index": int64(i % max(o.Tablets, 1))}
		if o.Deferred {
			w.pending = append(w.pending, row)
			continue
		}
		rows = append(rows, row)
		if len(rows) == cap(rows) {
			flush()
		}
	}
	flush()

	text := WordCountSpec(SpecParams{Root: root, ProcessingMode: o.ProcessingMode, AtMostOnceBytes: o.AtMostOnceBytes,
		Finite: !o.Unbounded, SplitPartitions: o.Tablets, CountPartitions: o.CountPartitions, SwiftSource: o.SwiftSource,
		MaxRowsPerBatch: o.MaxRowsPerBatch, CountFunction: o.CountFunction, CountDynamic: o.CountDynamic})
	w.SpecFile = filepath.Join(t.TempDir(), "pipeline.yson")
	if err := os.WriteFile(w.SpecFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return w
}

// SpecParams fill the word-count runner config (see WordCountSpec).
type SpecParams struct {
	// Root is the Cypress folder of the pipeline and its user tables.
	Root string
	// ProcessingMode of the count computation ("" = exactly_once).
	ProcessingMode string
	// AtMostOnceBytes, when positive, turns on at_most_once_strategy on the async sink.
	AtMostOnceBytes int64
	// Finite makes the queue source end at the end of the queue.
	Finite bool
	// BatchDuration of both computations; default 100ms.
	BatchDuration time.Duration
	// SplitPartitions and CountPartitions are the desired partition counts (default 1: the
	// spec always pins them).
	SplitPartitions, CountPartitions int
	// SwiftSource makes split a swift source (TSwiftOrderedSourceComputation: outputs
	// delivered from memory, recomputed after a restart) instead of a transform source.
	SwiftSource bool
	// MaxRowsPerBatch of both computations; 0 keeps the default (1000).
	MaxRowsPerBatch int
	// CountByLoad leaves count without desired_partition_count: partitioned by load with
	// Flow's defaults (CountPartitions is not used).
	CountByLoad bool
	// CountFunction is the count computation's processing function ("" = CountWords);
	// CountDynamic is added to its dynamic spec.
	CountFunction, CountDynamic string
}

// WordCountSpec renders the runner config of the word-count pipeline under p.Root:
// queue ROOT/input → SplitWords (a transform source, or a swift source) → CountWords (keyed by [farm_hash(word), word]) → sorted
// table ROOT/counts (sync sink) and queue ROOT/output through ROOT/producer (async sink).
// The e2e tests and the benchmarks share it.
func WordCountSpec(p SpecParams) string {
	mode := ""
	if p.ProcessingMode != "" {
		mode = fmt.Sprintf("processing_mode = %q;", p.ProcessingMode)
	}
	amo := ""
	if p.AtMostOnceBytes > 0 {
		amo = fmt.Sprintf("at_most_once_strategy = {enabled = %%true; total_queue_bytes_limit = %d};", p.AtMostOnceBytes)
	}
	splitClass := "NYT::NFlow::TProcessFunctionSourceComputation"
	if p.SwiftSource {
		splitClass = "NYT::NFlow::TSwiftOrderedSourceComputation"
	}
	batch := p.BatchDuration
	if batch <= 0 {
		batch = 100 * time.Millisecond
	}
	batchSpec := fmt.Sprint(batch.Milliseconds())
	if p.MaxRowsPerBatch > 0 {
		batchSpec += fmt.Sprintf("; max_rows_per_batch = %d", p.MaxRowsPerBatch)
	}
	countParams := fmt.Sprintf("desired_partition_count = %d", max(p.CountPartitions, 1))
	if p.CountByLoad {
		countParams = ""
	}
	countFn := cmp.Or(p.CountFunction, "CountWords")
	countBatch := batchSpec
	if p.CountDynamic != "" {
		countBatch += "; " + p.CountDynamic
	}
	return strings.NewReplacer("COUNTPARAMS", countParams, "COUNTFN", countFn, "SPLITCLASS", splitClass, "ROOT", p.Root, "MODE", mode, "AMO", amo, "FINITE", fmt.Sprintf("%%%t", p.Finite),
		"BATCHCOUNT", countBatch, "BATCH", batchSpec,
		"SPLITN", fmt.Sprint(max(p.SplitPartitions, 1))).Replace(wordCountSpec)
}

const wordCountSpec = `{
    path = "ROOT/pipeline";
    spec = {
        computations = {
            split = {
                computation_class_name = "SPLITCLASS";
                processing_function = "SplitWords";
                source_streams = {
                    lines = {
                        source_class_name = "NYT::NFlow::TQueueSource";
                        parameters = {queue_path = "ROOT/input"; consumer_path = "ROOT/consumer"; finite = FINITE};
                    };
                };
                output_stream_ids = ["words"];
            };
            count = {
                computation_class_name = "NYT::NFlow::TProcessFunctionComputation";
                processing_function = "COUNTFN";
                MODE
                group_by_schema = [
                    {name = "hash"; type = "uint64"; required = %true; expression = "farm_hash(word)"};
                    {name = "word"; type = "string"; required = %true};
                ];
                input_stream_ids = ["words"];
                output_stream_ids = ["counts"];
                sinks = {
                    table = {
                        sink_class_name = "NYT::NFlow::NSortedDynamicTable::TSyncSink";
                        input_stream_ids = ["counts"];
                        parameters = {table_path = "ROOT/counts"};
                    };
                    out = {
                        sink_class_name = "NYT::NFlow::TAsyncQueueSink";
                        input_stream_ids = ["counts"];
                        parameters = {queue_path = "ROOT/output"; producer_path = "ROOT/producer"};
                        AMO
                    };
                };
            };
        };
        streams = {
            words = {schema = [{name = "word"; type = "string"; required = %true}]};
            counts = {schema = [{name = "hash"; type = "uint64"}; {name = "word"; type = "string"}; {name = "count"; type = "int64"}]};
        };
    };
    dynamic_spec = {
        computations = {
            split = {batch_duration = BATCH; parameters = {desired_partition_count = SPLITN}};
            count = {batch_duration = BATCHCOUNT; parameters = {COUNTPARAMS}};
        };
    };
}
`

// StartPipeline runs `yt-flow start`. When the test fails, `yt-flow status` is logged.
func (w *WordCount) StartPipeline(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			p := Start(t, "status", "status", "--proxy", w.C.Proxy, "--path", w.Path)
			p.Wait(30 * time.Second)
			t.Logf("yt-flow status:\n%s", p.Log())
		}
	})
	p := Start(t, "start", "start", "--proxy", w.C.Proxy, "--spec", w.SpecFile)
	err, ok := p.Wait(2 * time.Minute)
	if !ok || err != nil {
		t.Fatalf("yt-flow start: %v (exited %v)\n%s", err, ok, p.Log())
	}
}

// Controller starts a `yt-flow controller` process.
func (w *WordCount) Controller(t *testing.T, name string) *Proc {
	return Start(t, name, "controller", "--proxy", w.C.Proxy, "--path", w.Path, "--lease-timeout", "10s", "--session-timeout", "3s")
}

// Worker starts a `yt-flow worker` process.
func (w *WordCount) Worker(t *testing.T, name string) *Proc {
	return Start(t, name, "worker", "--proxy", w.C.Proxy, "--path", w.Path, "--id", name)
}

// State reads @pipeline_state ("" when unreadable, e.g. while ytlocal restarts).
func (w *WordCount) State() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	a, err := w.Store.Attributes(ctx)
	if err != nil {
		return ""
	}
	return a.PipelineState
}

// Counts reads the sorted result table as word → count.
func (w *WordCount) Counts(t *testing.T) map[string]int64 {
	t.Helper()
	rows, err := w.Store.SelectRows(context.Background(), fmt.Sprintf("word, count FROM [%s/counts]", w.Root))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, r := range rows {
		out[r["word"].(string)] = toInt(r["count"])
	}
	return out
}

// Output reads every row of the output queue as (word, count) pairs.
func (w *WordCount) Output(t *testing.T) [][2]any {
	t.Helper()
	rows, err := w.Store.SelectRows(context.Background(), fmt.Sprintf("word, count FROM [%s/output]", w.Root))
	if err != nil {
		t.Fatal(err)
	}
	out := make([][2]any, 0, len(rows))
	for _, r := range rows {
		out = append(out, [2]any{r["word"], toInt(r["count"])})
	}
	return out
}

// Feed inserts the next n deferred input rows (WordCountOptions.Deferred; all that are left
// when fewer) and returns how many are left.
func (w *WordCount) Feed(t *testing.T, n int) int {
	t.Helper()
	n = min(n, len(w.pending))
	for len(w.pending) > 0 && n > 0 {
		k := min(n, 1000)
		if err := w.Store.InsertRows(context.Background(), w.Root+"/input", w.pending[:k]); err != nil {
			t.Fatal(err)
		}
		w.pending, n = w.pending[k:], n-k
	}
	return len(w.pending)
}

// CheckExactlyOnce asserts the two sinks saw every input exactly once: the table holds
// the exact count per word, and the output queue holds no (word, count) pair twice and
// reaches the exact count for every word.
func (w *WordCount) CheckExactlyOnce(t *testing.T) {
	t.Helper()
	w.CheckExactlyOnceOf(t, w.Expected)
}

// CheckExactlyOnceOf is CheckExactlyOnce with the expected counts given (word → count).
func (w *WordCount) CheckExactlyOnceOf(t *testing.T, expected map[string]int64) {
	t.Helper()
	got := w.Counts(t)
	var bad []string
	for word, n := range expected {
		if got[word] != n {
			bad = append(bad, fmt.Sprintf("%s: table %d, want %d", word, got[word], n))
		}
	}
	for word := range got {
		if _, ok := expected[word]; !ok {
			bad = append(bad, fmt.Sprintf("%s: unexpected word in table", word))
		}
	}
	seen := map[[2]any]int{}
	maxCount := map[string]int64{}
	for _, p := range w.Output(t) {
		seen[p]++
		word := p[0].(string)
		maxCount[word] = max(maxCount[word], p[1].(int64))
	}
	for p, n := range seen {
		if n > 1 {
			bad = append(bad, fmt.Sprintf("output %v delivered %d times", p, n))
		}
	}
	for word, n := range expected {
		if maxCount[word] != n {
			bad = append(bad, fmt.Sprintf("%s: output reaches %d, want %d", word, maxCount[word], n))
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		if len(bad) > 20 {
			bad = append(bad[:20], fmt.Sprintf("… and %d more", len(bad)-20))
		}
		t.Fatalf("exactly-once violated:\n%s", strings.Join(bad, "\n"))
	}
}

func toInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case uint64:
		return int64(x)
	case int:
		return int64(x)
	}
	return -1
}
