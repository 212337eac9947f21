package ytstore

import (
	"reflect"
	"sync"
	"unsafe"

	"go.ytsaurus.tech/yt/go/yt"
)

// Reading a row's bytes in place.
//
// The SDK's YSON table reader (the reader of pull_queue_consumer, select_rows and
// lookup_rows over HTTP) finds each row's bytes when Next is called and keeps them in its
// field `value`; Scan then decodes them again through yson.Unmarshal, which allocates a new
// decoder and reader for every row and scans the row a second time before it hands the
// bytes to an Unmarshaler. On the queue source's path that is one row per input message:
// reading the bytes in place instead cut the exactly-once pipeline's CPU per message by about
// 6 % (docs/perf-notes.md, "The epoch"; bench/results/2026-12-05-6bd2e86-pipeline.md).
//
// The SDK is pinned to an exact version (go.mod); rowBytesOf checks once per reader type, by
// reflection, that the reader is that type with that field (name and type), and otherwise
// reports ok=false so that the caller falls back to Scan: a different SDK still works, only
// slower. TestRowBytesInPlace asserts that the pinned SDK takes the fast path.

// rowBytesField is, per concrete reader type, the offset of its current-row field, or
// noRowBytes when the type is not the one expected.
var rowBytesField sync.Map // reflect.Type -> uintptr

const noRowBytes = ^uintptr(0)

// rowBytesOffset finds the offset of the current row's bytes in readers of type t.
func rowBytesOffset(t reflect.Type) uintptr {
	if v, ok := rowBytesField.Load(t); ok {
		return v.(uintptr)
	}
	off := noRowBytes
	if t.Kind() == reflect.Pointer {
		e := t.Elem()
		if e.Kind() == reflect.Struct && e.Name() == "ysonTableReader" &&
			e.PkgPath() == "go.ytsaurus.tech/yt/go/yt/internal/httpclient" {
			if f, ok := e.FieldByName("value"); ok && f.Type == reflect.TypeFor[[]byte]() {
				off = f.Offset
			}
		}
	}
	rowBytesField.Store(t, off)
	return off
}

// rowBytesOf returns, when r is the SDK's YSON table reader, a function that returns the
// bytes of the row r.Next last moved to — valid until the next call of r.Next, never to be
// modified; ok is false for any other reader. The type is checked once per call, not per
// row.
func rowBytesOf(r yt.TableReader) (row func() []byte, ok bool) {
	if r == nil {
		return nil, false
	}
	off := rowBytesOffset(reflect.TypeOf(r))
	if off == noRowBytes {
		return nil, false
	}
	field := (*[]byte)(unsafe.Add(reflect.ValueOf(r).UnsafePointer(), off))
	return func() []byte { return *field }, true
}
