package ytstore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/yson"
)

// Copies of the row types without their MarshalYSON methods: the SDK encodes them by
// reflection.
type (
	plainCompact     compactInputMessageRow
	plainInput       inputMessageRow
	plainState       StateRow
	plainChunk       outputChunkRow
	plainTransaction partitionTransactionRow
)

func TestRowsEncodeAsReflection(t *testing.T) {
	fp := uint64(77)
	for _, tc := range []struct{ custom, plain any }{
		{compactInputMessageRow{DedupKey: []byte{0, 1, 2}, SystemTimestamp: 5, PayloadFingerprint: &fp}, plainCompact{DedupKey: []byte{0, 1, 2}, SystemTimestamp: 5, PayloadFingerprint: &fp}},
		{compactInputMessageRow{DedupKey: []byte("k")}, plainCompact{DedupKey: []byte("k")}},
		{inputMessageRow{ComputationID: "c", Key: []byte("[1]"), MessageID: "m", SystemTimestamp: 9, PayloadFingerprint: &fp}, plainInput{ComputationID: "c", Key: []byte("[1]"), MessageID: "m", SystemTimestamp: 9, PayloadFingerprint: &fp}},
		{inputMessageRow{ComputationID: "c", MessageID: "m"}, plainInput{ComputationID: "c", MessageID: "m"}},
		{StateRow{ComputationID: "c", KeyHash: 1 << 63, Key: []byte("k"), Name: "n", State: []byte("1")}, plainState{ComputationID: "c", KeyHash: 1 << 63, Key: []byte("k"), Name: "n", State: []byte("1")}},
		{&outputChunkRow{PartitionID: "p", Destination: "d", ChunkID: 3, Part: 1, MessageCount: 2, Data: []byte{1, 2}}, plainChunk{PartitionID: "p", Destination: "d", ChunkID: 3, Part: 1, MessageCount: 2, Data: []byte{1, 2}}},
		{partitionTransactionRow{PartitionID: "p", Token: 42}, plainTransaction{PartitionID: "p", Token: 42}},
	} {
		for _, f := range []yson.Format{yson.FormatText, yson.FormatBinary} {
			got, err := yson.MarshalFormat(tc.custom, f)
			require.NoError(t, err)
			want, err := yson.MarshalFormat(tc.plain, f)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got), "%T", tc.custom)
		}
	}
}

// TestSinkRowEncodesAsReflection: a sink row decodes to the same values whether it is written
// by its own encoder or by the reflection encoder, for every scalar type a payload holds and
// for a nested value (handed to the reflection encoder).
func TestSinkRowEncodesAsReflection(t *testing.T) {
	row := map[string]any{
		"s": "word", "b": []byte{0, 1}, "i": int64(-5), "n": 7, "i32": int32(-3), "u": uint64(1 << 63),
		"u32": uint32(9), "f": 1.5, "t": true, "null": nil, "list": []any{int64(1), "x"},
	}
	for _, f := range []yson.Format{yson.FormatText, yson.FormatBinary} {
		got, err := yson.MarshalFormat(sinkRow(row), f)
		require.NoError(t, err)
		want, err := yson.MarshalFormat(row, f)
		require.NoError(t, err)
		var gotRow, wantRow map[string]any
		require.NoError(t, yson.Unmarshal(got, &gotRow))
		require.NoError(t, yson.Unmarshal(want, &wantRow))
		assert.Equal(t, wantRow, gotRow)
	}
}
