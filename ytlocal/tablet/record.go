package tablet

import (
	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/internal/ybin"
)

// Hand-written encoders for the per-row parts of a commit record: they are written
// for every committed row of a durable server. The field names match the yson
// tags, so yson.Unmarshal decodes them.

func writeValues(w *yson.Writer, key string, values []any) {
	w.MapKeyString(key)
	w.BeginList()
	for _, v := range values {
		// The column types of dynamic tables, without the reflection of Writer.Any.
		switch v := v.(type) {
		case nil:
			w.Entity()
		case string:
			w.String(v)
		case int64:
			w.Int64(v)
		case uint64:
			w.Uint64(v)
		case bool:
			w.Bool(v)
		case float64:
			w.Float64(v)
		case []byte:
			w.Bytes(v)
		default:
			w.Any(v)
		}
	}
	w.EndList()
}

func writeInts(w *yson.Writer, key string, ints []int) {
	w.MapKeyString(key)
	w.BeginList()
	for _, g := range ints {
		w.Int64(int64(g))
	}
	w.EndList()
}

// MarshalYSON implements yson.StreamMarshaler.
func (r RowWrite) MarshalYSON(w *yson.Writer) error {
	w.BeginMap()
	w.MapKeyString("table")
	w.String(r.Table)
	writeValues(w, "key", r.Key)
	if len(r.Values) > 0 {
		writeValues(w, "values", r.Values)
	}
	if r.Delete {
		w.MapKeyString("delete")
		w.Bool(true)
	}
	writeInts(w, "groups", r.Groups)
	w.EndMap()
	return w.Err()
}

// MarshalYSON implements yson.StreamMarshaler.
func (r RowLock) MarshalYSON(w *yson.Writer) error {
	w.BeginMap()
	w.MapKeyString("table")
	w.String(r.Table)
	writeValues(w, "key", r.Key)
	writeInts(w, "groups", r.Groups)
	if r.Exclusive {
		w.MapKeyString("exclusive")
		w.Bool(true)
	}
	w.EndMap()
	return w.Err()
}

// MarshalYSON implements yson.StreamMarshaler.
func (r RowAppend) MarshalYSON(w *yson.Writer) error {
	w.BeginMap()
	w.MapKeyString("table")
	w.String(r.Table)
	w.MapKeyString("tablet")
	w.Int64(int64(r.Tablet))
	writeValues(w, "values", r.Values)
	w.EndMap()
	return w.Err()
}

// MarshalYSON implements yson.StreamMarshaler: the rows of a commit are written without
// the reflection (and the boxing of every element) of the generic slice encoder.
func (r *CommitRecord) MarshalYSON(w *yson.Writer) error {
	w.BeginMap()
	w.MapKeyString("timestamp")
	w.Uint64(uint64(r.Timestamp))
	writeRecords(w, "writes", r.Writes)
	writeRecords(w, "locks", r.Locks)
	writeRecords(w, "appends", r.Appends)
	w.EndMap()
	return w.Err()
}

// writeRecords writes items under key as a list (nothing when there are none).
func writeRecords[T yson.StreamMarshaler](w *yson.Writer, key string, items []T) {
	if len(items) == 0 {
		return
	}
	w.MapKeyString(key)
	w.BeginList()
	for i := range items {
		_ = items[i].MarshalYSON(w)
	}
	w.EndList()
}

// AppendCommitRecord appends rec in binary YSON, byte for byte what the SDK's encoder
// writes for it (TestAppendCommitRecordMatchesSDK), without the SDK writer's allocation
// per string and number: a durable server journals every committed row. ok is false (b
// unchanged) for anything but a commit record whose values are all scalars; the caller
// encodes those with the SDK.
func AppendCommitRecord(b []byte, rec *Record) ([]byte, bool) {
	if rec.Kind != RecordCommit || rec.Commit == nil || rec.Table != "" || rec.Path != "" ||
		rec.Schema != nil || rec.State != "" || rec.TabletCount != 0 || rec.PivotKeys != nil ||
		rec.TabletIndex != 0 || rec.TrimmedRowCount != 0 || rec.Registration != nil ||
		rec.Column != "" || rec.Watermark != 0 {
		return b, false
	}
	a := recordAppender{b: b}
	c := rec.Commit
	a.b = append(a.b, '{')
	a.field("kind")
	a.scalar(string(rec.Kind))
	a.field("commit")
	a.b = append(a.b, '{')
	a.field("timestamp")
	a.scalar(uint64(c.Timestamp))
	a.list("writes", len(c.Writes), func(i int) {
		w := &c.Writes[i]
		a.field("table")
		a.scalar(w.Table)
		a.values("key", w.Key)
		if len(w.Values) > 0 {
			a.values("values", w.Values)
		}
		if w.Delete {
			a.field("delete")
			a.scalar(true)
		}
		a.ints("groups", w.Groups)
	})
	a.list("locks", len(c.Locks), func(i int) {
		l := &c.Locks[i]
		a.field("table")
		a.scalar(l.Table)
		a.values("key", l.Key)
		a.ints("groups", l.Groups)
		if l.Exclusive {
			a.field("exclusive")
			a.scalar(true)
		}
	})
	a.list("appends", len(c.Appends), func(i int) {
		ap := &c.Appends[i]
		a.field("table")
		a.scalar(ap.Table)
		a.field("tablet")
		a.scalar(int64(ap.Tablet))
		a.values("values", ap.Values)
	})
	a.b = append(a.b, '}', ';', '}')
	if a.bad {
		return b, false
	}
	return a.b, true
}

// recordAppender appends the parts of a record; bad is set by a value that is not a scalar.
type recordAppender struct {
	b   []byte
	bad bool
}

// field appends a map key and its "=".
func (a *recordAppender) field(k string) {
	a.b, _ = ybin.AppendScalar(a.b, k)
	a.b = append(a.b, '=')
}

// scalar appends a map value and its ";".
func (a *recordAppender) scalar(v any) {
	var ok bool
	if a.b, ok = ybin.AppendScalar(a.b, v); !ok {
		a.bad = true
	}
	a.b = append(a.b, ';')
}

// list appends, when n > 0, the field k as a list of n maps whose entries item appends
// (writeRecords' shape: nothing for an empty list).
func (a *recordAppender) list(k string, n int, item func(i int)) {
	if n == 0 {
		return
	}
	a.field(k)
	a.b = append(a.b, '[')
	for i := range n {
		a.b = append(a.b, '{')
		item(i)
		a.b = append(a.b, '}', ';')
	}
	a.b = append(a.b, ']', ';')
}

func (a *recordAppender) values(k string, vals []any) {
	a.field(k)
	a.b = append(a.b, '[')
	for _, v := range vals {
		a.scalar(v)
	}
	a.b = append(a.b, ']', ';')
}

func (a *recordAppender) ints(k string, ints []int) {
	a.field(k)
	a.b = append(a.b, '[')
	for _, g := range ints {
		a.scalar(int64(g))
	}
	a.b = append(a.b, ']', ';')
}
