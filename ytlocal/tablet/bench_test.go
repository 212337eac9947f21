package tablet

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"go.ytsaurus.tech/yt/go/schema"
)

// BenchmarkEngineInsert measures the engine alone: implicit transactions of 1000
// rows each (no HTTP, no YSON).
func BenchmarkEngineInsert(b *testing.B) {
	e := New(Config{})
	newMounted(b, e, "t", schema.Schema{Columns: []schema.Column{
		{Name: "key", Type: schema.TypeInt64, SortOrder: schema.SortAscending},
		{Name: "value", Type: schema.TypeString},
	}})
	rows := make([]map[string]any, 1000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range rows {
			k := int64(i*len(rows) + j)
			rows[j] = map[string]any{"key": k, "value": fmt.Sprint("value-", k)}
		}
		if _, err := e.Run(func(tx string) error { return e.Insert(tx, "t", rows, InsertOptions{}) }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(rows))/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkMergeWatermark measures a watermark row merge of a dedup index that holds
// 700 000 rows (35 s of a 20 000 msgs/s pipeline) and drops the oldest 100 000 of them (5 s),
// as the controller's dedup collection asks every DedupGCPeriod: the table's first merge
// (first_ms: it orders all rows by the column), and a later one (ns/op). Both run under the
// engine lock, so their time is a stall of every other tablet command.
func BenchmarkMergeWatermark(b *testing.B) {
	const total, drop = 700_000, 100_000
	var first time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e := newDedupIndex(b, total)
		start := time.Now()
		if _, err := e.MergeWatermark("t", "system_timestamp", 0); err != nil {
			b.Fatal(err)
		}
		first += time.Since(start)
		insertDedupRows(b, e, total, total+drop)
		b.StartTimer()
		n, err := e.MergeWatermark("t", "system_timestamp", dedupTS(drop))
		if err != nil || n != drop {
			b.Fatalf("dropped %d, %v", n, err)
		}
	}
	b.ReportMetric(float64(first.Microseconds())/1000/float64(b.N), "first_ms")
}

// BenchmarkSnapshot measures a snapshot of a dedup index of 700 000 rows: the copy taken
// under the engine lock (capture_ms) and its encoding, which the server runs in the
// background.
func BenchmarkSnapshot(b *testing.B) {
	e := newDedupIndex(b, 700_000)
	var capture time.Duration
	var size int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		encode := e.CaptureSnapshot()
		capture += time.Since(start)
		data, err := encode()
		if err != nil {
			b.Fatal(err)
		}
		size = len(data)
	}
	b.ReportMetric(float64(capture.Milliseconds())/float64(b.N), "capture_ms")
	b.ReportMetric(float64(size)/(1<<20), "MiB")
}

// dedupTS is the system_timestamp of the n-th row of newDedupIndex: microseconds, 25 000
// messages a second.
func dedupTS(n int) uint64 { return 1_800_000_000_000_000 + uint64(n)*40 }

// newDedupIndex returns an engine with table "t" shaped like compact_input_messages holding
// rows dedup rows, the n-th with system_timestamp dedupTS(n).
func newDedupIndex(b *testing.B, rows int) *Engine {
	b.Helper()
	const batch = 10_000
	e := New(Config{})
	newMounted(b, e, "t", schema.Schema{Columns: []schema.Column{
		{Name: "deduplication_message_key", Type: schema.TypeString, SortOrder: schema.SortAscending},
		{Name: "system_timestamp", Type: schema.TypeUint64},
	}})
	insertDedupRows(b, e, 0, rows)
	return e
}

// insertDedupRows writes the dedup rows from..to-1 of newDedupIndex.
func insertDedupRows(b *testing.B, e *Engine, from, rows int) {
	b.Helper()
	const batch = 10_000
	for j := from; j < rows; j += batch {
		part := make([]map[string]any, min(batch, rows-j))
		for k := range part {
			n := j + k
			part[k] = map[string]any{"deduplication_message_key": fmt.Sprintf("count\x00%016x%032x", n*7919, n), "system_timestamp": dedupTS(n)}
		}
		if _, err := e.Run(func(tx string) error { return e.Insert(tx, "t", part, InsertOptions{}) }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDedupIndexGC measures a forced collection of the heap holding a dedup index of
// 700 000 rows (35 s of a 20 000 msgs/s pipeline) written after the table's first
// watermark merge, as a pipeline's dedup tables are (rows in slabs, values in blocks): its
// mark phase is what the collector does for the index in every cycle, with every other
// goroutine of the server slowed down meanwhile.
func BenchmarkDedupIndexGC(b *testing.B) {
	e := New(Config{})
	newMounted(b, e, "t", schema.Schema{Columns: []schema.Column{
		{Name: "deduplication_message_key", Type: schema.TypeString, SortOrder: schema.SortAscending},
		{Name: "system_timestamp", Type: schema.TypeUint64},
	}})
	if _, err := e.MergeWatermark("t", "system_timestamp", 0); err != nil {
		b.Fatal(err)
	}
	insertDedupRows(b, e, 0, 700_000)
	runtime.GC()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runtime.GC()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "gc_ms")
	runtime.KeepAlive(e)
}
