package kafka

import (
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ytflow/yt-flow/internal/ybin"
)

// arena hands out the Kafka records of one delivery, their headers and the bytes of their
// keys and values from blocks shared by many records, instead of one allocation per record
// and per value. A part handed out is never written by the arena again (the client writes a
// record's fields while producing it, and may hold it until its promise ran); an arena lives
// for one delivery, so its blocks hold no record's bytes past it.
type arena struct {
	recs    []kgo.Record
	headers []kgo.RecordHeader
	buf     []byte
}

const (
	// arenaBlock is the size of a block of record bytes.
	arenaBlock = 8 << 10
	// arenaMaxCopy is the longest string copied into a block; a longer one gets its own
	// allocation, so that a block is not mostly one value.
	arenaMaxCopy = 1 << 10
	// arenaMaxRecords bounds the records of one block.
	arenaMaxRecords = 1024
)

// newArena returns the arena of a delivery of about n records.
func newArena(n int) *arena {
	return &arena{recs: make([]kgo.Record, min(max(n, 1), arenaMaxRecords))}
}

// record is a zero record of the delivery.
func (a *arena) record() *kgo.Record {
	if len(a.recs) == 0 {
		a.recs = make([]kgo.Record, arenaMaxRecords)
	}
	r := &a.recs[0]
	a.recs = a.recs[1:]
	return r
}

// header is a record's header list of one header.
func (a *arena) header(key string, value []byte) []kgo.RecordHeader {
	if len(a.headers) == 0 {
		a.headers = make([]kgo.RecordHeader, len(a.recs)+1) // this record's and the block's rest
	}
	h := a.headers[0:1:1]
	a.headers = a.headers[1:]
	h[0] = kgo.RecordHeader{Key: key, Value: value}
	return h
}

// room makes room for n more bytes in the current block.
func (a *arena) room(n int) {
	if cap(a.buf)-len(a.buf) < n {
		a.buf = make([]byte, 0, arenaBlock)
	}
}

// cut hands out the bytes appended since start.
func (a *arena) cut(start int) []byte {
	return a.buf[start:len(a.buf):len(a.buf)]
}

// text is s as record bytes: never nil (an empty string is an empty value, not a null one).
func (a *arena) text(s string) []byte { return arenaText(a, s) }

func arenaText[T string | []byte](a *arena, s T) []byte {
	if len(s) == 0 {
		return []byte{}
	}
	if len(s) > arenaMaxCopy {
		return []byte(s)
	}
	a.room(len(s))
	start := len(a.buf)
	a.buf = append(a.buf, s...)
	return a.cut(start)
}

// field is a column value found in a stored row (ybin.Fields) as record bytes: what bytesOf
// makes of the value decoded (TestSinkFieldMatchesBytesOf).
func (a *arena) field(f ybin.Field) []byte {
	switch f.Kind {
	case ybin.FieldMissing, ybin.FieldNull:
		return nil
	case ybin.FieldString:
		return arenaText(a, f.Str)
	}
	a.room(32)
	start := len(a.buf)
	switch f.Kind {
	case ybin.FieldInt64:
		a.buf = strconv.AppendInt(a.buf, f.Int, 10)
	case ybin.FieldUint64:
		a.buf = strconv.AppendUint(a.buf, f.Uint, 10)
	case ybin.FieldDouble:
		a.buf = strconv.AppendFloat(a.buf, f.Float, 'g', -1, 64)
	case ybin.FieldBool:
		a.buf = strconv.AppendBool(a.buf, f.Bool)
	}
	return a.cut(start)
}

// bytesOf is a column value as record bytes: nil for null, strings and bytes as they are,
// numbers and booleans as text.
func (a *arena) bytesOf(v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		return a.text(x), nil
	case []byte:
		return x, nil
	}
	a.room(32) // the longest number: a float64's 24 bytes
	start := len(a.buf)
	switch x := v.(type) {
	case int64:
		a.buf = strconv.AppendInt(a.buf, x, 10)
	case uint64:
		a.buf = strconv.AppendUint(a.buf, x, 10)
	case int:
		a.buf = strconv.AppendInt(a.buf, int64(x), 10)
	case float64:
		a.buf = strconv.AppendFloat(a.buf, x, 'g', -1, 64)
	case bool:
		a.buf = strconv.AppendBool(a.buf, x)
	default:
		return nil, fmt.Errorf("a %T value has no record bytes (want a string, bytes, a number or a boolean)", v)
	}
	return a.cut(start), nil
}
