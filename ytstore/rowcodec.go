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
