// Tests of payloads handed over in memory between jobs of this process.

package job

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/ytstore"
)

func samePointer(a, b flow.Row) bool {
	return a != nil && b != nil && reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// TestHandOverUnsharedDecodedPayloads: only a payload bound for a computation, with values of
// the decoded types, that no other output of the epoch holds is handed over in memory; a map
// sent to two destinations, added twice, or also written to a sink goes as bytes.
func TestHandOverUnsharedDecodedPayloads(t *testing.T) {
	comp := func(id string, p flow.Row) epoch.Out {
		return epoch.Out{Destination: epoch.Destination{ID: id, Kind: epoch.ToComputation}, Message: flow.Message{Payload: p, Key: flow.Key{p["word"]}}}
	}
	own := flow.Row{"word": "a", "n": int64(1)}
	twice := flow.Row{"word": "b"}
	fanOut := flow.Row{"word": "c"}
	alsoSunk := flow.Row{"word": "d"}
	goInt := flow.Row{"n": 1} // decodes as int64: not the same map type for type
	toSink := flow.Row{"word": "e"}
	oddKey := comp("count", flow.Row{"word": "f"})
	oddKey.Message.Key = flow.Key{[]byte("f")} // decodes as a string
	outs := []epoch.Out{
		comp("count", own), oddKey, comp("count", twice), comp("count", twice), comp("count", fanOut), comp("other", fanOut),
		comp("count", alsoSunk), comp("count", goInt), comp("count", nil),
		{Destination: epoch.Destination{ID: "queue", Kind: epoch.ToAsyncSink}, Message: flow.Message{Payload: toSink}},
	}
	sync := []epoch.Out{{Destination: epoch.Destination{ID: "table"}, Message: flow.Message{Payload: alsoSunk}}}
	rows := make([]ytstore.OutputRow, len(outs))
	buf := handOver(outs, rows, [][]epoch.Out{sync, nil}, nil)
	assert.Empty(t, buf)
	require.True(t, samePointer(rows[0].Mem, own), "an unshared decoded payload is handed over")
	back, err := epoch.DecodeKey(epoch.EncodeKey(outs[0].Message.Key))
	require.NoError(t, err)
	assert.Equal(t, back, flow.Key(rows[0].MemKey), "with its key, equal to the key's decoding")
	assert.NotNil(t, rows[1].Mem, "a payload goes in memory without its key")
	assert.Nil(t, rows[1].MemKey, "a key that does not decode to itself goes as bytes")
	for i := 2; i < len(rows); i++ {
		assert.Nil(t, rows[i].Mem, "output %d keeps its payload as bytes only", i)
		assert.Nil(t, rows[i].MemKey, "output %d keeps its key as bytes only", i)
	}
}

// TestInProcessPushHandsPayloadOverOnce: the outbox gives a row's map to the first push that
// takes the row and to no later one (a retransmission carries the bytes), and a row read
// back from the output store has none.
func TestInProcessPushHandsPayloadOverOnce(t *testing.T) {
	o := newOutbox()
	m := flow.Row{"word": "a"}
	o.add([]ytstore.OutputRow{
		{Destination: "count", MessageID: "m1", Payload: []byte("x"), Mem: m, MemKey: []any{"a"}},
		{Destination: "count", MessageID: "m2", Payload: []byte("y")},
	})
	var msgs []*outMsg
	o.inOrderIdle("count", func(om *outMsg) bool { msgs = append(msgs, om); return true })
	require.Len(t, msgs, 2)
	assert.Nil(t, msgs[0].row.Mem, "the outbox keeps the map out of the stored row")
	assert.Nil(t, msgs[0].row.MemKey)
	mem := o.takeFlying(msgs)
	require.Len(t, mem, 2)
	assert.True(t, samePointer(mem[0].payload, m), "the first push takes the map")
	assert.Equal(t, []any{"a"}, mem[0].key, "and the key")
	assert.Zero(t, mem[1])
	o.setFlying(msgs, false)
	assert.Nil(t, o.takeFlying(msgs), "a retransmission gets no map")
}
