// Package ybin encodes and decodes the binary YSON that yt-flow writes most: lists (keys) and
// string-keyed maps (message payloads) of scalars, without the SDK's reflection and per-call
// buffers. The encoding is byte-identical to the SDK's binary writer (TestMatchesSDK); the
// decoders accept exactly that shape and report ok=false for anything else, which callers
// hand to the SDK, so they never change what a document means.
package ybin

import (
	"encoding/binary"
	"math"
	"slices"
)

const (
	markString = 0x01
	markInt64  = 0x02
	markDouble = 0x03
	markFalse  = 0x04
	markTrue   = 0x05
	markUint64 = 0x06
)

// AppendScalar appends v (string, []byte, int, int32, int64, uint32, uint64, float64, bool,
// nil) as binary YSON; ok is false for other types.
func AppendScalar(b []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case string:
		b = append(b, markString)
		b = binary.AppendVarint(b, int64(len(x)))
		b = append(b, x...)
	case []byte:
		b = append(b, markString)
		b = binary.AppendVarint(b, int64(len(x)))
		b = append(b, x...)
	case int64:
		b = binary.AppendVarint(append(b, markInt64), x)
	case int:
		b = binary.AppendVarint(append(b, markInt64), int64(x))
	case int32:
		b = binary.AppendVarint(append(b, markInt64), int64(x))
	case uint64:
		b = binary.AppendUvarint(append(b, markUint64), x)
	case uint32:
		b = binary.AppendUvarint(append(b, markUint64), uint64(x))
	case float64:
		b = binary.LittleEndian.AppendUint64(append(b, markDouble), math.Float64bits(x))
	case bool:
		if x {
			b = append(b, markTrue)
		} else {
			b = append(b, markFalse)
		}
	case nil:
		b = append(b, '#')
	default:
		return b, false
	}
	return b, true
}

// AppendMap appends m as a binary YSON map with keys in sorted order, as the SDK writes a
// map[string]any; ok is false (and b unchanged) when a value is not a scalar.
func AppendMap(b []byte, m map[string]any) ([]byte, bool) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	start := len(b)
	b = append(b, '{')
	for _, k := range keys {
		b = append(b, markString)
		b = binary.AppendVarint(b, int64(len(k)))
		b = append(b, k...)
		b = append(b, '=')
		var ok bool
		if b, ok = AppendScalar(b, m[k]); !ok {
			return b[:start], false
		}
		b = append(b, ';')
	}
	return append(b, '}'), true
}

// decoder reads scalars; any surprise sets bad.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.bad = true
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) str() string {
	n, k := binary.Varint(d.b)
	if k <= 0 || n < 0 || n > int64(len(d.b)-k) {
		d.bad = true
		return ""
	}
	s := string(d.b[k : k+int(n)])
	d.b = d.b[k+int(n):]
	return s
}

func (d *decoder) scalar() any {
	switch d.byte() {
	case markString:
		return d.str()
	case markInt64:
		v, k := binary.Varint(d.b)
		if k <= 0 {
			d.bad = true
			return nil
		}
		d.b = d.b[k:]
		return v
	case markUint64:
		v, k := binary.Uvarint(d.b)
		if k <= 0 {
			d.bad = true
			return nil
		}
		d.b = d.b[k:]
		return v
	case markDouble:
		if len(d.b) < 8 {
			d.bad = true
			return nil
		}
		v := math.Float64frombits(binary.LittleEndian.Uint64(d.b))
		d.b = d.b[8:]
		return v
	case markFalse:
		return false
	case markTrue:
		return true
	case '#':
		return nil
	}
	d.bad = true
	return nil
}

// DecodeList decodes what a list of scalars encodes to ("[" items each followed by ";" "]").
// An empty list decodes to nil.
func DecodeList(b []byte) (vals []any, ok bool) {
	d := decoder{b: b}
	if d.byte() != '[' {
		return nil, false
	}
	for !d.bad && len(d.b) > 0 && d.b[0] != ']' {
		vals = append(vals, d.scalar())
		if d.byte() != ';' {
			return nil, false
		}
	}
	if d.bad || d.byte() != ']' || len(d.b) != 0 {
		return nil, false
	}
	return vals, true
}

// DecodeMap decodes what AppendMap writes; keys must be distinct.
func DecodeMap(b []byte) (m map[string]any, ok bool) {
	d := decoder{b: b}
	if d.byte() != '{' {
		return nil, false
	}
	m = map[string]any{}
	for !d.bad && len(d.b) > 0 && d.b[0] != '}' {
		if d.byte() != markString {
			return nil, false
		}
		k := d.str()
		if d.byte() != '=' {
			return nil, false
		}
		v := d.scalar()
		if d.byte() != ';' {
			return nil, false
		}
		if _, dup := m[k]; dup {
			return nil, false
		}
		m[k] = v
	}
	if d.bad || d.byte() != '}' || len(d.b) != 0 {
		return nil, false
	}
	return m, true
}
