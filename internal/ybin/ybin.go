// Package ybin encodes and decodes the binary YSON that yt-flow writes most: lists (keys) and
// string-keyed maps (message payloads) of scalars, without the SDK's reflection and per-call
// buffers. The encoding is byte-identical to the SDK's binary writer (TestMatchesSDK); the
// decoders accept exactly that shape and report ok=false for anything else, which callers
// hand to the SDK, so they never change what a document means. The append encoders of
// append.go build rows field by field (ytstore's epoch rows), byte for byte as the SDK's
// binary writer. Fields (fields.go) finds the values of a few keys of a map in place, for a
// reader that needs only those.
package ybin

import (
	"encoding/binary"
	"math"
	"slices"
	"unsafe"

	"github.com/ytflow/yt-flow/internal/varbin"
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
	var small [8]string // most payloads have a few columns: no allocation for their keys
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	start := len(b)
	b = append(b, '{')
	for _, k := range keys {
		var ok bool
		if b, ok = appendEntry(b, k, m[k]); !ok {
			return b[:start], false
		}
	}
	return append(b, '}'), true
}

// AppendPairs appends the map of keys[i] = vals[i] in the order given, as the SDK's binary
// writer writes a map key by key; ok is false (and b unchanged) when a value is not a scalar.
func AppendPairs(b []byte, keys []string, vals []any) ([]byte, bool) {
	start := len(b)
	b = append(b, '{')
	for i, k := range keys {
		var ok bool
		if b, ok = appendEntry(b, k, vals[i]); !ok {
			return b[:start], false
		}
	}
	return append(b, '}'), true
}

// appendEntry appends one map entry `"k"=v;`; ok is false when v is not a scalar.
func appendEntry(b []byte, k string, v any) ([]byte, bool) {
	b = append(b, markString)
	b = binary.AppendVarint(b, int64(len(k)))
	b = append(b, k...)
	b = append(b, '=')
	b, ok := AppendScalar(b, v)
	return append(b, ';'), ok
}

// decoder reads scalars from a varbin.Reader; bad marks a value of a shape the fast path
// does not take (the reader's Failed marks a truncated one).
type decoder struct {
	r   *varbin.Reader
	bad bool
}

func (d *decoder) failed() bool { return d.bad || d.r.Failed() }

// at reports whether the next byte is c (false at the end).
func (d *decoder) at(c byte) bool {
	n, ok := d.r.Peek()
	return ok && n == c
}

// str reads a string's length and bytes, boxed as boxString does.
func (d *decoder) str() any {
	n := d.r.Varint() // binary YSON string lengths are zigzag varints
	if n < 0 || n > int64(d.r.Len()) {
		d.bad = true
		return ""
	}
	return boxString(d.r.Next(int(n)))
}

// boxString returns an interface value holding string(b) in one allocation instead of two
// (the bytes, then the header that boxing the string allocates): one pointer-free block holds
// the header and, after it, the bytes the header points at. The collector never has to follow
// that pointer: the interface value, and every string taken from it, points into the block and
// keeps it alive. Decoded rows are mostly strings (keys, payloads), and a pointer-free object
// is also one the collector does not scan (TestBoxStringSurvivesCollection).
func boxString(b []byte) any {
	if len(b) == 0 {
		return ""
	}
	block := make([]uint64, 2+(len(b)+7)/8) // uint64s: aligned for the header, and no pointers
	data := (*byte)(unsafe.Pointer(&block[2]))
	copy(unsafe.Slice(data, len(b)), b)
	*(*string)(unsafe.Pointer(&block[0])) = unsafe.String(data, len(b))
	v := any("")
	// An interface value is a type word and a data word; the data word of a string is a
	// pointer to its header.
	(*[2]unsafe.Pointer)(unsafe.Pointer(&v))[1] = unsafe.Pointer(&block[0])
	return v
}

// scalarLike is scalar, except that it returns prev itself when the value read equals it
// (same type and value): rows of one list often repeat a column's value (a computation id,
// a timestamp), and reusing the interface value the previous row holds costs no allocation.
// Values are immutable, so sharing one between rows is safe.
func (d *decoder) scalarLike(prev any) any {
	c, ok := d.r.Peek()
	if !ok || prev == nil {
		return d.scalar()
	}
	switch p := prev.(type) {
	case string:
		if c != markString {
			break
		}
		save := *d.r
		d.r.Byte()
		n := d.r.Varint()
		if n >= 0 && n <= int64(d.r.Len()) && int(n) == len(p) {
			if b := d.r.Next(int(n)); string(b) == p {
				return prev
			}
		}
		*d.r = save
	case int64:
		if c != markInt64 {
			break
		}
		save := *d.r
		d.r.Byte()
		if v := d.r.Varint(); !d.r.Failed() && v == p {
			return prev
		}
		*d.r = save
	case uint64:
		if c != markUint64 {
			break
		}
		save := *d.r
		d.r.Byte()
		if v := d.r.Uvarint(); !d.r.Failed() && v == p {
			return prev
		}
		*d.r = save
	}
	return d.scalar()
}

func (d *decoder) scalar() any {
	switch d.r.Byte() {
	case markString:
		return d.str()
	case markInt64:
		return d.r.Varint()
	case markUint64:
		return d.r.Uvarint()
	case markDouble:
		b := d.r.Next(8)
		if b == nil {
			return nil
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
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
	d := decoder{r: varbin.NewReader(b)}
	if d.r.Byte() != '[' {
		return nil, false
	}
	for !d.failed() && d.r.Len() > 0 && !d.at(']') {
		if vals == nil {
			vals = make([]any, 0, 4) // keys have a few columns: one allocation, not one per append
		}
		vals = append(vals, d.scalar())
		if d.r.Byte() != ';' {
			return nil, false
		}
	}
	if d.failed() || d.r.Byte() != ']' || d.r.Len() != 0 {
		return nil, false
	}
	return vals, true
}

// IsMap reports whether b is exactly one map of scalars in the binary YSON shape DecodeMap
// takes (whether its keys are distinct is not checked), without decoding it: a payload that
// can be sent on as it is.
func IsMap(b []byte) bool {
	r := varbin.NewReader(b)
	if r.Byte() != '{' {
		return false
	}
	for !r.Failed() && r.Len() > 0 {
		if c, _ := r.Peek(); c == '}' {
			break
		}
		if r.Byte() != markString || !skipString(r) || r.Byte() != '=' || !skipScalar(r) || r.Byte() != ';' {
			return false
		}
	}
	return r.Byte() == '}' && !r.Failed() && r.Len() == 0
}

func skipString(r *varbin.Reader) bool {
	n := r.Varint()
	if n < 0 || n > int64(r.Len()) {
		return false
	}
	r.Next(int(n))
	return !r.Failed()
}

func skipScalar(r *varbin.Reader) bool {
	switch r.Byte() {
	case markString:
		return skipString(r)
	case markInt64:
		r.Varint()
	case markUint64:
		r.Uvarint()
	case markDouble:
		return r.Next(8) != nil
	case markFalse, markTrue, '#':
	default:
		return false
	}
	return !r.Failed()
}

// Decoded reports whether every value of m has a type DecodeMap produces (string, int64,
// uint64, float64, bool, nil): then m and what its encoding (AppendMap) decodes to are equal,
// type for type, and a reader may be handed m itself instead of decoding its bytes.
func Decoded(m map[string]any) bool {
	for _, v := range m {
		if !decodedType(v) {
			return false
		}
	}
	return true
}

// DecodedList is Decoded for a list of scalars (what DecodeList gives back).
func DecodedList(vals []any) bool {
	for _, v := range vals {
		if !decodedType(v) {
			return false
		}
	}
	return true
}

func decodedType(v any) bool {
	switch v.(type) {
	case string, int64, uint64, float64, bool, nil:
		return true
	}
	return false
}

// DecodeMap decodes what AppendMap writes; keys must be distinct.
func DecodeMap(b []byte) (m map[string]any, ok bool) {
	var d Decoder
	return d.DecodeMap(b)
}

// DecodeMapPrefix decodes a map as DecodeMap does from the start of b, which may continue
// after it (a list fragment of rows: "{...};{...};"); n is the length of the map's encoding.
func DecodeMapPrefix(b []byte) (m map[string]any, n int, ok bool) {
	var d Decoder
	return d.DecodeMapPrefix(b)
}

// maxKeys bounds the key strings a Decoder keeps.
const maxKeys = 64

// A Decoder decodes maps as DecodeMap does and reuses the key strings of the maps it
// decoded before, position by position: rows of one table repeat their column names, so
// the rows of a list allocate their keys once (TestDecoderSharesKeys). The zero Decoder is
// ready; one Decoder is not for concurrent use.
type Decoder struct {
	keys []string
	// vals are the values of the last map's entries, position by position (see
	// decoder.scalarLike).
	vals []any
	// Spare holds maps the caller no longer uses: decode takes its maps from here (cleared)
	// before it makes new ones. A map taken is the caller's again.
	Spare []map[string]any
}

// DecodeMap is the package's DecodeMap, reusing key strings.
func (dec *Decoder) DecodeMap(b []byte) (m map[string]any, ok bool) {
	m, n, ok := dec.DecodeMapPrefix(b)
	if !ok || n != len(b) {
		return nil, false
	}
	return m, true
}

// DecodeMapPrefix is the package's DecodeMapPrefix, reusing key strings.
func (dec *Decoder) DecodeMapPrefix(b []byte) (m map[string]any, n int, ok bool) {
	return dec.decode(b, nil)
}

// DecodeRow decodes a map as DecodeMap does, except that the entries whose key begins with
// '$' (system columns) are left out of m: sys receives those holding an integer (a uint64 as
// its bits), and the others are dropped. Their values are not boxed, which saves an
// allocation each.
func (dec *Decoder) DecodeRow(b []byte, sys func(key string, v int64)) (m map[string]any, ok bool) {
	m, n, ok := dec.decode(b, sys)
	if !ok || n != len(b) {
		return nil, false
	}
	return m, true
}

// decode decodes a map from the start of b and returns the length of its encoding; with sys
// set, the '$' entries go to sys as DecodeRow says instead of into m.
func (dec *Decoder) decode(b []byte, sys func(key string, v int64)) (m map[string]any, n int, ok bool) {
	d := decoder{r: varbin.NewReader(b)}
	if d.r.Byte() != '{' {
		return nil, 0, false
	}
	if k := len(dec.Spare); k > 0 {
		m, dec.Spare = dec.Spare[k-1], dec.Spare[:k-1]
		clear(m)
	} else {
		m = make(map[string]any, len(dec.keys))
	}
	for i := 0; !d.failed() && d.r.Len() > 0 && !d.at('}'); i++ {
		if d.r.Byte() != markString {
			return nil, 0, false
		}
		k := dec.key(&d, i)
		if d.r.Byte() != '=' {
			return nil, 0, false
		}
		if sys != nil && len(k) > 0 && k[0] == '$' {
			switch c, _ := d.r.Peek(); c {
			case markInt64:
				d.r.Byte()
				sys(k, d.r.Varint())
			case markUint64:
				d.r.Byte()
				sys(k, int64(d.r.Uvarint()))
			default:
				d.scalar()
			}
		} else {
			var v any
			if i < len(dec.vals) {
				v = d.scalarLike(dec.vals[i])
				dec.vals[i] = v
			} else {
				v = d.scalar()
				if i == len(dec.vals) && i < maxKeys {
					dec.vals = append(dec.vals, v)
				}
			}
			size := len(m)
			if m[k] = v; len(m) == size { // a repeated key (one map operation, not two)
				return nil, 0, false
			}
		}
		if d.r.Byte() != ';' {
			return nil, 0, false
		}
	}
	if d.failed() || d.r.Byte() != '}' || d.r.Failed() {
		return nil, 0, false
	}
	return m, len(b) - d.r.Len(), true
}

// key reads the i-th key of a map, the string of the last map's i-th key when equal.
func (dec *Decoder) key(d *decoder, i int) string {
	n := d.r.Varint()
	if n < 0 || n > int64(d.r.Len()) {
		d.bad = true
		return ""
	}
	raw := d.r.Next(int(n))
	if i < len(dec.keys) && dec.keys[i] == string(raw) {
		return dec.keys[i]
	}
	k := string(raw)
	switch {
	case i < len(dec.keys):
		dec.keys[i] = k
	case i == len(dec.keys) && i < maxKeys:
		dec.keys = append(dec.keys, k)
	}
	return k
}
