package ytlocal_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/yt"

	"github.com/ytflow/yt-flow/ytlocal"
)

type dedupRow struct {
	Key         []byte `yson:"deduplication_message_key,key"`
	Timestamp   uint64 `yson:"system_timestamp"`
	Fingerprint uint64 `yson:"payload_fingerprint"`
}

type stateRow struct {
	Computation []byte `yson:"computation_id,key"`
	Key         []byte `yson:"key,key"`
	State       []byte `yson:"state"`
}

type stateKey struct {
	Computation []byte `yson:"computation_id"`
	Key         []byte `yson:"key"`
}

// BenchmarkInProcessEpoch runs what one epoch of a keyed count asks of the server, through
// the SDK client in process (Config.InProcess): a tablet transaction that inserts 256 new
// rows into a dedup index, looks up 256 of 1,000 state keys, overwrites them, and commits.
// allocs/op and cpu-µs/row (both ends: they share the process) are per epoch and per row
// of the dedup index.
func BenchmarkInProcessEpoch(b *testing.B) {
	const batch, keys = 256, 1000
	ctx := context.Background()
	srv, err := ytlocal.Start(ctx, ytlocal.Config{InProcess: true})
	require.NoError(b, err)
	defer srv.Close()
	yc := inProcessClient(b, srv.Addr())
	dedup := newMountedTable(b, ctx, yc, schema.MustInfer(&dedupRow{}))
	states := newMountedTable(b, ctx, yc, schema.MustInfer(&stateRow{}))

	dedupRows, stateRows, stateKeys := make([]any, batch), make([]any, batch), make([]any, batch)
	fill := func(i int) {
		for j := range batch {
			n := uint64(i*batch + j)
			dedupRows[j] = &dedupRow{Key: binary.BigEndian.AppendUint64([]byte("count\x00message-id-"), n*0x9E3779B97F4A7C15),
				Timestamp: 1 << 50, Fingerprint: n * 0x100000001B3}
			k := []byte(fmt.Sprintf("[\x01word-%04d;]", (i*batch+j)%keys))
			stateRows[j] = &stateRow{Computation: []byte("count"), Key: k, State: []byte(fmt.Sprintf("{count=%d;}", i))}
			stateKeys[j] = &stateKey{Computation: []byte("count"), Key: k}
		}
	}
	epoch := func() {
		tx, err := yc.BeginTabletTx(ctx, nil)
		require.NoError(b, err)
		require.NoError(b, tx.InsertRows(ctx, dedup, dedupRows, nil))
		r, err := tx.LookupRows(ctx, states, stateKeys, &yt.LookupRowsOptions{KeepMissingRows: true})
		require.NoError(b, err)
		rows := 0
		for r.Next() {
			rows++
		}
		require.NoError(b, r.Err())
		require.NoError(b, r.Close())
		require.Equal(b, batch, rows)
		require.NoError(b, tx.InsertRows(ctx, states, stateRows, nil))
		require.NoError(b, tx.Commit())
	}
	b.ReportAllocs()
	var cpu time.Duration
	epochs := 0
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		fill(i)
		b.StartTimer()
		start := cpuTime()
		epoch()
		cpu += cpuTime() - start
		epochs++
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(epochs*batch)/1e3, "cpu-µs/row")
}
