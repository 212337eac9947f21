// A table test of how an async sink's deliveries are cut into batches (batchesOf).

package job

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/internal/ybin"
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
