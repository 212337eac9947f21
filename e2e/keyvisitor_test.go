package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/ytstore"
)

// keyVisitorSpec: a queue of words (ROOT/input, not finite) split into words and counted per
// word by CountWordsVisited, whose key visitor stream visits every word with a count once per
// pass (period PERIOD ms); each visit writes {word, pass, pass_start, count} to the queue
// ROOT/visits through a sync sink, in the commit that moves the visitor past the word. The count
// runs on one partition, so that pass numbers are those of one cursor.
const keyVisitorSpec = `{
  path = "ROOT/pipeline";
  spec = {
    computations = {
      split = {
        computation_class_name = "NYT::NFlow::TProcessFunctionSourceComputation";
        processing_function = "SplitWords";
        source_streams = {lines = {source_class_name = "NYT::NFlow::TQueueSource";
          parameters = {queue_path = "ROOT/input"; consumer_path = "ROOT/consumer"; finite = FINITE}}};
        output_stream_ids = ["words"];
      };
      count = {
        computation_class_name = "NYT::NFlow::TProcessFunctionComputation";
        processing_function = "CountWordsVisited";
        group_by_schema = [
          {name = "hash"; type = "uint64"; required = %true; expression = "farm_hash(word)"};
          {name = "word"; type = "string"; required = %true};
        ];
        input_stream_ids = ["words"];
        output_stream_ids = ["counts"; "visits"];
        key_visitor_streams = {visitor = {names = ["count"]}};
        streams_dependency = {visits = ["visitor"]};
        sinks = {
          table = {sink_class_name = "NYT::NFlow::NSortedDynamicTable::TSyncSink"; input_stream_ids = ["counts"];
            parameters = {table_path = "ROOT/counts"}};
          visited = {sink_class_name = "NYT::NFlow::TSyncQueueSink"; input_stream_ids = ["visits"];
            parameters = {queue_path = "ROOT/visits"}};
        };
      };
    };
    streams = {
      words = {schema = [{name = "word"; type = "string"; required = %true}]};
      counts = {schema = [{name = "hash"; type = "uint64"}; {name = "word"; type = "string"}; {name = "count"; type = "int64"}]};
      visits = {schema = [{name = "word"; type = "string"}; {name = "pass"; type = "int64"}; {name = "pass_start"; type = "int64"}; {name = "count"; type = "int64"}]};
    };
  };
  dynamic_spec = {computations = {
    split = {batch_duration = 100};
    count = {batch_duration = 100; parameters = {desired_partition_count = 1};
      key_visitor_streams = {visitor = {parameters = {period = PERIOD}}}};
  }};
}`

// TestKeyVisitorVisitsEachKeyOncePerPass: a key visitor over 10,000 words with state visits
// each of them exactly once per pass (one pass per period), across a kill of the worker in
// the middle of a pass. The check is on counts: for every pass that started after all the
// words had their state and that was followed by another, the visits queue holds exactly one
// row per word (10,000 rows, 10,000 distinct words, each with its count, 1), the pass the
// worker was killed in included.
func TestKeyVisitorVisitsEachKeyOncePerPass(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	const keys = 10_000
	c := NewCluster(t)
	root := c.Root("keyvisitor")
	w := &WordCount{C: c, Root: root, Path: root + "/pipeline"}
	w.Store = c.Store(w.Path)
	ctx := context.Background()
	mk := func(ut ytstore.UserTable) {
		t.Helper()
		if err := w.Store.EnsureUserTable(ctx, ut); err != nil {
			t.Fatal(err)
		}
	}
	mk(ytstore.UserTable{Path: root + "/input", Kind: ytstore.UserQueue, Schema: schema.Schema{Columns: []schema.Column{{Name: "text", Type: schema.TypeString}}}})
	mk(ytstore.UserTable{Path: root + "/consumer", Kind: ytstore.UserConsumer, Queue: root + "/input"})
	mk(ytstore.UserTable{Path: root + "/counts", Kind: ytstore.UserSortedTable, Schema: schema.Schema{UniqueKeys: true, Columns: []schema.Column{
		{Name: "hash", Type: schema.TypeUint64, SortOrder: schema.SortAscending},
		{Name: "word", Type: schema.TypeString, SortOrder: schema.SortAscending},
		{Name: "count", Type: schema.TypeInt64},
	}}})
	mk(ytstore.UserTable{Path: root + "/visits", Kind: ytstore.UserQueue, Schema: schema.Schema{Columns: []schema.Column{
		{Name: "word", Type: schema.TypeString}, {Name: "pass", Type: schema.TypeInt64},
		{Name: "pass_start", Type: schema.TypeInt64}, {Name: "count", Type: schema.TypeInt64},
	}}})
	rows := make([]map[string]any, 0, keys)
	for i := range keys {
		rows = append(rows, map[string]any{"text": fmt.Sprintf("k%05d", i)})
	}
	if err := w.Store.InsertRows(ctx, root+"/input", rows); err != nil {
		t.Fatal(err)
	}
	w.SpecFile = filepath.Join(t.TempDir(), "pipeline.yson")
	text := strings.NewReplacer("ROOT", root, "PERIOD", "4000", "FINITE", "%false").Replace(keyVisitorSpec)
	if err := os.WriteFile(w.SpecFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	w.StartPipeline(t)
	w.Controller(t, "controller")
	worker := w.Worker(t, "worker-1")

	countRows := func() int {
		got, err := w.Store.SelectRows(ctx, fmt.Sprintf("word FROM [%s/counts]", root))
		if err != nil {
			return -1
		}
		return len(got)
	}
	Eventually(t, 2*time.Minute, func() (bool, string) {
		n := countRows()
		return n == keys, fmt.Sprintf("%d of %d words counted", n, keys)
	})
	// Every word has its state from here on: passes that start later visit all of them.
	loaded := time.Now().UnixMicro()

	type visit struct {
		word        string
		pass, start int64
		count       int64
	}
	read := func() ([]visit, error) {
		got, err := w.Store.SelectRows(ctx, fmt.Sprintf("word, pass, pass_start, count FROM [%s/visits]", root))
		if err != nil {
			return nil, err
		}
		out := make([]visit, 0, len(got))
		for _, r := range got {
			out = append(out, visit{word: fmt.Sprint(r["word"]), pass: toInt(r["pass"]), start: toInt(r["pass_start"]), count: toInt(r["count"])})
		}
		return out, nil
	}
	// byPass counts the visits of each pass that started after loaded.
	byPass := func(vs []visit) map[int64]int {
		m := map[int64]int{}
		for _, v := range vs {
			if v.start > loaded {
				m[v.pass]++
			}
		}
		return m
	}
	// Kill the worker in the middle of a pass that started after loaded.
	var killedIn int64 = -1
	Eventually(t, 2*time.Minute, func() (bool, string) {
		vs, err := read()
		if err != nil {
			return false, err.Error()
		}
		for p, n := range byPass(vs) {
			if n > 0 && n < keys {
				killedIn = p
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d visits, none in the middle of a pass after loading: %v", len(vs), byPass(vs))
	})
	worker.Kill()
	vs, _ := read()
	t.Logf("killed the worker during pass %d (%d of %d visits then)", killedIn, byPass(vs)[killedIn], keys)
	w.Worker(t, "worker-2")

	// Wait until two passes after the killed one have started: the killed one and the next
	// are then complete.
	Eventually(t, 3*time.Minute, func() (bool, string) {
		vs, err := read()
		if err != nil {
			return false, err.Error()
		}
		m := byPass(vs)
		_, ok := m[killedIn+2]
		return ok, fmt.Sprintf("visits per pass: %v", m)
	})
	vs, err := read()
	if err != nil {
		t.Fatal(err)
	}
	perPass := map[int64]map[string]int{}
	counts := map[int64]bool{}
	var last int64
	for _, v := range vs {
		last = max(last, v.pass)
		if v.start <= loaded {
			continue
		}
		if perPass[v.pass] == nil {
			perPass[v.pass] = map[string]int{}
		}
		perPass[v.pass][v.word]++
		counts[v.count] = true
	}
	checked := 0
	for p := killedIn; p < last; p++ {
		words := perPass[p]
		dups := 0
		for _, n := range words {
			if n > 1 {
				dups++
			}
		}
		if len(words) != keys || dups != 0 {
			t.Errorf("pass %d: %d distinct words visited (want %d), %d visited more than once", p, len(words), keys, dups)
		}
		checked++
	}
	if checked < 2 {
		t.Errorf("checked %d complete passes after the kill, want at least 2", checked)
	}
	if len(counts) != 1 || !counts[1] {
		t.Errorf("visits carried counts %v, want every word's count, 1", counts)
	}
	t.Logf("%d visits; passes %d..%d complete, each visiting all %d words once", len(vs), killedIn, last-1, keys)
}

// TestKeyVisitorFinalPass: once the upstream of a key visitor completes (a finite source read
// to its end), the visitor runs a final pass over every key, and only then does the pipeline
// complete: the last pass in the visits queue holds each of the 1,000 words exactly once, with
// its final count.
func TestKeyVisitorFinalPass(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	const keys = 1000
	c := NewCluster(t)
	root := c.Root("keyvisitorfinal")
	w := &WordCount{C: c, Root: root, Path: root + "/pipeline"}
	w.Store = c.Store(w.Path)
	ctx := context.Background()
	mk := func(ut ytstore.UserTable) {
		t.Helper()
		if err := w.Store.EnsureUserTable(ctx, ut); err != nil {
			t.Fatal(err)
		}
	}
	mk(ytstore.UserTable{Path: root + "/input", Kind: ytstore.UserQueue, Schema: schema.Schema{Columns: []schema.Column{{Name: "text", Type: schema.TypeString}}}})
	mk(ytstore.UserTable{Path: root + "/consumer", Kind: ytstore.UserConsumer, Queue: root + "/input"})
	mk(ytstore.UserTable{Path: root + "/counts", Kind: ytstore.UserSortedTable, Schema: schema.Schema{UniqueKeys: true, Columns: []schema.Column{
		{Name: "hash", Type: schema.TypeUint64, SortOrder: schema.SortAscending},
		{Name: "word", Type: schema.TypeString, SortOrder: schema.SortAscending},
		{Name: "count", Type: schema.TypeInt64},
	}}})
	mk(ytstore.UserTable{Path: root + "/visits", Kind: ytstore.UserQueue, Schema: schema.Schema{Columns: []schema.Column{
		{Name: "word", Type: schema.TypeString}, {Name: "pass", Type: schema.TypeInt64},
		{Name: "pass_start", Type: schema.TypeInt64}, {Name: "count", Type: schema.TypeInt64},
	}}})
	rows := make([]map[string]any, 0, 2*keys)
	for i := range 2 * keys {
		rows = append(rows, map[string]any{"text": fmt.Sprintf("k%04d", i%keys)})
	}
	if err := w.Store.InsertRows(ctx, root+"/input", rows); err != nil {
		t.Fatal(err)
	}
	w.SpecFile = filepath.Join(t.TempDir(), "pipeline.yson")
	// A period of a day: the only passes are the first (from the job's start) and the final.
	text := strings.NewReplacer("ROOT", root, "PERIOD", "86400000", "FINITE", "%true").Replace(keyVisitorSpec)
	if err := os.WriteFile(w.SpecFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	w.StartPipeline(t)
	w.Controller(t, "controller")
	w.Worker(t, "worker")
	Eventually(t, 2*time.Minute, func() (bool, string) {
		st := w.State()
		return st == "completed", fmt.Sprintf("pipeline state %q", st)
	})
	got, err := w.Store.SelectRows(ctx, fmt.Sprintf("word, pass, count FROM [%s/visits]", root))
	if err != nil {
		t.Fatal(err)
	}
	var last int64
	for _, r := range got {
		last = max(last, toInt(r["pass"]))
	}
	final := map[string][]int64{}
	for _, r := range got {
		if toInt(r["pass"]) == last {
			final[fmt.Sprint(r["word"])] = append(final[fmt.Sprint(r["word"])], toInt(r["count"]))
		}
	}
	bad := 0
	for word, cs := range final {
		if len(cs) != 1 || cs[0] != 2 {
			if bad++; bad <= 5 {
				t.Errorf("final pass %d: word %s visited with counts %v, want once with 2", last, word, cs)
			}
		}
	}
	if last == 0 || len(final) != keys {
		t.Errorf("final pass %d visited %d words, want pass ≥ 1 over all %d", last, len(final), keys)
	}
	t.Logf("%d visits in all; the final pass %d visited %d words", len(got), last, len(final))
}
