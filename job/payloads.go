// Encoding and decoding message payloads (binary YSON for scalars, text YSON otherwise).

package job

import (
	"fmt"
	"slices"

	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/internal/ybin"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/ytstore"
)

// marshalPayloads encodes payloads: a payload of scalars as binary YSON with the fast
// encoder (internal/ybin; the bytes are the SDK's binary encoding), any other as yson.Marshal
// encodes it (text YSON). The choice depends only on the payload, so a recomputed payload
// encodes to the same bytes (payload fingerprints compare them). The fast payloads share one
// buffer. When a payload does not encode, bad is its index (else -1).
func marshalPayloads(payloads []flow.Row) (out [][]byte, bad int, err error) {
	if len(payloads) == 0 {
		return nil, -1, nil
	}
	arena := make([]byte, 0, 64*len(payloads))
	bounds := make([]int, len(payloads)+1) // payload i is arena[bounds[i]:bounds[i+1]] unless out[i] is set
	out = make([][]byte, len(payloads))
	for i, p := range payloads {
		bounds[i] = len(arena)
		if arena, out[i], err = appendPayload(arena, p); err != nil {
			return nil, i, err
		}
		bounds[i+1] = len(arena)
	}
	for i := range out {
		if out[i] == nil {
			out[i] = arena[bounds[i]:bounds[i+1]:bounds[i+1]]
		}
	}
	return out, -1, nil
}

// appendPayload appends payload p to arena when the fast encoder takes it (own is nil), or
// returns it encoded by yson.Marshal in its own bytes (own; arena unchanged).
func appendPayload(arena []byte, p flow.Row) (out, own []byte, err error) {
	if p != nil {
		if b, ok := ybin.AppendMap(arena, p); ok {
			return b, nil, nil
		}
	}
	own, err = yson.Marshal(p)
	return arena, own, err
}

// payloadEncoder encodes an epoch's stored payloads into its output rows (encode), keeping
// its scratch and the size of the last epoch's payloads from epoch to epoch.
type payloadEncoder struct {
	ends []int // ends[i] is where row i's payload ends in the arena
	// perPayload is the mean size of the last epoch's fast payloads, which sizes the next
	// arena.
	perPayload int
}

// encode sets rows[i].Payload to outs[i]'s payload encoded as marshalPayloads encodes it
// (the same bytes; TestPayloadEncoderMatchesMarshalPayloads); rows' payloads must be nil. The
// fast payloads share one arena of their own, which the rows keep. When a payload does not
// encode, bad is its index (else -1).
func (e *payloadEncoder) encode(rows []ytstore.OutputRow, outs []epoch.Out) (bad int, err error) {
	if len(outs) == 0 {
		return -1, nil
	}
	// An arena a little larger than the last epoch's payloads took: it rarely grows, and a
	// grown one would leave the payloads made so far in the smaller array.
	per := max(e.perPayload+e.perPayload/8, 16)
	arena := make([]byte, 0, per*len(outs))
	e.ends = slices.Grow(e.ends[:0], len(outs))[:len(outs)]
	for i := range outs {
		if arena, rows[i].Payload, err = appendPayload(arena, outs[i].Message.Payload); err != nil {
			return i, err
		}
		e.ends[i] = len(arena)
	}
	start := 0
	for i, end := range e.ends {
		if rows[i].Payload == nil {
			rows[i].Payload = arena[start:end:end]
		}
		start = end
	}
	e.perPayload = len(arena)/len(outs) + 1
	return -1, nil
}

// decodePayload decodes a stored or received payload: binary payloads of scalars with the
// fast decoder (dec, when not nil, shares key strings with the payloads it decoded before),
// anything else with the SDK.
func decodePayload(b []byte, dec *ybin.Decoder) (m map[string]any, err error) {
	if dec == nil {
		dec = new(ybin.Decoder)
	}
	if m, ok := dec.DecodeMap(b); ok {
		return m, nil
	}
	// The SDK's decoder panics on some malformed input ("invalid decoder state"): a bad
	// payload is an error, not a crash of the worker (TestBatchesOf).
	defer func() {
		if p := recover(); p != nil {
			m, err = nil, fmt.Errorf("malformed YSON payload: %v", p)
		}
	}()
	err = yson.Unmarshal(b, &m)
	return m, err
}
