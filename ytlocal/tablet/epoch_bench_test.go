package tablet

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"
	"time"

	"go.ytsaurus.tech/yt/go/schema"
)

// epochBatch is how many rows one insert of the epoch benchmarks carries (about what one
// epoch of the bench/peers burst writes to each table).
const epochBatch = 256

// BenchmarkEngineDedupInsert inserts batches of new rows into a dedup index (a table merged
// by watermark, like compact_input_messages: a bytes key, two uint64 values), one implicit
// transaction per batch; allocs/op is per batch.
func BenchmarkEngineDedupInsert(b *testing.B) {
	e := New(Config{})
	newMounted(b, e, "dedup", schema.Schema{Columns: []schema.Column{
		{Name: "deduplication_message_key", Type: schema.TypeBytes, SortOrder: schema.SortAscending},
		{Name: "system_timestamp", Type: schema.TypeUint64},
		{Name: "payload_fingerprint", Type: schema.TypeUint64},
	}})
	if _, err := e.MergeWatermark("dedup", "system_timestamp", 0); err != nil {
		b.Fatal(err)
	}
	rows := make([]map[string]any, epochBatch)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		for j := range rows {
			n := uint64(i*epochBatch + j)
			key := binary.BigEndian.AppendUint64([]byte("count\x00message-id-"), n*0x9E3779B97F4A7C15)
			rows[j] = map[string]any{"deduplication_message_key": string(key),
				"system_timestamp": uint64(1 << 50), "payload_fingerprint": n * 0x100000001B3}
		}
		b.StartTimer()
		if _, err := e.Run(func(tx string) error { return e.Insert(tx, "dedup", rows, InsertOptions{}) }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEngineStateUpsert overwrites the rows of a keyed state table of 1,000 keys (like
// the runtime's states table: computation id and key bytes, a state blob) in batches, one
// implicit transaction per batch; allocs/op is per batch.
func BenchmarkEngineStateUpsert(b *testing.B) {
	e := New(Config{})
	newMounted(b, e, "states", schema.Schema{Columns: []schema.Column{
		{Name: "computation_id", Type: schema.TypeBytes, SortOrder: schema.SortAscending},
		{Name: "key", Type: schema.TypeBytes, SortOrder: schema.SortAscending},
		{Name: "state", Type: schema.TypeBytes},
	}})
	rows := make([]map[string]any, epochBatch)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		for j := range rows {
			k := (i*epochBatch + j) % 1000
			rows[j] = map[string]any{"computation_id": "count", "key": fmt.Sprintf("[\x01word-%04d;]", k),
				"state": fmt.Sprintf("{count=%d;}", i)}
		}
		b.StartTimer()
		if _, err := e.Run(func(tx string) error { return e.Insert(tx, "states", rows, InsertOptions{}) }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEngineStateCommit times only the commit of a transaction overwriting epochBatch
// rows of a keyed state table of 1,000 keys (like BenchmarkEngineStateUpsert, whose batches
// also pay for the insert): the conflict checks, the resolution and the apply. It also
// reports thread-cpu-ns/op, the CPU time of the committing thread, which other processes
// on a shared machine disturb less than the wall time.
func BenchmarkEngineStateCommit(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cpu time.Duration
	e := New(Config{})
	newMounted(b, e, "states", schema.Schema{Columns: []schema.Column{
		{Name: "computation_id", Type: schema.TypeBytes, SortOrder: schema.SortAscending},
		{Name: "key", Type: schema.TypeBytes, SortOrder: schema.SortAscending},
		{Name: "state", Type: schema.TypeBytes},
	}})
	rows := make([]map[string]any, epochBatch)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		for j := range rows {
			k := (i*epochBatch + j) % 1000
			rows[j] = map[string]any{"computation_id": "count", "key": fmt.Sprintf("[\x01word-%04d;]", k),
				"state": fmt.Sprintf("{count=%d;}", i)}
		}
		tx := fmt.Sprintf("tx-%d", i)
		if _, err := e.StartTx(tx, time.Minute); err != nil {
			b.Fatal(err)
		}
		if err := e.Insert(tx, "states", rows, InsertOptions{}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		before := threadCPU(b)
		if _, err := e.Commit(tx, nil, nil); err != nil {
			b.Fatal(err)
		}
		cpu += threadCPU(b) - before
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "thread-cpu-ns/op")
	if got := e.tables["states"].rows; len(got) != 1000 {
		b.Fatalf("states table has %d rows, want 1000", len(got))
	}
}
