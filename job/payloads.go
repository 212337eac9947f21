package job

import (
	"fmt"

	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/flow"
)

// marshalPayloads encodes payloads as yson.Marshal encodes each of them (text YSON), in one
// encoder pass: yson.Marshal allocates a 4 KiB write buffer per call, which made most of an
// epoch's allocations when it stores thousands of outputs. The results share one buffer.
// When a payload does not encode, bad is its index (else -1).
func marshalPayloads(payloads []flow.Row) (out [][]byte, bad int, err error) {
	if len(payloads) == 0 {
		return nil, -1, nil
	}
	list := make([]any, len(payloads))
	for i, p := range payloads {
		list[i] = map[string]any(p)
	}
	b, err := yson.Marshal(list)
	if err != nil {
		// Name the payload that does not encode.
		for i, p := range payloads {
			if _, perr := yson.Marshal(p); perr != nil {
				return nil, i, perr
			}
		}
		return nil, -1, err
	}
	r := yson.NewReaderFromBytes(b)
	if ev, err := r.Next(false); err != nil || ev != yson.EventBeginList {
		return nil, -1, fmt.Errorf("encode payloads: not a list (%v)", err)
	}
	arena := make([]byte, 0, len(b))
	out = make([][]byte, 0, len(payloads))
	for {
		ok, err := r.NextListItem()
		if err != nil {
			return nil, -1, fmt.Errorf("encode payloads: %w", err)
		}
		if !ok {
			break
		}
		raw, err := r.NextRawValue()
		if err != nil {
			return nil, -1, fmt.Errorf("encode payloads: %w", err)
		}
		start := len(arena)
		arena = append(arena, raw...)
		out = append(out, arena[start:len(arena):len(arena)])
	}
	if len(out) != len(payloads) {
		return nil, -1, fmt.Errorf("encode payloads: %d values for %d payloads", len(out), len(payloads))
	}
	return out, -1, nil
}
