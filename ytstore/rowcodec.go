package ytstore

import (
	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/internal/ybin"
)

// The rows every epoch writes encode themselves (yson.StreamMarshaler) instead of going
// through the SDK's reflection; the bytes are the same (TestRowsEncodeAsReflection). They
// also append their binary encoding straight to a request body (appender), byte for byte what
// the SDK's binary writer makes of their MarshalYSON (TestRowsAppendAsSDK), without its
// per-call buffers.

// appender is a row that appends its binary YSON map to b; ok is false when it cannot (a
// value the fast encoder does not take), and b is then unchanged.
type appender interface {
	appendYSON(b []byte) ([]byte, bool)
}

// appendDedupTail appends the value columns both dedup indexes share, as writeDedupTail.
func appendDedupTail(b []byte, systemTS uint64, fingerprint *uint64) []byte {
	if systemTS != 0 {
		b = ybin.AppendUint64(ybin.AppendKey(b, "system_timestamp"), systemTS)
	}
	if fingerprint != nil {
		b = ybin.AppendUint64(ybin.AppendKey(b, "payload_fingerprint"), *fingerprint)
	}
	return b
}

func (r compactInputMessageRow) appendYSON(b []byte) ([]byte, bool) {
	b = append(b, '{')
	b = ybin.AppendBytes(ybin.AppendKey(b, "deduplication_message_key"), r.DedupKey)
	b = appendDedupTail(b, r.SystemTimestamp, r.PayloadFingerprint)
	return append(b, '}'), true
}

func (r inputMessageRow) appendYSON(b []byte) ([]byte, bool) {
	b = append(b, '{')
	b = ybin.AppendString(ybin.AppendKey(b, "computation_id"), r.ComputationID)
	b = ybin.AppendBytes(ybin.AppendKey(b, "key"), r.Key)
	b = ybin.AppendString(ybin.AppendKey(b, "message_id"), r.MessageID)
	b = appendDedupTail(b, r.SystemTimestamp, r.PayloadFingerprint)
	return append(b, '}'), true
}

func (r StateRow) appendYSON(b []byte) ([]byte, bool) {
	b = append(b, '{')
	b = ybin.AppendString(ybin.AppendKey(b, "computation_id"), r.ComputationID)
	b = ybin.AppendUint64(ybin.AppendKey(b, "key_hash"), r.KeyHash)
	b = ybin.AppendBytes(ybin.AppendKey(b, "key"), r.Key)
	b = ybin.AppendString(ybin.AppendKey(b, "name"), r.Name)
	b = ybin.AppendBytes(ybin.AppendKey(b, "state"), r.State)
	return append(b, '}'), true
}

func (r *outputChunkRow) appendYSON(b []byte) ([]byte, bool) {
	b = append(b, '{')
	b = ybin.AppendString(ybin.AppendKey(b, "partition_id"), r.PartitionID)
	b = ybin.AppendString(ybin.AppendKey(b, "destination"), r.Destination)
	b = ybin.AppendUint64(ybin.AppendKey(b, "chunk_id"), r.ChunkID)
	b = ybin.AppendInt64(ybin.AppendKey(b, "part"), r.Part)
	b = ybin.AppendInt64(ybin.AppendKey(b, "message_count"), r.MessageCount)
	b = ybin.AppendBytes(ybin.AppendKey(b, "data"), r.Data)
	return append(b, '}'), true
}

func (r partitionTransactionRow) appendYSON(b []byte) ([]byte, bool) {
	b = append(b, '{')
	b = ybin.AppendString(ybin.AppendKey(b, "partition_id"), r.PartitionID)
	b = ybin.AppendUint64(ybin.AppendKey(b, "last_transaction_start_timestamp"), r.Token)
	return append(b, '}'), true
}

// appendYSON appends the row with its columns in sorted order (ybin.AppendMap), as the SDK's
// reflection encoder writes a map; ok is false for a value that is not a scalar.
func (r sinkRow) appendYSON(b []byte) ([]byte, bool) { return ybin.AppendMap(b, r) }

// appendRows appends rows as a binary YSON list fragment (each row followed by ';'), the body
// of a row command; ok is false when a row is not an appender (or cannot append itself) or a
// yson.RawValue, and b is then unchanged. A RawValue is taken as the binary YSON it holds.
func appendRows(b []byte, rows []any) ([]byte, bool) {
	start := len(b)
	for _, row := range rows {
		switch r := row.(type) {
		case appender:
			var ok bool
			if b, ok = r.appendYSON(b); !ok {
				return b[:start], false
			}
		case yson.RawValue:
			b = append(b, r...)
		default:
			return b[:start], false
		}
		b = append(b, ';')
	}
	return b, true
}

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
