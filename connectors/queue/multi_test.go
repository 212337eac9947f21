package queue

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytstore"
)

// TestMultiClusterSinkResend: the multi-cluster sink, opened through the connector SPI on a
// pipeline whose clusters map names two other servers, writes every row to the queue on
// each; a delivery that fails on the second cluster (its queue not created yet) holds
// nothing though the first took the rows, and once the queue is there the resend — of the
// same sink, then of a restarted job — leaves each queue with every row once.
func TestMultiClusterSinkResend(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	server := func() string {
		srv, err := ytlocal.Start(ctx, ytlocal.Config{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = srv.Close() })
		return srv.Addr()
	}
	main, a, b := server(), server(), server()
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: main, Path: "//tmp/p"})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	require.NoError(t, st.CreatePipeline(ctx))
	require.NoError(t, st.SetClusters(ctx, map[string]string{"a": a, "b": b}))
	qs := schema.Schema{Columns: []schema.Column{{Name: "v", Type: schema.TypeInt64}}}
	stores := map[string]*ytstore.Store{}
	for _, c := range []string{"a", "b"} {
		cs, err := st.Cluster(ctx, c)
		require.NoError(t, err)
		stores[c] = cs
		require.NoError(t, cs.EnsureUserTable(ctx, ytstore.UserTable{Path: "//tmp/producer", Kind: ytstore.UserProducer}))
	}
	makeQueue := func(c string) {
		require.NoError(t, stores[c].EnsureUserTable(ctx, ytstore.UserTable{Path: "//tmp/q", Kind: ytstore.UserQueue, Schema: qs}))
		require.NoError(t, stores[c].EnsureUserTable(ctx, ytstore.UserTable{Path: "//tmp/c", Kind: ytstore.UserConsumer, Queue: "//tmp/q"}))
	}
	makeQueue("a")
	ctors, ok := connector.SinkOf(MultiClusterSinkClass)
	require.True(t, ok)
	params := &MultiSinkParams{SinkParams: SinkParams{QueuePath: "//tmp/q", ProducerPath: "//tmp/producer"}, Clusters: []string{"a", "b"}}
	open := func() connector.AsyncSink {
		s, err := ctors.AsyncSink(connector.Env{Store: st, PartitionID: "p0", SinkID: "out"}, params)
		require.NoError(t, err)
		return s
	}
	batches := func(from, to int64) []connector.Batch {
		var out []connector.Batch
		for i := from; i < to; i++ {
			out = append(out, connector.Batch{FirstSeq: i, LastSeq: i, Rows: []connector.Delivery{{SequenceNumber: i, Row: map[string]any{"v": i}}}})
		}
		return out
	}
	s := open()
	n, err := s.Deliver(ctx, batches(0, 3))
	require.ErrorContains(t, err, "cluster b")
	require.Equal(t, 0, n)
	makeQueue("b")

	for _, s := range []connector.AsyncSink{s, open()} {
		n, err = s.Deliver(ctx, batches(0, 6))
		require.NoError(t, err)
		require.Equal(t, 6, n)
	}
	for _, c := range []string{"a", "b"} {
		rows, err := NewSource(stores[c], "//tmp/q", "//tmp/c", 0, true).Read(ctx, nil, 100)
		require.NoError(t, err)
		var got []int64
		for _, r := range rows {
			got = append(got, r.Columns["v"].(int64))
		}
		require.Equal(t, []int64{0, 1, 2, 3, 4, 5}, got, "cluster %s: every row once, in order", c)
	}
}
