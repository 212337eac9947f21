package ytstore

import (
	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/internal/ybin"
)

// The rows every epoch writes encode themselves: appendYSON appends a row's binary YSON,
// byte for byte what the SDK's reflection encoder writes for it (TestRowsEncodeAsReflection,
// FuzzRowsEncodeAsReflection), with no allocation per field. An insert whose rows all encode
// themselves goes out as one pre-encoded batch (tableTx.insert); otherwise through the SDK's
// writer, which encodes them with their MarshalYSON (the same bytes) or, for timers and dead
// letters, by reflection.

// yrow is a row that encodes itself as binary YSON (a map, without the list's ';').
type yrow interface {
	appendYSON(b []byte) []byte
}

// The keys of the rows' columns, encoded once.
var (
	keyDedupKey      = ybin.Key("deduplication_message_key")
	keySystemTS      = ybin.Key("system_timestamp")
	keyFingerprint   = ybin.Key("payload_fingerprint")
	keyComputationID = ybin.Key("computation_id")
	keyKey           = ybin.Key("key")
	keyKeyHash       = ybin.Key("key_hash")
	keyMessageID     = ybin.Key("message_id")
	keyName          = ybin.Key("name")
	keyState         = ybin.Key("state")
	keyPartitionID   = ybin.Key("partition_id")
	keyDestination   = ybin.Key("destination")
	keyChunkID       = ybin.Key("chunk_id")
	keyPart          = ybin.Key("part")
	keyMessageCount  = ybin.Key("message_count")
	keyData          = ybin.Key("data")
	keyLastTxStart   = ybin.Key("last_transaction_start_timestamp")
	keyStreamID      = ybin.Key("stream_id")
	keyEventTS       = ybin.Key("event_timestamp")
	keyTriggerTS     = ybin.Key("trigger_timestamp")
	keyPayload       = ybin.Key("payload")
	keyError         = ybin.Key("error")
	keyAttempts      = ybin.Key("attempts")
	keyTimer         = ybin.Key("timer")
	keyTrigger       = ybin.Key("trigger")
	keyDeadAt        = ybin.Key("dead_at")
)

// rowBuffers holds the buffers rows are encoded in between uses.
var rowBuffers = newBuffers(8, 1<<20)

func getRowBuffer() *[]byte { return rowBuffers.get(512) }

func putRowBuffer(b *[]byte) { rowBuffers.put(b) }

// writeRow writes the row encoded in buf (a buffer of getRowBuffer, released here) through
// w as one node: for the binary writer one write of its bytes, validated byte by byte (about
// as costly as the writer's field-by-field encoding of a small row: BenchmarkRowsThroughWriter),
// for the text writers the same node re-encoded. Only inserts that cannot be sent as a batch
// and tests take this way.
func writeRow(w *yson.Writer, buf *[]byte) error {
	w.RawNode(*buf)
	putRowBuffer(buf)
	return w.Err()
}

// appendDedupTail appends the value columns both dedup indexes share; zero and nil are
// omitted (omitempty).
func appendDedupTail(b []byte, systemTS uint64, fingerprint *uint64) []byte {
	if systemTS != 0 {
		b = append(ybin.AppendUint64(append(b, keySystemTS...), systemTS), ';')
	}
	if fingerprint != nil {
		b = append(ybin.AppendUint64(append(b, keyFingerprint...), *fingerprint), ';')
	}
	return b
}

// compactDedupRows are the compact_input_messages rows of the dedup rows with Compact set,
// in order: appendRows encodes them straight from the dedup rows, with no row value, key
// or fingerprint allocated per row; the bytes are those of the rows values lists
// (TestCompactDedupRowsEncodeAsValues).
type compactDedupRows struct {
	rows []DedupRow
	// fingerprints is whether the table has the payload_fingerprint column; without it the
	// fingerprints are left out.
	fingerprints bool
}

func (c compactDedupRows) appendRows(b []byte) []byte {
	for i := range c.rows {
		d := &c.rows[i]
		if !d.Compact {
			continue
		}
		b = append(append(b, '{'), keyDedupKey...)
		b = d.appendCompactKey(ybin.AppendStringHeader(b, d.compactKeyLen()))
		b = append(b, ';')
		if d.SystemTimestamp != 0 {
			b = append(ybin.AppendUint64(append(b, keySystemTS...), d.SystemTimestamp), ';')
		}
		if c.fingerprints && d.PayloadFingerprint != 0 {
			b = append(ybin.AppendUint64(append(b, keyFingerprint...), d.PayloadFingerprint), ';')
		}
		b = append(b, '}', ';')
	}
	return b
}

func (c compactDedupRows) values() []any {
	var rows []any
	for _, d := range c.rows {
		if !d.Compact {
			continue
		}
		if !c.fingerprints {
			d.PayloadFingerprint = 0 // omitted from the row
		}
		rows = append(rows, d.row())
	}
	return rows
}

func (r compactInputMessageRow) appendYSON(b []byte) []byte {
	b = append(b, '{')
	b = append(ybin.AppendBytes(append(b, keyDedupKey...), r.DedupKey), ';')
	b = appendDedupTail(b, r.SystemTimestamp, r.PayloadFingerprint)
	return append(b, '}')
}

func (r inputMessageRow) appendYSON(b []byte) []byte {
	b = append(b, '{')
	b = append(ybin.AppendString(append(b, keyComputationID...), r.ComputationID), ';')
	b = append(ybin.AppendBytes(append(b, keyKey...), r.Key), ';')
	b = append(ybin.AppendString(append(b, keyMessageID...), r.MessageID), ';')
	b = appendDedupTail(b, r.SystemTimestamp, r.PayloadFingerprint)
	return append(b, '}')
}

func (r StateRow) appendYSON(b []byte) []byte {
	b = append(b, '{')
	b = append(ybin.AppendString(append(b, keyComputationID...), r.ComputationID), ';')
	b = append(ybin.AppendUint64(append(b, keyKeyHash...), r.KeyHash), ';')
	b = append(ybin.AppendBytes(append(b, keyKey...), r.Key), ';')
	b = append(ybin.AppendString(append(b, keyName...), r.Name), ';')
	b = append(ybin.AppendBytes(append(b, keyState...), r.State), ';')
	return append(b, '}')
}

func (r *outputChunkRow) appendYSON(b []byte) []byte {
	b = append(b, '{')
	b = append(ybin.AppendString(append(b, keyPartitionID...), r.PartitionID), ';')
	b = append(ybin.AppendString(append(b, keyDestination...), r.Destination), ';')
	b = append(ybin.AppendUint64(append(b, keyChunkID...), r.ChunkID), ';')
	b = append(ybin.AppendInt64(append(b, keyPart...), r.Part), ';')
	b = append(ybin.AppendInt64(append(b, keyMessageCount...), r.MessageCount), ';')
	b = append(ybin.AppendBytes(append(b, keyData...), r.Data), ';')
	return append(b, '}')
}

func (r partitionTransactionRow) appendYSON(b []byte) []byte {
	b = append(b, '{')
	b = append(ybin.AppendString(append(b, keyPartitionID...), r.PartitionID), ';')
	b = append(ybin.AppendUint64(append(b, keyLastTxStart...), r.Token), ';')
	return append(b, '}')
}

func (r partitionStateRow) appendYSON(b []byte) []byte {
	b = append(b, '{')
	b = append(ybin.AppendString(append(b, keyPartitionID...), r.PartitionID), ';')
	b = append(ybin.AppendString(append(b, keyName...), r.Name), ';')
	b = append(ybin.AppendBytes(append(b, keyState...), r.State), ';')
	return append(b, '}')
}

// TimerRow and DeadLetterRow encode themselves only for batches; through the SDK's writer
// (an insert that cannot go as a batch, a document printed) they are encoded by reflection.

func (r TimerRow) appendYSON(b []byte) []byte {
	b = append(b, '{')
	b = append(ybin.AppendString(append(b, keyComputationID...), r.ComputationID), ';')
	b = append(ybin.AppendUint64(append(b, keyKeyHash...), r.KeyHash), ';')
	b = append(ybin.AppendBytes(append(b, keyKey...), r.Key), ';')
	b = append(ybin.AppendString(append(b, keyMessageID...), r.MessageID), ';')
	b = append(ybin.AppendString(append(b, keyStreamID...), r.StreamID), ';')
	b = append(ybin.AppendUint64(append(b, keySystemTS...), r.SystemTimestamp), ';')
	b = append(ybin.AppendUint64(append(b, keyEventTS...), r.EventTimestamp), ';')
	b = append(ybin.AppendUint64(append(b, keyTriggerTS...), r.TriggerTimestamp), ';')
	b = append(ybin.AppendBytes(append(b, keyPayload...), r.Payload), ';')
	return append(b, '}')
}

func (r DeadLetterRow) appendYSON(b []byte) []byte {
	b = append(b, '{')
	b = append(ybin.AppendString(append(b, keyComputationID...), r.ComputationID), ';')
	b = append(ybin.AppendUint64(append(b, keyKeyHash...), r.KeyHash), ';')
	b = append(ybin.AppendBytes(append(b, keyKey...), r.Key), ';')
	b = append(ybin.AppendString(append(b, keyMessageID...), r.MessageID), ';')
	b = append(ybin.AppendString(append(b, keyStreamID...), r.StreamID), ';')
	b = append(ybin.AppendString(append(b, keyPartitionID...), r.PartitionID), ';')
	b = append(ybin.AppendBytes(append(b, keyPayload...), r.Payload), ';')
	b = append(ybin.AppendString(append(b, keyError...), r.Error), ';')
	b = append(ybin.AppendUint64(append(b, keyAttempts...), r.Attempts), ';')
	b = append(ybin.AppendBool(append(b, keyTimer...), r.Timer), ';')
	b = append(ybin.AppendUint64(append(b, keyTrigger...), r.Trigger), ';')
	b = append(ybin.AppendUint64(append(b, keySystemTS...), r.SystemTimestamp), ';')
	b = append(ybin.AppendUint64(append(b, keyEventTS...), r.EventTimestamp), ';')
	b = append(ybin.AppendUint64(append(b, keyDeadAt...), r.DeadAt), ';')
	return append(b, '}')
}

// MarshalYSON implements yson.StreamMarshaler.
func (r compactInputMessageRow) MarshalYSON(w *yson.Writer) error {
	buf := getRowBuffer()
	*buf = r.appendYSON(*buf)
	return writeRow(w, buf)
}

// MarshalYSON implements yson.StreamMarshaler.
func (r inputMessageRow) MarshalYSON(w *yson.Writer) error {
	buf := getRowBuffer()
	*buf = r.appendYSON(*buf)
	return writeRow(w, buf)
}

// MarshalYSON implements yson.StreamMarshaler.
func (r StateRow) MarshalYSON(w *yson.Writer) error {
	buf := getRowBuffer()
	*buf = r.appendYSON(*buf)
	return writeRow(w, buf)
}

// MarshalYSON implements yson.StreamMarshaler. Field by field, not through writeRow: the
// writer validates a raw node byte by byte, and a chunk's data is up to MaxChunkBytes.
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

// MarshalYSON implements yson.StreamMarshaler.
func (r partitionTransactionRow) MarshalYSON(w *yson.Writer) error {
	buf := getRowBuffer()
	*buf = r.appendYSON(*buf)
	return writeRow(w, buf)
}

// MarshalYSON implements yson.StreamMarshaler.
func (r partitionStateRow) MarshalYSON(w *yson.Writer) error {
	buf := getRowBuffer()
	*buf = r.appendYSON(*buf)
	return writeRow(w, buf)
}

// appendSinkRows appends rows (of a sink table) as a batch body, each row's columns in map
// order as sinkRow writes them; ok is false (b unchanged) when a value is not a scalar
// (those rows go through sinkRow and the SDK's writer).
func appendSinkRows(b []byte, rows []map[string]any) (out []byte, ok bool) {
	start := len(b)
	for _, r := range rows {
		b = append(b, '{')
		for k, v := range r {
			b = append(ybin.AppendString(b, k), '=')
			if x, isBytes := v.([]byte); isBytes {
				b = ybin.AppendBytes(b, x) // nil is the entity, as the writer's Bytes
			} else if b, ok = ybin.AppendScalar(b, v); !ok {
				return b[:start], false
			}
			b = append(b, ';')
		}
		b = append(b, '}', ';')
	}
	return b, true
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
