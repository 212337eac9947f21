// A table test of how an async sink's deliveries are cut into batches (batchesOf).

package job

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/library/go/core/log/nop"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/internal/ybin"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytstore"
)

func TestBatchesOf(t *testing.T) {
	row := func(id string, seq int64, chunk uint64, part int64) *ytstore.OutputRow {
		p, ok := ybin.AppendMap(nil, map[string]any{"id": id})
		require.True(t, ok)
		return &ytstore.OutputRow{MessageID: id, SequenceNumber: seq, Payload: p, Chunk: ytstore.OutputChunk{ID: chunk, Part: part}}
	}
	rows := []*ytstore.OutputRow{
		row("a", 1, 7, 0), row("b", 2, 7, 0), // one epoch's chunk
		row("c", 3, 7, 1),                    // its second part
		row("d", 4, 9, 0), row("e", 5, 9, 0), // the next epoch
		{MessageID: "f", SequenceNumber: 6, Payload: []byte("not yson"), Chunk: ytstore.OutputChunk{ID: 9}},
		row("g", 7, 9, 0), // after a bad row: the run breaks
	}
	var bad []string
	batches, ids := batchesOf(rows, func(r *ytstore.OutputRow, _ error) { bad = append(bad, r.MessageID) })
	assert.Equal(t, []string{"f"}, bad)
	assert.Equal(t, [][]string{{"a", "b"}, {"c"}, {"d", "e"}, {"g"}}, ids)
	require.Len(t, batches, 4)
	assert.Equal(t, int64(1), batches[0].FirstSeq)
	assert.Equal(t, int64(2), batches[0].LastSeq)
	assert.Equal(t, "a", batches[0].FirstID)
	assert.Equal(t, "b", batches[0].LastID)
	assert.Equal(t, int64(7), batches[3].FirstSeq)
	var got [][]string
	for _, b := range batches {
		var bids []string
		for _, d := range b.Rows {
			bids = append(bids, d.MessageID)
			for _, r := range rows {
				if r.MessageID == d.MessageID {
					assert.Equal(t, string(r.Payload), string(d.Encoded), "a stored binary map is sent as it is")
				}
			}
		}
		got = append(got, bids)
	}
	assert.Equal(t, ids, got, "each batch holds its own rows")
	// A batch's rows and ids are its own up to their capacity: an append reaches no other.
	_ = append(batches[0].Rows, batches[3].Rows[0])
	_ = append(ids[0], "x")
	assert.Equal(t, "c", batches[1].Rows[0].MessageID)
	assert.Equal(t, "c", ids[1][0])

	// A replay of the rows left after the first two batches were delivered cuts the same
	// remaining batches.
	again, _ := batchesOf(rows[3:], func(*ytstore.OutputRow, error) {})
	assert.Equal(t, batches[2:], again)
}

// BenchmarkBatchesOf cuts a delivery of 1000 stored rows of one chunk into its batch.
func BenchmarkBatchesOf(b *testing.B) {
	rows := make([]*ytstore.OutputRow, 1000)
	for i := range rows {
		p, _ := ybin.AppendMap(nil, map[string]any{"word": "w0001", "count": int64(i)})
		rows[i] = &ytstore.OutputRow{MessageID: fmt.Sprintf("%016x-3%03x", 7, i), SequenceNumber: int64(i + 1), Payload: p, Chunk: ytstore.OutputChunk{ID: 7}}
	}
	b.ReportAllocs()
	for b.Loop() {
		batches, _ := batchesOf(rows, func(*ytstore.OutputRow, error) { b.Fatal("bad row") })
		if len(batches) != 1 || len(batches[0].Rows) != len(rows) {
			b.Fatalf("%d batches", len(batches))
		}
	}
}

// prefixSink delivers the first n batches it is given and fails the rest.
type prefixSink struct {
	n   int
	got [][]string
}

func (s *prefixSink) Deliver(_ context.Context, batches []connector.Batch) (int, error) {
	for _, b := range batches {
		var ids []string
		for _, d := range b.Rows {
			ids = append(ids, d.MessageID)
		}
		s.got = append(s.got, ids)
	}
	if s.n < len(batches) {
		return s.n, errors.New("the broker is away")
	}
	return len(batches), nil
}

// TestDeliverFinishesDeliveredEntries: a delivery finishes exactly the rows of the batches
// the sink delivered (found among the entries it carried, outbox.finishPushed): a row with a
// bad payload, the rows of batches not delivered, and a row finished meanwhile and added
// again stay pending; what is delivered is counted once per chunk.
func TestDeliverFinishesDeliveredEntries(t *testing.T) {
	payload, ok := ybin.AppendMap(nil, map[string]any{"v": "x"})
	require.True(t, ok)
	var rows []ytstore.OutputRow
	for i, chunk := range []uint64{7, 7, 7, 9, 9, 11} {
		rows = append(rows, ytstore.OutputRow{PartitionID: "p", Destination: "d", MessageID: fmt.Sprintf("m%d", i),
			SequenceNumber: int64(i + 1), Payload: payload, Chunk: ytstore.OutputChunk{ID: chunk}})
	}
	rows[1].Payload = []byte("not yson")
	for _, delivered := range []int{0, 1, 2, 3} {
		r := &runner{inbox: newInbox(10), outbox: newOutbox(), comp: &spec.Computation{ID: "c"}, log: (&nop.Logger{}).Structured(), job: ytstore.Job{JobID: "j", PartitionID: "p"}}
		r.outbox.add(slices.Clone(rows))
		msgs := r.outbox.entries("d")
		require.Len(t, msgs, len(rows))
		sink := &prefixSink{n: delivered}
		err := r.deliver(context.Background(), sink, "d", msgs)
		require.Equal(t, [][]string{{"m0"}, {"m2"}, {"m3", "m4"}, {"m5"}}, sink.got, "m1's payload is bad: it breaks chunk 7's run")
		require.Equal(t, delivered < 4, err != nil)
		var pending []string
		for _, m := range r.outbox.entries("d") {
			pending = append(pending, m.row.MessageID)
		}
		want := [][]string{
			{"m0", "m1", "m2", "m3", "m4", "m5"},
			{"m1", "m2", "m3", "m4", "m5"},
			{"m1", "m3", "m4", "m5"},
			{"m1", "m5"},
		}[delivered]
		assert.Equal(t, want, pending, "%d batches delivered", delivered)
		// Chunk 9 is done once both its rows are delivered; chunk 7 never is (m1 is pending).
		done := r.outbox.takeDone()
		if delivered == 3 {
			assert.Equal(t, []ytstore.OutputKey{{PartitionID: "p", Destination: "d", Chunk: ytstore.OutputChunk{ID: 9}}}, done)
		} else {
			assert.Empty(t, done)
		}
	}
	// An entry finished meanwhile and added again is a new entry: the delivery of the old
	// one finishes the new one too (as finish by id does), once.
	r := &runner{inbox: newInbox(10), outbox: newOutbox(), comp: &spec.Computation{ID: "c"}, log: (&nop.Logger{}).Structured(), job: ytstore.Job{JobID: "j", PartitionID: "p"}}
	r.outbox.add(slices.Clone(rows[2:3]))
	msgs := r.outbox.entries("d")
	r.outbox.finish("p", "d", []string{"m2"})
	r.outbox.add(slices.Clone(rows[2:3]))
	require.NoError(t, r.deliver(context.Background(), &prefixSink{n: 1}, "d", msgs))
	assert.Empty(t, r.outbox.entries("d"))
	assert.Zero(t, r.outbox.size())
}
