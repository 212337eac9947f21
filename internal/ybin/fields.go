package ybin

import (
	"encoding/binary"
	"math"

	"github.com/ytflow/yt-flow/internal/varbin"
)

// A FieldKind is what Fields found for a key: the value's type, or FieldMissing.
type FieldKind uint8

const (
	FieldMissing FieldKind = iota // the map has no such key
	FieldNull                     // the entity (#): what DecodeMap decodes to nil
	FieldString
	FieldInt64
	FieldUint64
	FieldDouble
	FieldBool
)

// A Field is the value of one key of a map as Fields finds it. Only the member of its Kind is
// set; Str points into the scanned bytes (copy it to keep it past them).
type Field struct {
	Kind  FieldKind
	Str   []byte
	Int   int64
	Uint  uint64
	Float float64
	Bool  bool
}

// maxFieldKeys bounds the entries of a map Fields scans: it checks that no key repeats by
// comparing each key with those before it.
const maxFieldKeys = 16

// Fields finds the values of keys in b, a map of the shape DecodeMap takes, without decoding
// the other entries or allocating: vals[i] is the value of keys[i] (len(vals) >= len(keys)),
// what DecodeMap's m[keys[i]] holds. ok is false when DecodeMap would refuse b (not that
// shape, truncated, trailing bytes, a repeated key) and when the map has more than
// maxFieldKeys entries; vals mean nothing then, and the caller decodes b otherwise
// (TestFieldsMatchesDecodeMap, FuzzFields).
func Fields(b []byte, keys []string, vals []Field) (ok bool) {
	for i := range keys {
		vals[i] = Field{}
	}
	r := varbin.NewReader(b)
	if r.Byte() != '{' {
		return false
	}
	var seen [maxFieldKeys][]byte
	n := 0
	for !r.Failed() && r.Len() > 0 {
		if c, _ := r.Peek(); c == '}' {
			break
		}
		if r.Byte() != markString {
			return false
		}
		size := r.Varint()
		if r.Failed() || size < 0 || size > int64(r.Len()) || n == maxFieldKeys {
			return false
		}
		k := r.Next(int(size))
		if r.Failed() {
			return false
		}
		for _, prev := range seen[:n] {
			if string(prev) == string(k) {
				return false
			}
		}
		seen[n] = k
		n++
		if r.Byte() != '=' {
			return false
		}
		var f Field
		if !scanScalar(r, &f) || r.Byte() != ';' {
			return false
		}
		for i, key := range keys {
			if key == string(k) {
				vals[i] = f
			}
		}
	}
	return r.Byte() == '}' && !r.Failed() && r.Len() == 0
}

// scanScalar reads one scalar into f as DecodeMap's scalar does, without boxing it.
func scanScalar(r *varbin.Reader, f *Field) bool {
	switch c := r.Byte(); c {
	case markString:
		size := r.Varint()
		if r.Failed() || size < 0 || size > int64(r.Len()) {
			return false
		}
		f.Kind, f.Str = FieldString, r.Next(int(size))
	case markInt64:
		f.Kind, f.Int = FieldInt64, r.Varint()
	case markUint64:
		f.Kind, f.Uint = FieldUint64, r.Uvarint()
	case markDouble:
		b := r.Next(8)
		if b == nil {
			return false
		}
		f.Kind, f.Float = FieldDouble, math.Float64frombits(binary.LittleEndian.Uint64(b))
	case markFalse, markTrue:
		f.Kind, f.Bool = FieldBool, c == markTrue
	case '#':
		f.Kind = FieldNull
	default:
		return false
	}
	return !r.Failed()
}
