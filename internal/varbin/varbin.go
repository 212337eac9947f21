// Package varbin is the small binary record encoding shared by the output store chunks
// (ytstore) and the inter-job push body (job): unsigned and signed varints and
// length-prefixed byte strings, read back by a Reader that checks every bound (the binary
// YSON decoder of internal/ybin reads through it too).
package varbin

import "encoding/binary"

// AppendBytes appends v as a uvarint length and the bytes.
func AppendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// AppendString appends s as AppendBytes does.
func AppendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// AppendUvarint and AppendVarint append varints.
func AppendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }
func AppendVarint(b []byte, v int64) []byte   { return binary.AppendVarint(b, v) }

// Reader reads what the Append functions wrote. After the first malformed or truncated value
// every read returns zero and Failed reports true.
type Reader struct {
	b      []byte
	failed bool
}

// NewReader reads b; the byte strings it returns share b's memory.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Failed reports whether a read ran past the end or met a malformed varint.
func (r *Reader) Failed() bool { return r.failed }

// Len is the number of bytes not read yet.
func (r *Reader) Len() int { return len(r.b) }

func (r *Reader) fail() {
	r.failed, r.b = true, nil
}

// Uvarint reads an unsigned varint.
func (r *Reader) Uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

// Varint reads a signed varint.
func (r *Reader) Varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

// Bytes reads a length-prefixed byte string; an empty one is nil.
func (r *Reader) Bytes() []byte {
	n := r.Uvarint()
	if r.failed || n > uint64(len(r.b)) {
		r.fail()
		return nil
	}
	if n == 0 {
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if len(r.b) == 0 {
		r.fail()
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// Peek returns the next byte without reading it; ok is false at the end.
func (r *Reader) Peek() (c byte, ok bool) {
	if len(r.b) == 0 {
		return 0, false
	}
	return r.b[0], true
}

// Next reads the next n bytes (sharing r's memory).
func (r *Reader) Next(n int) []byte {
	if n < 0 || n > len(r.b) {
		r.fail()
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// String reads a length-prefixed byte string as a string.
func (r *Reader) String() string { return string(r.Bytes()) }
