package ytstore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/yt"

	"github.com/ytflow/yt-flow/ytlocal"
)

// TestRowBatchTaken: with the pinned SDK the rows an epoch writes go out as pre-encoded
// batches, for a client without compression (loopback) and for clients compressing their
// requests (the SDK default, zstd, elsewhere), and the server reads back what was written.
func TestRowBatchTaken(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := ytlocal.Start(ctx, ytlocal.Config{})
	require.NoError(t, err)
	defer func() { _ = srv.Close() }()
	for name, codec := range map[string]yt.ClientCompressionCodec{
		"none": yt.ClientCodecNone, "default": yt.ClientCodecDefault, "snappy": yt.ClientCodecSnappy, "gzip": yt.ClientCodecGZIP,
	} {
		t.Run(name, func(t *testing.T) {
			s, err := open(Config{Proxy: srv.Addr(), Path: "//tmp/pipe-" + name}, codec)
			require.NoError(t, err)
			defer s.Close()
			require.NoError(t, s.CreatePipeline(ctx))

			tx, err := s.beginTabletTx(ctx)
			require.NoError(t, err)
			defer tx.abort()
			rows := []any{
				&StateRow{ComputationID: "c", KeyHash: 7, Key: []byte("k1"), Name: "count", State: []byte("2")},
				StateRow{ComputationID: "c", KeyHash: 7, Key: []byte("k2"), Name: "count", State: make([]byte, 100_000)},
			}
			_, ok, err := s.rowBatch([]byte("{};"))
			require.NoError(t, err)
			require.True(t, ok, "the pinned SDK's row batch is written directly")
			require.NotNil(t, batchType.Load(), "the pinned SDK's row batches are made of their type (newRowBatch)")
			_, ok = asRowList(rows)
			require.True(t, ok, "state rows encode themselves")
			require.NoError(t, tx.insert(ctx, TableStates, rows))
			require.NoError(t, tx.commit(ctx))
			states, err := s.LoadStates(ctx, "c", []uint64{7})
			require.NoError(t, err)
			require.Len(t, states, 2)
			assert.Equal(t, []byte("2"), states[0].State)
			assert.Len(t, states[1].State, 100_000)

			// A whole epoch: its dedup rows, states, timers, chunks, partition states and token
			// go out as batches (made of the batch type).
			lease, err := s.StartLease(ctx, "job-1", time.Minute)
			require.NoError(t, err)
			require.NoError(t, s.CommitEpoch(ctx, sampleEpoch("p1", lease, 100)))
			requireSampleCommitted(ctx, t, s, 100)
		})
	}
}
