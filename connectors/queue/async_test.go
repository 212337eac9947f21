package queue

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/internal/ybin"

	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytstore"
)

func queueEnv(t *testing.T) (*ytstore.Store, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	srv, err := ytlocal.Start(ctx, ytlocal.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: srv.Addr(), Path: "//tmp/p"})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	qs := schema.Schema{Columns: []schema.Column{{Name: "v", Type: schema.TypeInt64}}}
	require.NoError(t, st.EnsureUserTable(ctx, ytstore.UserTable{Path: "//tmp/q", Kind: ytstore.UserQueue, Schema: qs}))
	require.NoError(t, st.EnsureUserTable(ctx, ytstore.UserTable{Path: "//tmp/c", Kind: ytstore.UserConsumer, Queue: "//tmp/q"}))
	require.NoError(t, st.EnsureUserTable(ctx, ytstore.UserTable{Path: "//tmp/producer", Kind: ytstore.UserProducer}))
	return st, ctx
}

func TestAsyncSinkResendSameSeqNo(t *testing.T) {
	st, ctx := queueEnv(t)
	// Odd rows are handed over as they are stored (encoded), even ones decoded: runs of
	// either kind are pushed in sequence order.
	// One batch per row.
	ds := func(from, to int64) []connector.Batch {
		var out []connector.Batch
		for i := from; i < to; i++ {
			d := connector.Delivery{SequenceNumber: i, Row: map[string]any{"v": i}}
			if i%2 == 1 {
				d.Encoded, _ = ybin.AppendMap(nil, d.Row)
				d.Row = nil
			}
			out = append(out, connector.Batch{FirstSeq: i, LastSeq: i, Rows: []connector.Delivery{d}})
		}
		return out
	}
	deliver := func(s *AsyncSink, batches []connector.Batch) error {
		n, err := s.Deliver(ctx, batches)
		if err == nil {
			assert.Equal(t, len(batches), n, "a delivery without an error holds every batch")
		}
		return err
	}
	s := NewAsyncSink(st, "//tmp/producer", "//tmp/q", "p0/sink")
	require.NoError(t, deliver(s, ds(0, 3)))
	require.NoError(t, deliver(s, ds(0, 3)), "a resend after a lost reply")

	// A restarted job opens the same session and resends what its output store still holds.
	restarted := NewAsyncSink(st, "//tmp/producer", "//tmp/q", "p0/sink")
	require.NoError(t, deliver(restarted, ds(1, 5)))

	src := NewSource(st, "//tmp/q", "//tmp/c", 0, true)
	rows, err := src.Read(ctx, nil, 100)
	require.NoError(t, err)
	var got []int64
	for _, r := range rows {
		got = append(got, r.Columns["v"].(int64))
	}
	assert.Equal(t, []int64{0, 1, 2, 3, 4}, got, "every row once, in sequence order")
	require.NoError(t, src.Advance(ctx, rows[len(rows)-1].Next))
	more, err := src.Read(ctx, connector.OffsetPosition(int64(len(rows))), 100)
	require.NoError(t, err)
	assert.Empty(t, more, "the end of a finite partition")
}
