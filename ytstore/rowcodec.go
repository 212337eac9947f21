package ytstore

import "go.ytsaurus.tech/yt/go/yson"

// The rows every epoch writes encode themselves (yson.StreamMarshaler) instead of going
// through the SDK's reflection; the bytes are the same (TestRowsEncodeAsReflection).

// writeDedupTail writes the value columns both dedup indexes share; zero and nil are omitted
// (omitempty).
func writeDedupTail(w *yson.Writer, systemTS uint64, fingerprint *uint64) {
	if systemTS != 0 {
		w.MapKeyString("system_timestamp")
		w.Uint64(systemTS)
	}
	if fingerprint != nil {
		w.MapKeyString("payload_fingerprint")
		w.Uint64(*fingerprint)
	}
}

func (r compactInputMessageRow) MarshalYSON(w *yson.Writer) error {
	w.BeginMap()
	w.MapKeyString("deduplication_message_key")
	w.Bytes(r.DedupKey)
	writeDedupTail(w, r.SystemTimestamp, r.PayloadFingerprint)
	w.EndMap()
	return w.Err()
}

func (r inputMessageRow) MarshalYSON(w *yson.Writer) error {
	w.BeginMap()
	w.MapKeyString("computation_id")
	w.String(r.ComputationID)
	w.MapKeyString("key")
	w.Bytes(r.Key)
	w.MapKeyString("message_id")
	w.String(r.MessageID)
	writeDedupTail(w, r.SystemTimestamp, r.PayloadFingerprint)
	w.EndMap()
	return w.Err()
}

func (r StateRow) MarshalYSON(w *yson.Writer) error {
	w.BeginMap()
	w.MapKeyString("computation_id")
	w.String(r.ComputationID)
	w.MapKeyString("key_hash")
	w.Uint64(r.KeyHash)
	w.MapKeyString("key")
	w.Bytes(r.Key)
	w.MapKeyString("name")
	w.String(r.Name)
	w.MapKeyString("state")
	w.Bytes(r.State)
	w.EndMap()
	return w.Err()
}

func (r *outputChunkRow) MarshalYSON(w *yson.Writer) error {
	w.BeginMap()
	w.MapKeyString("partition_id")
	w.String(r.PartitionID)
	w.MapKeyString("destination")
	w.String(r.Destination)
	w.MapKeyString("chunk_id")
	w.Uint64(r.ChunkID)
	w.MapKeyString("part")
	w.Int64(r.Part)
	w.MapKeyString("message_count")
	w.Int64(r.MessageCount)
	w.MapKeyString("data")
	w.Bytes(r.Data)
	w.EndMap()
	return w.Err()
}

func (r partitionTransactionRow) MarshalYSON(w *yson.Writer) error {
	w.BeginMap()
	w.MapKeyString("partition_id")
	w.String(r.PartitionID)
	w.MapKeyString("last_transaction_start_timestamp")
	w.Uint64(r.Token)
	w.EndMap()
	return w.Err()
}

// sinkRow is a row of a sink table (a map of column values, mostly scalars): written without
// the reflection encoder, which boxes every value and sorts the keys. The order of the
// columns differs from the reflection encoder's (sorted); what the row says does not
// (TestSinkRowEncodesAsReflection).
type sinkRow map[string]any

func (r sinkRow) MarshalYSON(w *yson.Writer) error {
	w.BeginMap()
	for k, v := range r {
		w.MapKeyString(k)
		switch x := v.(type) {
		case nil:
			w.Entity()
		case string:
			w.String(x)
		case []byte:
			w.Bytes(x)
		case int64:
			w.Int64(x)
		case int:
			w.Int64(int64(x))
		case int32:
			w.Int64(int64(x))
		case uint64:
			w.Uint64(x)
		case uint32:
			w.Uint64(uint64(x))
		case float64:
			w.Float64(x)
		case bool:
			w.Bool(x)
		default:
			w.Any(v)
		}
	}
	w.EndMap()
	return w.Err()
}
