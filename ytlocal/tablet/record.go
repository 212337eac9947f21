package tablet

import "go.ytsaurus.tech/yt/go/yson"

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
