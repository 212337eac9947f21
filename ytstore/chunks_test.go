package ytstore

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func chunkSample(n int, dest string) []OutputRow {
	rows := make([]OutputRow, n)
	for i := range rows {
		rows[i] = OutputRow{PartitionID: "p1", Destination: dest, MessageID: fmt.Sprintf("m%05d", i), StreamID: "s",
			Key: []byte("k"), KeyHash: uint64(i) * 7919, Payload: []byte(fmt.Sprintf("{n=%d}", i)),
			EventTimestamp: uint64(i + 1), SystemTimestamp: uint64(1000 + i), SequenceNumber: int64(i) - 3}
	}
	return rows
}

func TestAssignChunksSplitsPerDestination(t *testing.T) {
	rows := append(chunkSample(MaxChunkMessages+5, "a"), chunkSample(3, "b")...)
	AssignChunks(rows, 42)
	parts := map[string]map[int64]int{}
	for _, r := range rows {
		require.Equal(t, uint64(42), r.Chunk.ID)
		if parts[r.Destination] == nil {
			parts[r.Destination] = map[int64]int{}
		}
		parts[r.Destination][r.Chunk.Part]++
	}
	assert.Equal(t, map[int64]int{0: MaxChunkMessages, 1: 5}, parts["a"])
	assert.Equal(t, map[int64]int{0: 3}, parts["b"])

	big := chunkSample(3, "c")
	for i := range big {
		big[i].Payload = bytes.Repeat([]byte{'x'}, MaxChunkBytes/2)
	}
	AssignChunks(big, 43)
	assert.Equal(t, []int64{0, 1, 2}, []int64{big[0].Chunk.Part, big[1].Chunk.Part, big[2].Chunk.Part}, "parts stay under MaxChunkBytes")
}

func TestChunkRoundTrip(t *testing.T) {
	rows := chunkSample(50, "a")
	rows[3].Key, rows[4].Payload = nil, nil
	AssignChunks(rows, 7)
	enc, err := chunkRows(rows)
	require.NoError(t, err)
	require.Len(t, enc, 1)
	c := enc[0].(*outputChunkRow)
	assert.Equal(t, int64(50), c.MessageCount)
	got, err := decodeChunk(c.Data, c.MessageCount, "p1", "a", OutputChunk{ID: 7})
	require.NoError(t, err)
	assert.Equal(t, rows, got)
}

func TestDecodeChunkErrors(t *testing.T) {
	rows := chunkSample(2, "a")
	AssignChunks(rows, 7)
	enc, err := chunkRows(rows)
	require.NoError(t, err)
	data := enc[0].(*outputChunkRow).Data
	for name, tc := range map[string]struct {
		data  []byte
		count int64
	}{
		"truncated":      {data[:len(data)-3], 2},
		"unknown format": {append([]byte{9}, data[1:]...), 2},
		"empty":          {nil, 0},
		"count mismatch": {data, 3},
	} {
		_, err := decodeChunk(tc.data, tc.count, "p1", "a", OutputChunk{ID: 7, Part: 2})
		require.ErrorIs(t, err, ErrBadChunk, name)
		assert.Contains(t, err.Error(), "partition p1, destination a, chunk 7 part 2", name)
	}
}

func FuzzDecodeChunk(f *testing.F) {
	rows := chunkSample(3, "a")
	AssignChunks(rows, 7)
	enc, _ := chunkRows(rows)
	f.Add(enc[0].(*outputChunkRow).Data, int64(3))
	f.Add([]byte{chunkFormat}, int64(0))
	f.Add([]byte{chunkFormat, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, int64(1))
	f.Fuzz(func(t *testing.T, data []byte, count int64) {
		got, err := decodeChunk(data, count, "p", "d", OutputChunk{ID: 1})
		if err != nil {
			return
		}
		if len(got) == 0 {
			return
		}
		// What decodes re-encodes to rows that decode the same (varints may be non-minimal
		// in the input, so the bytes may differ).
		enc, err := chunkRows(got)
		if err != nil {
			t.Fatal(err)
		}
		c := enc[0].(*outputChunkRow)
		again, err := decodeChunk(c.Data, c.MessageCount, "p", "d", OutputChunk{ID: 1})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(again, got) {
			t.Fatalf("round trip differs")
		}
	})
}

// TestOutputChunksAndLegacyRows: an epoch writes one output store row per destination;
// rows of the per-message table of earlier versions are still loaded and deleted.
func TestOutputChunksAndLegacyRows(t *testing.T) {
	s, ctx := epochStore(t)
	lease, err := s.StartLease(ctx, "job-1", time.Minute)
	require.NoError(t, err)
	legacy := OutputRow{PartitionID: "p1", Destination: "down", MessageID: "old", StreamID: "s", Key: []byte("k"), Payload: []byte("{}"), SystemTimestamp: 5}
	require.NoError(t, s.InsertRows(ctx, s.child(TableOutputMessages).String(), []map[string]any{{
		"partition_id": legacy.PartitionID, "destination": legacy.Destination, "message_id": legacy.MessageID,
		"stream_id": legacy.StreamID, "key": legacy.Key, "key_hash": uint64(0), "payload": legacy.Payload,
		"event_timestamp": uint64(0), "system_timestamp": legacy.SystemTimestamp, "sequence_number": int64(0),
	}}))

	w := &EpochWrite{PartitionID: "p1", Lease: lease, Token: 200,
		OutputsAdd: append(chunkSample(MaxChunkMessages+1, "down"), chunkSample(2, "sink")...)}
	require.NoError(t, s.CommitEpoch(ctx, w))
	stored, err := s.SelectRows(ctx, "* from ["+s.child(TableOutputChunks).String()+"]")
	require.NoError(t, err)
	assert.Len(t, stored, 3, "two parts for down, one for sink")

	outs, err := s.LoadOutputs(ctx, "p1")
	require.NoError(t, err)
	require.Len(t, outs, 1+MaxChunkMessages+1+2)
	assert.Equal(t, "old", outs[0].MessageID)
	assert.Equal(t, OutputChunk{}, outs[0].Chunk, "a legacy row has no chunk")
	assert.Equal(t, w.OutputsAdd, outs[1:], "chunks load in order with every field")

	done := []OutputKey{outs[0].StoreKey(), outs[1].StoreKey(), outs[len(outs)-1].StoreKey()}
	require.NoError(t, s.CommitEpoch(ctx, &EpochWrite{PartitionID: "p1", Lease: lease, Token: 201, OutputsDone: done}))
	outs, err = s.LoadOutputs(ctx, "p1")
	require.NoError(t, err)
	require.Len(t, outs, 1, "the legacy row, the first part of down and the sink chunk are gone")
	assert.Equal(t, OutputChunk{ID: 200, Part: 1}, outs[0].Chunk)
}

// TestCreateAddsChunkTable: a pipeline created before the chunked output store has no chunk
// table; CreatePipeline (what `yt-flow create` and `yt-flow start` run) adds it, and epochs
// with outputs commit again.
func TestCreateAddsChunkTable(t *testing.T) {
	s, ctx := epochStore(t)
	require.NoError(t, s.yc.RemoveNode(ctx, s.child(TableOutputChunks), nil))
	lease, err := s.StartLease(ctx, "job-1", time.Minute)
	require.NoError(t, err)
	w := &EpochWrite{PartitionID: "p1", Lease: lease, Token: 300, OutputsAdd: chunkSample(2, "down")}
	require.Error(t, s.CommitEpoch(ctx, w), "no chunk table: the epoch does not apply")

	require.NoError(t, s.CreatePipeline(ctx))
	w = &EpochWrite{PartitionID: "p1", Lease: lease, Token: 301, OutputsAdd: chunkSample(2, "down")}
	require.NoError(t, s.CommitEpoch(ctx, w))
	outs, err := s.LoadOutputs(ctx, "p1")
	require.NoError(t, err)
	assert.Len(t, outs, 2)
}
