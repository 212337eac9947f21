// Tests and a benchmark of payload encoding.

package job

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/flow"
)

// TestMarshalPayloads: every payload decodes as what yson.Marshal gives for it; a payload of
// scalars is the SDK's binary encoding byte for byte, any other the SDK's text encoding.
func TestMarshalPayloads(t *testing.T) {
	rows := []flow.Row{
		{"word": "w0001", "count": int64(17), "hash": uint64(1) << 63},
		{},
		nil,
		{"s": "quote \" semicolon ; brace } newline \n ünï", "b": []byte{0, 1, 0xff}, "f": 1.5, "t": true, "n": nil},
		{"nested": map[string]any{"list": []any{int64(-1), "x", []any{}}, "m": map[string]any{}}},
		{"big": uint64(18446744073709551615), "neg": int64(-9223372036854775808)},
	}
	got, bad, err := marshalPayloads(rows)
	require.NoError(t, err)
	require.Equal(t, -1, bad)
	require.Len(t, got, len(rows))
	for i, row := range rows {
		want, err := yson.Marshal(row)
		require.NoError(t, err)
		var a, b any
		require.NoError(t, yson.Unmarshal(got[i], &a), "payload %d: %s", i, got[i])
		require.NoError(t, yson.Unmarshal(want, &b))
		require.Equal(t, b, a, "payload %d decodes as yson.Marshal's", i)
		if i == 4 || row == nil {
			require.Equal(t, string(want), string(got[i]), "payload %d: text, as yson.Marshal", i)
		} else {
			bin, err := yson.MarshalFormat(row, yson.FormatBinary)
			require.NoError(t, err)
			require.Equal(t, string(bin), string(got[i]), "payload %d: binary", i)
		}
		back, err := decodePayload(got[i], nil)
		require.NoError(t, err)
		require.Equal(t, b, any(back), "payload %d: decodePayload", i)
	}
	got[0] = append(got[0], 'x')
	require.NotContains(t, string(got[1]), "x", "payloads do not share capacity")

	_, bad, err = marshalPayloads([]flow.Row{{"ok": 1}, {"bad": make(chan int)}})
	require.Error(t, err)
	require.Equal(t, 1, bad, "the payload that does not encode is named")
	none, _, err := marshalPayloads(nil)
	require.NoError(t, err)
	require.Empty(t, none)
}

func BenchmarkMarshalPayloads(b *testing.B) {
	rows := make([]flow.Row, 1000)
	for i := range rows {
		rows[i] = flow.Row{"hash": uint64(i) * 7919, "word": "w0001", "count": int64(i)}
	}
	b.Run("together", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := marshalPayloads(rows); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("each", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, r := range rows {
				if _, err := yson.Marshal(r); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
