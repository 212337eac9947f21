// Tests and a benchmark of payload encoding.

package job

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/ytstore"
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

// TestPayloadEncoderMatchesMarshalPayloads: the runner's payload encoder gives each stored
// row the bytes marshalPayloads gives its payload, epoch after epoch with payloads of other
// sizes (the arena sized by the last epoch too small or too large), each row's payload its
// own (an append to one does not reach the next), and names the payload that does not encode.
func TestPayloadEncoderMatchesMarshalPayloads(t *testing.T) {
	var e payloadEncoder
	for round, width := range []int{1, 40, 3, 200, 0, 7} {
		var outs []epoch.Out
		for i := range 50 + round {
			var p flow.Row
			switch i % 7 {
			case 0:
				p = nil
			case 3:
				p = flow.Row{"nested": map[string]any{"l": []any{int64(i)}}}
			default:
				p = flow.Row{"word": strings.Repeat("w", width*(i%3)), "count": int64(i), "hash": uint64(i) << 40}
			}
			outs = append(outs, epoch.Out{Message: flow.Message{MessageID: fmt.Sprint(i), Payload: p}})
		}
		rows := make([]ytstore.OutputRow, len(outs))
		bad, err := e.encode(rows, outs)
		require.NoError(t, err)
		require.Equal(t, -1, bad)
		payloads := make([]flow.Row, len(outs))
		for i, o := range outs {
			payloads[i] = o.Message.Payload
		}
		want, _, err := marshalPayloads(payloads)
		require.NoError(t, err)
		for i := range rows {
			require.Equal(t, string(want[i]), string(rows[i].Payload), "round %d, payload %d", round, i)
		}
		for i := range rows[:len(rows)-1] {
			next := string(rows[i+1].Payload)
			_ = append(rows[i].Payload, 'x')
			require.Equal(t, next, string(rows[i+1].Payload), "round %d: payload %d reaches into the next", round, i)
		}
	}
	outs := []epoch.Out{{Message: flow.Message{Payload: flow.Row{"ok": 1}}}, {Message: flow.Message{Payload: flow.Row{"bad": make(chan int)}}}}
	bad, err := e.encode(make([]ytstore.OutputRow, 2), outs)
	require.Error(t, err)
	require.Equal(t, 1, bad, "the payload that does not encode is named")
	bad, err = e.encode(nil, nil)
	require.NoError(t, err)
	require.Equal(t, -1, bad)
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
	b.Run("encoder", func(b *testing.B) { // the runner's: into the epoch's output rows
		outs := make([]epoch.Out, len(rows))
		for i, r := range rows {
			outs[i].Message.Payload = r
		}
		var e payloadEncoder
		stored := make([]ytstore.OutputRow, len(outs))
		b.ReportAllocs()
		for b.Loop() {
			for i := range stored {
				stored[i].Payload = nil
			}
			if _, err := e.encode(stored, outs); err != nil {
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
