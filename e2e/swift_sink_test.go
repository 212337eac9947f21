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

// swiftSinkSpec: a swift passthrough source over the queue ROOT/input with a sync queue sink
// (TSyncQueueSink) directly on it, writing every row to ROOT/out; 50 rows per epoch.
const swiftSinkSpec = `{
  path = "ROOT/pipeline";
  spec = {
    computations = {
      read = {
        computation_class_name = "NYT::NFlow::TSwiftPassthroughOrderedSourceComputation";
        source_streams = {input = {source_class_name = "NYT::NFlow::TQueueSource";
          parameters = {queue_path = "ROOT/input"; consumer_path = "ROOT/consumer"; finite = %true}}};
        output_stream_ids = ["raw"];
        sinks = {out = {sink_class_name = "NYT::NFlow::TSyncQueueSink"; input_stream_ids = ["raw"];
          parameters = {queue_path = "ROOT/out"}}};
      };
    };
    streams = {raw = {schema = [{name = "n"; type = "int64"; required = %true}]}};
  };
  dynamic_spec = {computations = {read = {batch_duration = 100; max_rows_per_batch = 50}}};
}`

// TestSwiftSourceSyncSinkExactlyOnce: a sync sink directly on a swift source writes every
// source row exactly once although the worker is killed (SIGKILL) while rows are read and
// written, and its replacement re-reads from the committed offset: the sink's writes join the
// commit that moves the offset past their rows. 20,000 rows; the output holds each n once.
func TestSwiftSourceSyncSinkExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	const rows = 20_000
	c := NewCluster(t)
	root := c.Root("swiftsink")
	w := &WordCount{C: c, Root: root, Path: root + "/pipeline"}
	w.Store = c.Store(w.Path)
	ctx := context.Background()
	mk := func(ut ytstore.UserTable) {
		t.Helper()
		if err := w.Store.EnsureUserTable(ctx, ut); err != nil {
			t.Fatal(err)
		}
	}
	nums := schema.Schema{Columns: []schema.Column{{Name: "n", Type: schema.TypeInt64}}}
	mk(ytstore.UserTable{Path: root + "/input", Kind: ytstore.UserQueue, Schema: nums})
	mk(ytstore.UserTable{Path: root + "/consumer", Kind: ytstore.UserConsumer, Queue: root + "/input"})
	mk(ytstore.UserTable{Path: root + "/out", Kind: ytstore.UserQueue, Schema: nums})
	batch := make([]map[string]any, 0, rows)
	for i := range int64(rows) {
		batch = append(batch, map[string]any{"n": i})
	}
	if err := w.Store.InsertRows(ctx, root+"/input", batch); err != nil {
		t.Fatal(err)
	}
	w.SpecFile = filepath.Join(t.TempDir(), "pipeline.yson")
	if err := os.WriteFile(w.SpecFile, []byte(strings.ReplaceAll(swiftSinkSpec, "ROOT", root)), 0o644); err != nil {
		t.Fatal(err)
	}
	w.StartPipeline(t)
	w.Controller(t, "controller")
	worker := w.Worker(t, "worker-1")
	written := func() int {
		got, err := w.Store.SelectRows(ctx, fmt.Sprintf("n FROM [%s/out]", root))
		if err != nil {
			return -1
		}
		return len(got)
	}
	var before int
	Eventually(t, 2*time.Minute, func() (bool, string) {
		before = written()
		if w.State() == "completed" {
			t.Fatalf("completed before the kill (%d rows written)", before)
		}
		return before >= rows/10, fmt.Sprintf("%d rows written", before)
	})
	worker.Kill()
	t.Logf("killed worker-1 after %d of %d rows were written", before, rows)
	w.Worker(t, "worker-2")
	Eventually(t, 3*time.Minute, func() (bool, string) {
		st := w.State()
		return st == "completed", fmt.Sprintf("pipeline state %q, %d rows written", st, written())
	})
	got, err := w.Store.SelectRows(ctx, fmt.Sprintf("n FROM [%s/out]", root))
	if err != nil {
		t.Fatal(err)
	}
	seen := make(map[int64]int, rows)
	for _, r := range got {
		seen[toInt(r["n"])]++
	}
	bad := 0
	for i := range int64(rows) {
		if seen[i] != 1 {
			if bad++; bad <= 10 {
				t.Errorf("row %d written %d times, want once", i, seen[i])
			}
		}
	}
	if len(got) != rows || before >= rows {
		t.Errorf("out holds %d rows (want %d); %d were written before the kill (want fewer than all)", len(got), rows, before)
	}
}

// swiftAtMostOnceSpec: swiftSinkSpec with an async queue sink under at_most_once_strategy
// (TAsyncQueueSink) instead of the sync one.
const swiftAtMostOnceSpec = `{
  path = "ROOT/pipeline";
  spec = {
    computations = {
      read = {
        computation_class_name = "NYT::NFlow::TSwiftPassthroughOrderedSourceComputation";
        source_streams = {input = {source_class_name = "NYT::NFlow::TQueueSource";
          parameters = {queue_path = "ROOT/input"; consumer_path = "ROOT/consumer"; finite = %true}}};
        output_stream_ids = ["raw"];
        sinks = {out = {sink_class_name = "NYT::NFlow::TAsyncQueueSink"; input_stream_ids = ["raw"];
          parameters = {queue_path = "ROOT/out"; producer_path = "ROOT/producer"};
          at_most_once_strategy = {enabled = %true; suspend_destruction_duration = 10000}}};
      };
    };
    streams = {raw = {schema = [{name = "n"; type = "int64"; required = %true}]}};
  };
  dynamic_spec = {computations = {read = {batch_duration = 100; max_rows_per_batch = 50}}};
}`

// TestSwiftSourceAtMostOnceSinkUnderKill: an async sink with at_most_once_strategy directly on
// a swift source writes no source row twice although the worker is killed (SIGKILL) while rows
// are read and written and its replacement re-reads from the committed offset: rows are queued
// only after the commit that moves the offset past them. 5,000 rows; the output holds each n
// at most once, the rows written before the kill among them, and the replacement wrote the
// rest of the input (what the killed worker had queued and not written is lost).
func TestSwiftSourceAtMostOnceSinkUnderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	const rows = 5_000
	c := NewCluster(t)
	root := c.Root("swiftamo")
	w := &WordCount{C: c, Root: root, Path: root + "/pipeline"}
	w.Store = c.Store(w.Path)
	ctx := context.Background()
	mk := func(ut ytstore.UserTable) {
		t.Helper()
		if err := w.Store.EnsureUserTable(ctx, ut); err != nil {
			t.Fatal(err)
		}
	}
	nums := schema.Schema{Columns: []schema.Column{{Name: "n", Type: schema.TypeInt64}}}
	mk(ytstore.UserTable{Path: root + "/input", Kind: ytstore.UserQueue, Schema: nums})
	mk(ytstore.UserTable{Path: root + "/consumer", Kind: ytstore.UserConsumer, Queue: root + "/input"})
	mk(ytstore.UserTable{Path: root + "/out", Kind: ytstore.UserQueue, Schema: nums})
	mk(ytstore.UserTable{Path: root + "/producer", Kind: ytstore.UserProducer})
	batch := make([]map[string]any, 0, rows)
	for i := range int64(rows) {
		batch = append(batch, map[string]any{"n": i})
	}
	if err := w.Store.InsertRows(ctx, root+"/input", batch); err != nil {
		t.Fatal(err)
	}
	w.SpecFile = filepath.Join(t.TempDir(), "pipeline.yson")
	if err := os.WriteFile(w.SpecFile, []byte(strings.ReplaceAll(swiftAtMostOnceSpec, "ROOT", root)), 0o644); err != nil {
		t.Fatal(err)
	}
	w.StartPipeline(t)
	w.Controller(t, "controller")
	worker := w.Worker(t, "worker-1")
	written := func() []map[string]any {
		got, err := w.Store.SelectRows(ctx, fmt.Sprintf("n FROM [%s/out]", root))
		if err != nil {
			return nil
		}
		return got
	}
	var before []map[string]any
	Eventually(t, 2*time.Minute, func() (bool, string) {
		before = written()
		if w.State() == "completed" {
			t.Fatalf("completed before the kill (%d rows written)", len(before))
		}
		return len(before) >= rows/10, fmt.Sprintf("%d rows written", len(before))
	})
	worker.Kill()
	t.Logf("killed worker-1 after %d of %d rows were written", len(before), rows)
	w.Worker(t, "worker-2")
	Eventually(t, 3*time.Minute, func() (bool, string) {
		st := w.State()
		return st == "completed", fmt.Sprintf("pipeline state %q, %d rows written", st, len(written()))
	})
	got, err := w.Store.SelectRows(ctx, fmt.Sprintf("n FROM [%s/out]", root))
	if err != nil {
		t.Fatal(err)
	}
	seen := make(map[int64]int, rows)
	for _, r := range got {
		seen[toInt(r["n"])]++
	}
	bad := 0
	for n, k := range seen {
		if k > 1 || n < 0 || n >= rows {
			if bad++; bad <= 10 {
				t.Errorf("row %d written %d times, want at most once", n, k)
			}
		}
	}
	for _, r := range before {
		if seen[toInt(r["n"])] != 1 {
			t.Fatalf("row %v written before the kill is not in the output once", r)
		}
	}
	// The replacement wrote the rows from its committed offset on: the last row is there.
	if len(got) <= len(before) || seen[rows-1] != 1 || len(before) >= rows {
		t.Errorf("out holds %d distinct rows of %d after the kill, %d before it; the last row written %d times (want the replacement to finish the input)", len(seen), rows, len(before), seen[rows-1])
	}
	t.Logf("%d of %d rows written (each at most once); %d lost with the killed worker's queue", len(seen), rows, rows-len(seen))
}
