package flow

import (
	"strconv"
)

// marshalScalar encodes the integer and boolean values that states most often hold without
// the SDK's encoder (which allocates a 4 KiB buffer per call). The bytes are exactly what
// yson.Marshal writes (text YSON: 42, 42u, %true), so stored states compare equal whichever
// path wrote them (TestScalarMatchesSDK). ok is false for any other value.
func marshalScalar(v any) (b []byte, ok bool) {
	return appendScalar(nil, v)
}

// appendScalar appends marshalScalar's encoding of v to dst.
func appendScalar(dst []byte, v any) (b []byte, ok bool) {
	switch x := v.(type) {
	case int64:
		return strconv.AppendInt(dst, x, 10), true
	case int:
		return strconv.AppendInt(dst, int64(x), 10), true
	case int32:
		return strconv.AppendInt(dst, int64(x), 10), true
	case uint64:
		return append(strconv.AppendUint(dst, x, 10), 'u'), true
	case uint32:
		return append(strconv.AppendUint(dst, uint64(x), 10), 'u'), true
	case bool:
		if x {
			return append(dst, "%true"...), true
		}
		return append(dst, "%false"...), true
	}
	return dst, false
}

// scalarBlock is the size of the blocks the encoded scalar states of an invocation are cut
// from (run.encodeScalar): one allocation serves several states, and a state kept by the
// runtime (its state cache) keeps at most this many bytes alive.
const scalarBlock = 64

// encodeScalar is marshalScalar with the bytes cut from the run's block: each value gets
// bytes of its own (capacity = length), never written again, so what the runtime keeps of a
// released invocation stays as it was (TestReleaseRecyclesInvocation).
func (r *run) encodeScalar(v any) ([]byte, bool) {
	var buf [24]byte // the longest: 18446744073709551615u, -9223372036854775808, %false
	b, ok := appendScalar(buf[:0], v)
	if !ok {
		return nil, false
	}
	return r.cut(b), true
}

// encodeBits is encodeScalar of the value a slot caches as kind and bits.
func (r *run) encodeBits(k scalarKind, bits uint64) []byte {
	var buf [24]byte
	b := buf[:0]
	switch k {
	case scalarInt64, scalarInt:
		b = strconv.AppendInt(b, int64(bits), 10)
	case scalarUint64:
		b = append(strconv.AppendUint(b, bits, 10), 'u')
	case scalarBool:
		if bits != 0 {
			b = append(b, "%true"...)
		} else {
			b = append(b, "%false"...)
		}
	}
	return r.cut(b)
}

// cut copies b into the run's block and returns the copy, with capacity = length.
func (r *run) cut(b []byte) []byte {
	if cap(r.block)-len(r.block) < len(b) {
		r.block = make([]byte, 0, max(scalarBlock, len(b)))
	}
	n := len(r.block)
	r.block = append(r.block, b...)
	return r.block[n:len(r.block):len(r.block)]
}

// scalarKind names the state types a slot caches without boxing (stateSlot.kind).
type scalarKind uint8

const (
	noScalar scalarKind = iota
	scalarInt64
	scalarInt
	scalarUint64
	scalarBool
)

// scalarOf returns the kind and bits of the value p points to when it is an int64, int,
// uint64 or bool (not a named type: those may have methods such as IsEmpty); noScalar
// otherwise. It takes a pointer, which does not escape, so the value is not boxed.
func scalarOf(p any) (scalarKind, uint64) {
	switch x := p.(type) {
	case *int64:
		return scalarInt64, uint64(*x)
	case *int:
		return scalarInt, uint64(int64(*x))
	case *uint64:
		return scalarUint64, *x
	case *bool:
		if *x {
			return scalarBool, 1
		}
		return scalarBool, 0
	}
	return noScalar, 0
}

// loadScalar stores the value cached as kind k and bits into what p points to, when p is a
// pointer to that kind's type.
func loadScalar(k scalarKind, bits uint64, p any) bool {
	switch x := p.(type) {
	case *int64:
		if k == scalarInt64 {
			*x = int64(bits)
			return true
		}
	case *int:
		if k == scalarInt {
			*x = int(int64(bits))
			return true
		}
	case *uint64:
		if k == scalarUint64 {
			*x = bits
			return true
		}
	case *bool:
		if k == scalarBool {
			*x = bits != 0
			return true
		}
	}
	return false
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
