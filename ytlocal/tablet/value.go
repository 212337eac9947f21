package tablet

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/internal/ytvalue"
)

// kind is the storage class of a column type: what Go type its values have.
type kind int

const (
	kindAny kind = iota
	kindInt
	kindUint
	kindDouble
	kindBool
	kindBytes
	kindUTF8
	kindNull
)

type intRange struct{ min, max int64 }

func columnKind(t schema.Type) (kind, intRange) {
	switch t {
	case schema.TypeInt64, schema.TypeInterval, "interval64", "date32", "datetime64", "timestamp64":
		return kindInt, intRange{math.MinInt64, math.MaxInt64}
	case schema.TypeInt32:
		return kindInt, intRange{math.MinInt32, math.MaxInt32}
	case schema.TypeInt16:
		return kindInt, intRange{math.MinInt16, math.MaxInt16}
	case schema.TypeInt8:
		return kindInt, intRange{math.MinInt8, math.MaxInt8}
	case schema.TypeUint64, schema.TypeDate, schema.TypeDatetime, schema.TypeTimestamp:
		return kindUint, intRange{0, math.MaxInt64}
	case schema.TypeUint32:
		return kindUint, intRange{0, math.MaxUint32}
	case schema.TypeUint16:
		return kindUint, intRange{0, math.MaxUint16}
	case schema.TypeUint8:
		return kindUint, intRange{0, math.MaxUint8}
	case schema.TypeFloat32, schema.TypeFloat64:
		return kindDouble, intRange{}
	case schema.TypeBoolean:
		return kindBool, intRange{}
	case schema.TypeBytes:
		return kindBytes, intRange{}
	case schema.TypeString:
		return kindUTF8, intRange{}
	case schema.TypeNull, "void":
		return kindNull, intRange{}
	default:
		return kindAny, intRange{}
	}
}

// normalize converts v to the canonical Go type of column c (int64, uint64,
// float64, bool, string or any YSON value) or explains why it cannot.
func (c *column) normalize(v any) (any, error) {
	if v == nil {
		if c.required {
			return nil, fmt.Errorf("required column %q cannot have a null value", c.name)
		}
		return nil, nil
	}
	switch c.kind {
	case kindInt:
		var i int64
		switch x := v.(type) {
		case int64:
			i = x
		case int:
			i = int64(x)
		case int32:
			i = int64(x)
		case uint64:
			if x > math.MaxInt64 {
				return nil, c.rangeError(x)
			}
			i = int64(x)
		case uint32:
			i = int64(x)
		default:
			return nil, c.typeError(v)
		}
		if uint64(c.limits.max) < math.MaxInt64 && (i < c.limits.min || i > c.limits.max) {
			return nil, c.rangeError(i)
		}
		if _, same := v.(int64); same {
			return v, nil // already boxed as stored: no new allocation
		}
		return i, nil
	case kindUint:
		var u uint64
		switch x := v.(type) {
		case uint64:
			u = x
		case uint32:
			u = uint64(x)
		case int64:
			if x < 0 {
				return nil, c.rangeError(x)
			}
			u = uint64(x)
		case int:
			if x < 0 {
				return nil, c.rangeError(x)
			}
			u = uint64(x)
		default:
			return nil, c.typeError(v)
		}
		if c.limits.max < math.MaxInt64 && u > uint64(c.limits.max) {
			return nil, c.rangeError(u)
		}
		if _, same := v.(uint64); same {
			return v, nil
		}
		return u, nil
	case kindDouble:
		switch x := v.(type) {
		case float64:
			return v, nil
		case float32:
			return float64(x), nil
		case int64:
			return float64(x), nil
		case uint64:
			return float64(x), nil
		}
		return nil, c.typeError(v)
	case kindBool:
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return nil, c.typeError(v)
	case kindBytes, kindUTF8:
		var s string
		switch x := v.(type) {
		case string:
			s = x
		case []byte:
			s = string(x)
		default:
			return nil, c.typeError(v)
		}
		if c.kind == kindUTF8 && !utf8.ValidString(s) {
			return nil, fmt.Errorf("value of column %q is not valid UTF-8", c.name)
		}
		if _, same := v.(string); same {
			return v, nil
		}
		return s, nil
	case kindNull:
		return nil, c.typeError(v)
	}
	return v, nil
}

// rangeError explains that the integer v is outside the range of c's type.
func (c *column) rangeError(v any) error {
	return fmt.Errorf("value %d of column %q does not fit type %s", v, c.name, c.typ)
}

func (c *column) typeError(v any) error {
	return fmt.Errorf("cannot store a value of Go type %T in column %q of type %s", v, c.name, c.typ)
}

// encodeKey maps a normalized key to a string usable as a Go map key. Equal
// keys give equal strings.
func encodeKey(key []any) string {
	var buf [96]byte // most keys fit: the string is then the only allocation
	return string(appendKey(buf[:0], key))
}

// encodedLen returns the length of key's encoding by appendKey (a guess of 32 bytes for a
// value of a type appendKey prints).
func encodedLen(key []any) int {
	n := 0
	for _, v := range key {
		switch x := v.(type) {
		case nil:
			n++
		case int64, uint64, float64:
			n += 9
		case bool:
			n += 2
		case string:
			n += 5 + len(x)
		default:
			n += 32
		}
	}
	return n
}

// appendKey appends the encoding of encodeKey to buf.
func appendKey(buf []byte, key []any) []byte {
	for _, v := range key {
		switch x := v.(type) {
		case nil:
			buf = append(buf, 0)
		case int64:
			buf = binary.BigEndian.AppendUint64(append(buf, 1), uint64(x))
		case uint64:
			buf = binary.BigEndian.AppendUint64(append(buf, 2), x)
		case float64:
			buf = binary.BigEndian.AppendUint64(append(buf, 3), math.Float64bits(x))
		case bool:
			b := byte(0)
			if x {
				b = 1
			}
			buf = append(buf, 4, b)
		case string:
			buf = binary.BigEndian.AppendUint32(append(buf, 5), uint32(len(x)))
			buf = append(buf, x...)
		default:
			str := fmt.Sprintf("%#v", x)
			buf = binary.BigEndian.AppendUint32(append(buf, 6), uint32(len(str)))
			buf = append(buf, str...)
		}
	}
	return buf
}

// aggregate combines an old and a new value of a column with an aggregate
// function; a null on either side yields the other side.
func aggregate(fn schema.AggregateFunction, old, new any) any {
	if old == nil {
		return new
	}
	if new == nil {
		return old
	}
	switch fn {
	case "sum":
		switch x := old.(type) {
		case int64:
			return x + new.(int64)
		case uint64:
			return x + new.(uint64)
		case float64:
			return x + new.(float64)
		}
	case "min":
		if ytvalue.Compare(new, old) < 0 {
			return new
		}
		return old
	case "max":
		if ytvalue.Compare(new, old) > 0 {
			return new
		}
		return old
	case "first":
		return old
	}
	return new
}
