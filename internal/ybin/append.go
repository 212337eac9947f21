package ybin

import (
	"encoding/binary"
	"math"
)

// Append encoders for rows built field by field: each appends one binary YSON value exactly
// as the SDK's binary yson.Writer writes it (TestAppendMatchesWriter, FuzzAppend), without
// the writer's per-call scratch allocations. A map is '{', entries Key(k)+value+';', '}'; a
// list fragment of rows is each row followed by ';'.

// AppendString appends s as a binary YSON string.
func AppendString(b []byte, s string) []byte {
	b = binary.AppendVarint(append(b, markString), int64(len(s)))
	return append(b, s...)
}

// AppendStringHeader appends the head of a binary YSON string of n bytes: the caller appends
// the n bytes next (a string built in place).
func AppendStringHeader(b []byte, n int) []byte {
	return binary.AppendVarint(append(b, markString), int64(n))
}

// AppendBytes appends v as a binary YSON string, and nil as the entity '#' (as the SDK's
// Writer.Bytes, and so its reflection encoder for a []byte field, writes it).
func AppendBytes(b []byte, v []byte) []byte {
	if v == nil {
		return append(b, '#')
	}
	b = binary.AppendVarint(append(b, markString), int64(len(v)))
	return append(b, v...)
}

// AppendInt64 appends v as a binary YSON int64.
func AppendInt64(b []byte, v int64) []byte {
	return binary.AppendVarint(append(b, markInt64), v)
}

// AppendUint64 appends v as a binary YSON uint64.
func AppendUint64(b []byte, v uint64) []byte {
	return binary.AppendUvarint(append(b, markUint64), v)
}

// AppendFloat64 appends v as a binary YSON double.
func AppendFloat64(b []byte, v float64) []byte {
	return binary.LittleEndian.AppendUint64(append(b, markDouble), math.Float64bits(v))
}

// AppendBool appends v as a binary YSON boolean.
func AppendBool(b []byte, v bool) []byte {
	if v {
		return append(b, markTrue)
	}
	return append(b, markFalse)
}

// AppendEntity appends the entity '#' (null).
func AppendEntity(b []byte) []byte { return append(b, '#') }

// Key returns the encoding of the map key k with its '=': a constant a row encoder appends
// before each value (append(b, key...)), computed once.
func Key(k string) string { return string(append(AppendString(nil, k), '=')) }
