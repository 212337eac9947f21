// The binary bodies of a push and of its answer (encodePush, decodePush, encodeAcks,
// decodeAcks).

package job

import (
	"errors"
	"fmt"

	"github.com/ytflow/yt-flow/internal/varbin"
	"github.com/ytflow/yt-flow/ytstore"
)

// pushContentType marks the binary push body that senders use; a body of another type is
// read as the JSON pushRequest of earlier versions.
const pushContentType = "application/x-yt-flow-push"

// pushFormat is the first byte of a binary push body. Format 2 follows every message record
// with the message's birth (wireMessage.Born) as a uvarint; format 1 (earlier versions) has
// none, and its messages count as of unknown birth.
const (
	pushFormat   = 2
	pushFormatV1 = 1
)

// errBadPush marks a push body that cannot be decoded.
var errBadPush = errors.New("malformed push body")

// encodePush writes a binary push body: pushFormat; job id, computation, sender as
// length-prefixed strings; session, seq and the message count as uvarints; then one message
// record per message (ytstore.AppendMessage, as in output chunks), each followed by the
// message's birth (OutputRow.Birth) as a uvarint. Unlike JSON it needs no base64 for the
// YSON key and payload bytes.
func encodePush(jobID, computation string, tag pushTag, rows []*ytstore.OutputRow) []byte {
	size := 64 + len(jobID) + len(computation) + len(tag.sender)
	for _, r := range rows {
		size += len(r.MessageID) + len(r.StreamID) + len(r.Key) + len(r.Payload) + 58
	}
	b := make([]byte, 0, size)
	b = append(b, pushFormat)
	b = varbin.AppendString(b, jobID)
	b = varbin.AppendString(b, computation)
	b = varbin.AppendString(b, tag.sender)
	b = varbin.AppendUvarint(b, tag.session)
	b = varbin.AppendUvarint(b, tag.seq)
	b = varbin.AppendUvarint(b, uint64(len(rows)))
	for _, r := range rows {
		b = ytstore.AppendMessage(b, r)
		b = varbin.AppendUvarint(b, r.Birth())
	}
	return b
}

// decodePush reads a binary push body. Errors wrap errBadPush and say where it broke.
func decodePush(body []byte) (pushRequest, error) {
	var pr pushRequest
	if len(body) == 0 || (body[0] != pushFormat && body[0] != pushFormatV1) {
		return pr, fmt.Errorf("%w: unknown format", errBadPush)
	}
	withBirth := body[0] == pushFormat
	d := varbin.NewReader(body[1:])
	pr.JobID = d.String()
	pr.Computation = d.String()
	pr.Sender = d.String()
	pr.Session = d.Uvarint()
	pr.Seq = d.Uvarint()
	n := d.Uvarint()
	if d.Failed() {
		return pr, fmt.Errorf("%w: header truncated", errBadPush)
	}
	// Every message takes at least 8 bytes: a count beyond that is a lie, not an allocation.
	if n > uint64(d.Len()/8) {
		return pr, fmt.Errorf("%w: %d messages in %d bytes", errBadPush, n, d.Len())
	}
	pr.Messages = make([]wireMessage, n)
	for i := range pr.Messages {
		var r ytstore.OutputRow
		ytstore.ReadMessage(d, &r)
		pr.Messages[i] = wireMessage{ID: r.MessageID, Stream: r.StreamID, Key: r.Key, KeyHash: r.KeyHash, Payload: r.Payload, EventTS: r.EventTimestamp, SystemTS: r.SystemTimestamp}
		if withBirth {
			pr.Messages[i].Born = d.Uvarint()
		}
		if d.Failed() {
			return pr, fmt.Errorf("%w: job %s: message %d of %d truncated", errBadPush, pr.JobID, i, n)
		}
	}
	if d.Len() != 0 {
		return pr, fmt.Errorf("%w: job %s: %d bytes after the last message", errBadPush, pr.JobID, d.Len())
	}
	return pr, nil
}

// ackContentType marks the binary push response (encodeAcks). A sender asks for it with the
// request's Accept header; a reader of an earlier version ignores that and answers with the
// JSON pushResponse, which the sender still reads.
const ackContentType = "application/x-yt-flow-acks"

// ackFormat is the first byte of a binary push response.
const ackFormat = 1

// encodeAcks writes a binary push response: ackFormat; a flags byte (1: Reset); the refusal
// reason as a length-prefixed string; the count of acknowledged ids as a uvarint, then each
// id as a length-prefixed string. It replaces the JSON answer, whose encoding and decoding
// cost more than the acknowledgement is worth.
func encodeAcks(resp pushResponse) []byte {
	size := 16 + len(resp.Refused)
	for _, id := range resp.Acked {
		size += len(id) + 2
	}
	b := make([]byte, 0, size)
	b = append(b, ackFormat)
	var flags byte
	if resp.Reset {
		flags |= 1
	}
	b = append(b, flags)
	b = varbin.AppendString(b, resp.Refused)
	b = varbin.AppendUvarint(b, uint64(len(resp.Acked)))
	for _, id := range resp.Acked {
		b = varbin.AppendString(b, id)
	}
	return b
}

// decodeAcks reads a binary push response. Errors say where it broke.
func decodeAcks(body []byte) (pushResponse, error) {
	var resp pushResponse
	if len(body) < 2 || body[0] != ackFormat {
		return resp, errors.New("binary push response: unknown format")
	}
	if body[1]&^1 != 0 {
		return resp, fmt.Errorf("binary push response: unknown flags %#x", body[1])
	}
	resp.Reset = body[1]&1 != 0
	d := varbin.NewReader(body[2:])
	resp.Refused = d.String()
	n := d.Uvarint()
	if d.Failed() {
		return resp, errors.New("binary push response: header truncated")
	}
	// Every id takes at least one byte: a count beyond that is a lie, not an allocation.
	if n > uint64(d.Len()) {
		return resp, fmt.Errorf("binary push response: %d ids in %d bytes", n, d.Len())
	}
	resp.Acked = make([]string, n)
	for i := range resp.Acked {
		resp.Acked[i] = d.String()
		if d.Failed() {
			return resp, fmt.Errorf("binary push response: id %d of %d truncated", i, n)
		}
	}
	if d.Len() != 0 {
		return resp, fmt.Errorf("binary push response: %d bytes after the last id", d.Len())
	}
	return resp, nil
}
