package ytstore

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ytflow/yt-flow/internal/varbin"
)

// TableOutputChunks is the output store (the transactional outbox): the outputs of transform
// computations and the rows of asynchronous sinks, chunked per partition, destination and
// epoch. Flow calls the same mechanism compact_partition_output_messages: one row holds many
// messages, so an epoch writes one row per destination instead of one per message, and a
// chunk is deleted with one row once every message in it is acknowledged or delivered.
const TableOutputChunks = "compact_partition_output_messages"

// Chunk limits: an epoch's outputs to one destination are cut into parts of at most
// MaxChunkMessages messages and about MaxChunkBytes bytes (dynamic table values are limited
// to 16 MiB).
const (
	MaxChunkMessages = 1024
	MaxChunkBytes    = 4 << 20
)

// ErrBadChunk marks an output chunk whose data cannot be decoded.
var ErrBadChunk = errors.New("malformed output chunk")

// OutputChunk identifies the chunk of the output store that holds a message: the epoch that
// wrote it (its token) and the part within that epoch's outputs to one destination. The zero
// value marks a row of the per-message table output_messages, written by earlier versions.
type OutputChunk struct {
	ID   uint64
	Part int64
}

// AssignChunks stamps rows (one epoch's outputs, in order) with their chunks: chunk id is the
// epoch's token; the rows of each destination are cut into parts of at most MaxChunkMessages
// messages and MaxChunkBytes bytes.
func AssignChunks(rows []OutputRow, token uint64) {
	type acc struct {
		part         int64
		count, bytes int
	}
	per := map[string]*acc{}
	for i := range rows {
		r := &rows[i]
		a := per[r.Destination]
		if a == nil {
			a = &acc{}
			per[r.Destination] = a
		}
		size := encodedSize(r)
		if a.count > 0 && (a.count >= MaxChunkMessages || a.bytes+size > MaxChunkBytes) {
			a.part++
			a.count, a.bytes = 0, 0
		}
		a.count++
		a.bytes += size
		r.Chunk = OutputChunk{ID: token, Part: a.part}
	}
}

type outputChunkRow struct {
	PartitionID  string `yson:"partition_id"`
	Destination  string `yson:"destination"`
	ChunkID      uint64 `yson:"chunk_id"`
	Part         int64  `yson:"part"`
	MessageCount int64  `yson:"message_count"`
	Data         []byte `yson:"data"`
}

// chunkRows groups stamped output rows into chunk rows, in first-seen order.
func chunkRows(rows []OutputRow) ([]any, error) {
	type ck struct {
		partition, dest string
		chunk           OutputChunk
	}
	index := map[ck]int{}
	var out []*outputChunkRow
	var sizes []int // each chunk's encoded size at most: its data is allocated once
	at := make([]int, len(rows))
	for i := range rows {
		r := &rows[i]
		if r.Chunk.ID == 0 {
			return nil, fmt.Errorf("ytstore: output %s to %s has no chunk (AssignChunks not called)", r.MessageID, r.Destination)
		}
		k := ck{r.PartitionID, r.Destination, r.Chunk}
		j, ok := index[k]
		if !ok {
			j = len(out)
			index[k] = j
			out = append(out, &outputChunkRow{PartitionID: r.PartitionID, Destination: r.Destination, ChunkID: r.Chunk.ID, Part: r.Chunk.Part})
			sizes = append(sizes, 1)
		}
		at[i] = j
		sizes[j] += encodedSize(r)
	}
	for j, c := range out {
		c.Data = append(chunkData(sizes[j]), chunkFormat)
	}
	for i := range rows {
		c := out[at[i]]
		c.MessageCount++
		c.Data = AppendMessage(c.Data, &rows[i])
	}
	res := make([]any, len(out))
	for i, c := range out {
		res[i] = c
	}
	return res, nil
}

// chunkBuffers holds the data buffers of chunk rows already written (releaseChunks), for
// the chunks of later epochs: an epoch's chunks are dead once their insert_rows requests
// are encoded.
var chunkBuffers = newBuffers(8, 1<<20)

// chunkData returns an empty buffer of capacity at least n.
func chunkData(n int) []byte { return *chunkBuffers.get(n) }

// releaseChunks hands the data buffers of chunks (what chunkRows returned) to later
// chunkRows calls; nothing may read the chunks after.
func releaseChunks(chunks []any) {
	for _, c := range chunks {
		if r, ok := c.(*outputChunkRow); ok && r.Data != nil {
			b := r.Data
			r.Data = nil
			chunkBuffers.put(&b)
		}
	}
}

// chunkFormat is the first byte of a chunk's data: the version of the encoding below.
const chunkFormat = 1

// A chunk's data is chunkFormat followed by one message record (AppendMessage) per message.

// AppendMessage appends r's message record: message_id, stream_id, key, payload as uvarint
// length + bytes; key_hash, event_timestamp, system_timestamp as uvarints; sequence_number
// as a varint. Output chunks and the inter-job push body (job/wire.go) use it.
func AppendMessage(b []byte, r *OutputRow) []byte {
	b = varbin.AppendString(b, r.MessageID)
	b = varbin.AppendString(b, r.StreamID)
	b = varbin.AppendBytes(b, r.Key)
	b = varbin.AppendBytes(b, r.Payload)
	b = varbin.AppendUvarint(b, r.KeyHash)
	b = varbin.AppendUvarint(b, r.EventTimestamp)
	b = varbin.AppendUvarint(b, r.SystemTimestamp)
	return varbin.AppendVarint(b, r.SequenceNumber)
}

// ReadMessage reads a record written by AppendMessage into r's message fields; d.Failed()
// tells whether it was whole. Byte fields share d's memory.
func ReadMessage(d *varbin.Reader, r *OutputRow) {
	r.MessageID = d.String()
	r.StreamID = d.String()
	r.Key = d.Bytes()
	r.Payload = d.Bytes()
	r.KeyHash = d.Uvarint()
	r.EventTimestamp = d.Uvarint()
	r.SystemTimestamp = d.Uvarint()
	r.SequenceNumber = d.Varint()
}

func encodedSize(r *OutputRow) int {
	return len(r.MessageID) + len(r.StreamID) + len(r.Key) + len(r.Payload) + 4*binary.MaxVarintLen32 + 4*binary.MaxVarintLen64
}

// decodeChunk decodes a chunk's data into rows of partition and destination; count is the
// row's message_count. Errors wrap ErrBadChunk.
func decodeChunk(data []byte, count int64, partition, destination string, chunk OutputChunk) ([]OutputRow, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: partition %s, destination %s, chunk %d part %d: %s", ErrBadChunk, partition, destination, chunk.ID, chunk.Part, fmt.Sprintf(format, args...))
	}
	if len(data) == 0 || data[0] != chunkFormat {
		return nil, bad("unknown format")
	}
	d := varbin.NewReader(data[1:])
	var rows []OutputRow
	for d.Len() > 0 {
		r := OutputRow{PartitionID: partition, Destination: destination, Chunk: chunk}
		ReadMessage(d, &r)
		if d.Failed() {
			return nil, bad("message %d truncated", len(rows))
		}
		rows = append(rows, r)
	}
	if int64(len(rows)) != count {
		return nil, bad("%d messages, message_count says %d", len(rows), count)
	}
	return rows, nil
}
