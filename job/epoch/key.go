package epoch

import (
	"encoding/binary"
	"math"
	"sort"

	farm "github.com/dgryski/go-farm"
	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/internal/ybin"
)

// EncodeKey is the canonical byte form of a key: binary YSON of the list of its values.
// Equal keys encode equally; it is how keys are stored in the states, timers and dedup tables.
func EncodeKey(k flow.Key) []byte {
	if b, ok := appendKey(make([]byte, 0, 32), k); ok {
		return b
	}
	if k == nil {
		k = flow.Key{}
	}
	b, err := yson.MarshalFormat([]any(k), yson.FormatBinary)
	if err != nil {
		// Keys hold YSON-compatible scalars by contract; anything else is a programming error
		// upstream, and encoding its description keeps keys distinct enough to surface it.
		b, _ = yson.MarshalFormat(err.Error(), yson.FormatBinary)
	}
	return b
}

// AppendKey appends EncodeKey(k) to b.
func AppendKey(b []byte, k flow.Key) []byte {
	if out, ok := appendKey(b, k); ok {
		return out
	}
	return append(b, EncodeKey(k)...)
}

// appendKey writes the binary YSON list of k's scalars exactly as the SDK's binary writer
// does (each item followed by ';'); ok is false for a value it does not handle.
func appendKey(b []byte, k flow.Key) ([]byte, bool) {
	b = append(b, '[')
	for _, v := range k {
		switch x := v.(type) {
		case string:
			b = append(b, 0x01)
			b = binary.AppendVarint(b, int64(len(x)))
			b = append(b, x...)
		case []byte:
			b = append(b, 0x01)
			b = binary.AppendVarint(b, int64(len(x)))
			b = append(b, x...)
		case int64:
			b = append(b, 0x02)
			b = binary.AppendVarint(b, x)
		case uint64:
			b = append(b, 0x06)
			b = binary.AppendUvarint(b, x)
		case float64:
			b = append(b, 0x03)
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		case bool:
			if x {
				b = append(b, 0x05)
			} else {
				b = append(b, 0x04)
			}
		case nil:
			b = append(b, '#')
		default:
			return nil, false
		}
		b = append(b, ';')
	}
	return append(b, ']'), true
}

// DecodeKey is the inverse of EncodeKey.
func DecodeKey(b []byte) (flow.Key, error) {
	if vals, ok := ybin.DecodeList(b); ok {
		return flow.Key(vals), nil
	}
	var vals []any
	if err := yson.Unmarshal(b, &vals); err != nil {
		return nil, err
	}
	if len(vals) == 0 {
		return nil, nil
	}
	return flow.Key(vals), nil
}

// KeyHash is the routing hash of a key, the value the layout's [lower_key, upper_key) ranges
// partition: the first key column when it is a uint64 (a farm_hash computed column), else the
// FarmHash fingerprint of the encoded key. A nil key hashes to 0.
func KeyHash(k flow.Key) uint64 {
	if len(k) == 0 {
		return 0
	}
	if h, ok := k[0].(uint64); ok {
		return h
	}
	return farm.Fingerprint64(EncodeKey(k))
}

// keyHashOf is KeyHash(k) given enc, EncodeKey(k).
func keyHashOf(k flow.Key, enc []byte) uint64 {
	if len(k) == 0 {
		return 0
	}
	if h, ok := k[0].(uint64); ok {
		return h
	}
	return farm.Fingerprint64(enc)
}

// InRange reports whether hash lies in [lower, upper), upper 0 meaning 2^64.
func InRange(hash, lower, upper uint64) bool {
	return hash >= lower && (upper == 0 || hash < upper)
}

// appendSortedNames appends the names of m to names, sorted.
func appendSortedNames(names []string, m map[string][]byte) []string {
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
