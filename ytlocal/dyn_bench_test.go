package ytlocal_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yt"
	"go.ytsaurus.tech/yt/go/yt/ythttp"

	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytlocal/ytlocaltest"
)

// Benchmarks of the dynamic-table commands through the real SDK over loopback:
//
//	go test ./ytlocal -run '^$' -bench BenchmarkDyn -benchtime 5s

type benchRow struct {
	Key   int64  `yson:"key,key"`
	Value string `yson:"value"`
}

type benchKey struct {
	Key int64 `yson:"key"`
}

// benchSetup is one server and client configuration a benchmark runs under.
type benchSetup struct {
	name    string
	codec   yt.ClientCompressionCodec
	durable bool // write-ahead log with fsync per commit
}

// benchCodecs runs a benchmark with the SDK's default block compression (zstd_3),
// without compression (which shows the cost of the codec on both ends), and
// without compression on a durable server.
func benchCodecs(b *testing.B, run func(b *testing.B, setup benchSetup)) {
	for _, s := range []benchSetup{
		{name: "zstd", codec: yt.ClientCodecDefault},
		{name: "none", codec: yt.ClientCodecNone},
		{name: "none-durable", codec: yt.ClientCodecNone, durable: true},
	} {
		b.Run(s.name, func(b *testing.B) { run(b, s) })
	}
}

// benchTable starts a server as setup says and creates and mounts a sorted table of benchRow
// (also used by tests).
func benchTable(b testing.TB, setup benchSetup) (context.Context, yt.Client, ypath.Path) {
	b.Helper()
	var cfg ytlocal.Config
	if setup.durable {
		cfg.DataDir = b.TempDir()
	}
	addr := ytlocaltest.Start(b, cfg).Addr()
	yc, err := ythttp.NewClient(&yt.Config{Proxy: addr, CompressionCodec: setup.codec})
	require.NoError(b, err)
	b.Cleanup(yc.Stop)
	ctx := context.Background()
	p := newMountedTable(b, ctx, yc, schema.MustInfer(&benchRow{}))
	return ctx, yc, p
}

// cpuTime is the CPU time (user+system) the process used so far. Client and server
// share the process, so per-op CPU time is a load-independent cost of both ends.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func batch(start int64, n int) []any {
	rows := make([]any, n)
	for i := range rows {
		rows[i] = &benchRow{Key: start + int64(i), Value: fmt.Sprintf("value-%d", start+int64(i))}
	}
	return rows
}

// BenchmarkDynInsertRows inserts batches of 1000 rows, each batch one implicit
// tablet transaction; reports rows/s.
func BenchmarkDynInsertRows(b *testing.B) { benchCodecs(b, benchmarkDynInsertRows) }

func benchmarkDynInsertRows(b *testing.B, setup benchSetup) {
	ctx, yc, p := benchTable(b, setup)
	const size = 1000
	b.ResetTimer()
	start, cpu := time.Now(), cpuTime()
	for i := 0; i < b.N; i++ {
		require.NoError(b, yc.InsertRows(ctx, p, batch(int64(i)*size, size), nil))
	}
	b.ReportMetric(float64(b.N*size)/time.Since(start).Seconds(), "rows/s")
	b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N*size)/1e3, "cpu-µs/row")
}

// BenchmarkDynCommitWithPrerequisite runs start_transaction(tablet) + insert_rows
// (one row) + commit_transaction with a master prerequisite; reports commits/s.
func BenchmarkDynCommitWithPrerequisite(b *testing.B) {
	benchCodecs(b, benchmarkDynCommitWithPrerequisite)
}

func benchmarkDynCommitWithPrerequisite(b *testing.B, setup benchSetup) {
	ctx, yc, p := benchTable(b, setup)
	master, err := yc.BeginTx(ctx, nil)
	require.NoError(b, err)
	defer func() { _ = master.Abort() }()
	b.ResetTimer()
	start, cpu := time.Now(), cpuTime()
	for i := 0; i < b.N; i++ {
		txID, err := yc.StartTabletTx(ctx, &yt.StartTabletTxOptions{Type: yt.TxTypeTablet, Sticky: true})
		require.NoError(b, err)
		require.NoError(b, yc.InsertRows(ctx, p, batch(int64(i), 1), &yt.InsertRowsOptions{
			TransactionOptions: &yt.TransactionOptions{TransactionID: txID},
		}))
		require.NoError(b, yc.CommitTx(ctx, txID, &yt.CommitTxOptions{
			Sticky:              true,
			PrerequisiteOptions: &yt.PrerequisiteOptions{TransactionIDs: []yt.TxID{master.ID()}},
		}))
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "commits/s")
	b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N)/1e3, "cpu-µs/commit")
}

// BenchmarkDynLookup looks up one key of 100k rows per call; reports p50/p99 latency.
func BenchmarkDynLookup(b *testing.B) { benchCodecs(b, benchmarkDynLookup) }

func benchmarkDynLookup(b *testing.B, setup benchSetup) {
	ctx, yc, p := benchTable(b, setup)
	const rows = 100_000
	for i := int64(0); i < rows; i += 1000 {
		require.NoError(b, yc.InsertRows(ctx, p, batch(i, 1000), nil))
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		r, err := yc.LookupRows(ctx, p, []any{&benchKey{int64(i*7919) % rows}}, nil)
		require.NoError(b, err)
		require.True(b, r.Next())
		require.NoError(b, r.Close())
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N)/1e3, "cpu-µs/lookup")
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkDynMemoryPerMillionRows inserts 1M rows (keys int64, ~12-byte strings)
// and reports the growth of the in-use heap of the process (server and client share
// it; the client holds nothing after the inserts).
func BenchmarkDynMemoryPerMillionRows(b *testing.B) {
	for i := 0; i < b.N; i++ {
		ctx, yc, p := benchTable(b, benchSetup{codec: yt.ClientCodecDefault})
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for k := int64(0); k < 1_000_000; k += 1000 {
			require.NoError(b, yc.InsertRows(ctx, p, batch(k, 1000), nil))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/(1<<20), "MiB/1M-rows")
	}
}

type stateBenchRow struct {
	Computation string `yson:"computation_id,key"`
	KeyHash     uint64 `yson:"key_hash,key"`
	State       string `yson:"state"`
}

// BenchmarkDynSelectInList runs the query shape a keyed computation uses to load
// states: `computation_id = 'c' and key_hash in (500 literals)` over 100k rows.
// select_rows has no key-range pruning, so this is a full scan.
func BenchmarkDynSelectInList(b *testing.B) {
	addr := ytlocaltest.New(b)
	yc, err := ythttp.NewClient(&yt.Config{Proxy: addr, CompressionCodec: yt.ClientCodecNone})
	require.NoError(b, err)
	b.Cleanup(yc.Stop)
	ctx := context.Background()
	p := newMountedTable(b, ctx, yc, schema.MustInfer(&stateBenchRow{}))
	const rows = 100_000
	for i := 0; i < rows; i += 1000 {
		batch := make([]any, 1000)
		for j := range batch {
			batch[j] = &stateBenchRow{Computation: "c", KeyHash: uint64(i+j) * 7919, State: "s"}
		}
		require.NoError(b, yc.InsertRows(ctx, p, batch, nil))
	}
	lits := make([]string, 500)
	for i := range lits {
		lits[i] = fmt.Sprintf("%du", uint64(i*100)*7919)
	}
	q := fmt.Sprintf("* FROM [%s] WHERE computation_id = 'c' AND key_hash IN (%s)", p, strings.Join(lits, ", "))
	b.ResetTimer()
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		r, err := yc.SelectRows(ctx, q, nil)
		require.NoError(b, err)
		n := 0
		for r.Next() {
			n++
		}
		require.NoError(b, r.Err())
		require.Equal(b, 500, n)
	}
	b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(b.N)/1e3, "cpu-ms/query")
}
