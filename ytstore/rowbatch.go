// Inserts sent as one pre-encoded batch (tableTx.insert).

package ytstore

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"sync/atomic"

	"go.ytsaurus.tech/library/go/blockcodecs"
	"go.ytsaurus.tech/yt/go/yt"
)

// InsertRows encodes each row through the SDK's writer, whose binary string and integer
// methods allocate their varint scratch on every call (several allocations per row), and
// streams the body through a pipe to the goroutine sending the request. The rows an epoch
// writes encode themselves (yrow): an insert of such rows is encoded into one buffer, in the
// body's format (a binary YSON list fragment: each row followed by ';'), and sent with
// InsertRowBatch — the same request with the same body, encoded with no allocation per row
// and sent with its length (TestInsertBatchMatchesInsertRows).

// rowList is the rows of one insert: appendRows appends them as a batch body (a binary
// YSON list fragment, each row followed by ';'), values lists them for InsertRows (when a
// batch cannot be sent), the same rows in the same order.
type rowList interface {
	appendRows(b []byte) []byte
	values() []any
}

// yrows are rows that each encode themselves (yrow).
type yrows []any

func (r yrows) appendRows(b []byte) []byte {
	for _, x := range r {
		b = append(x.(yrow).appendYSON(b), ';')
	}
	return b
}

func (r yrows) values() []any { return r }

// asRowList returns rows as a rowList; ok is false when a row does not encode itself.
func asRowList(rows []any) (l rowList, ok bool) {
	for _, r := range rows {
		if _, ok := r.(yrow); !ok {
			return nil, false
		}
	}
	return yrows(rows), true
}

// rowBatch returns the SDK's row batch holding body (an encoded list fragment, copied), as
// NewRowBatchWriter would have written it for this client: compressed with its block codec,
// or as it is. ok is false when the SDK's batch cannot be written directly (another SDK
// version than the one pinned, TestRowBatchTaken) or the codec is not known; the caller then
// inserts the rows with InsertRows.
func (s *Store) rowBatch(body []byte) (batch yt.RowBatch, ok bool, err error) {
	batch = s.newRowBatch()
	w, ok := batch.(io.Writer)
	if !ok {
		return nil, false, nil
	}
	switch s.codec {
	case yt.ClientCodecNone, yt.ClientCodecGZIP: // the SDK sends these batches as written
		_, err = w.Write(body)
		return batch, true, err
	}
	name, ok := s.codec.BlockCodec()
	codec := blockcodecs.FindCodecByName(name)
	if !ok || codec == nil {
		return nil, false, nil
	}
	enc := blockcodecs.NewEncoder(w, codec)
	if _, err := enc.Write(body); err != nil {
		return nil, false, fmt.Errorf("compress rows: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, false, fmt.Errorf("compress rows: %w", err)
	}
	return batch, true, nil
}

// batchType is the SDK's row batch type when it is the one expected (newRowBatch).
var batchType atomic.Pointer[reflect.Type]

// newRowBatch returns an empty row batch of the SDK. NewRowBatchWriter makes one with a
// writer around it that rowBatch does not use (a 4 KiB buffer and the YSON writer's state,
// per insert); the batch itself is a struct whose zero value is ready (the writer is built
// on &rowBatch{}): once the first batch has shown the type to be that struct, with that one
// field, new ones are made of the type directly. Any other type is always made through
// NewRowBatchWriter.
func (s *Store) newRowBatch() yt.RowBatch {
	if t := batchType.Load(); t != nil {
		return reflect.New(*t).Interface().(yt.RowBatch)
	}
	b := s.yc.NewRowBatchWriter().Batch()
	if t := reflect.TypeOf(b); t.Kind() == reflect.Pointer {
		e := t.Elem()
		if e.Kind() == reflect.Struct && e.Name() == "rowBatch" && e.PkgPath() == "go.ytsaurus.tech/yt/go/yt/internal/httpclient" &&
			e.NumField() == 1 && e.Field(0).Type == reflect.TypeFor[bytes.Buffer]() {
			batchType.Store(&e)
		}
	}
	return b
}
