package flow

import (
	"strconv"
)

// marshalScalar encodes the integer and boolean values that states most often hold without
// the SDK's encoder (which allocates a 4 KiB buffer per call). The bytes are exactly what
// yson.Marshal writes (text YSON: 42, 42u, %true), so stored states compare equal whichever
// path wrote them (TestScalarMatchesSDK). ok is false for any other value.
func marshalScalar(v any) (b []byte, ok bool) {
	switch x := v.(type) {
	case int64:
		return strconv.AppendInt(make([]byte, 0, 20), x, 10), true
	case int:
		return strconv.AppendInt(make([]byte, 0, 20), int64(x), 10), true
	case int32:
		return strconv.AppendInt(make([]byte, 0, 11), int64(x), 10), true
	case uint64:
		return append(strconv.AppendUint(make([]byte, 0, 21), x, 10), 'u'), true
	case uint32:
		return append(strconv.AppendUint(make([]byte, 0, 11), uint64(x), 10), 'u'), true
	case bool:
		if x {
			return []byte("%true"), true
		}
		return []byte("%false"), true
	}
	return nil, false
}

// unmarshalScalar decodes what marshalScalar writes into an *int64, *int, *uint64 or *bool;
// ok is false for anything else (other types or encodings go through the SDK).
func unmarshalScalar(b []byte, dst any) (ok bool) {
	if len(b) == 0 || b[0] == '+' {
		return false
	}
	switch p := dst.(type) {
	case *int64:
		v, err := strconv.ParseInt(string(b), 10, 64)
		if err != nil {
			return false
		}
		*p = v
	case *int:
		v, err := strconv.ParseInt(string(b), 10, strconv.IntSize)
		if err != nil {
			return false
		}
		*p = int(v)
	case *uint64:
		if len(b) < 2 || b[len(b)-1] != 'u' {
			return false
		}
		v, err := strconv.ParseUint(string(b[:len(b)-1]), 10, 64)
		if err != nil {
			return false
		}
		*p = v
	case *bool:
		switch string(b) {
		case "%true":
			*p = true
		case "%false":
			*p = false
		default:
			return false
		}
	default:
		return false
	}
	return true
}
