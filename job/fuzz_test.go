// Fuzz tests of the push and ack bodies (JSON and binary) and their round trip.

package job

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/ytstore"
)

// FuzzPushRequest feeds arbitrary bodies to the /push decoding: it must never panic, and a
// message it accepts keeps its id and a key that re-encodes to the same routing hash input.
func FuzzPushRequest(f *testing.F) {
	good, _ := json.Marshal(pushRequest{JobID: "j", Computation: "c", Messages: []wireMessage{{
		ID: "m1", Stream: "s", Key: epoch.EncodeKey(flow.Key{uint64(5), "w"}), KeyHash: 5, Payload: []byte("{word=w}"),
	}}})
	f.Add(good)
	f.Add([]byte(`{"job_id":"j","messages":[{"id":"x","key":"AAAA","payload":"e30="}]}`))
	f.Add([]byte(`{"messages":[{"id":"x","key":null}]}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var pr pushRequest
		if err := json.Unmarshal(body, &pr); err != nil {
			return
		}
		for _, m := range pr.Messages {
			in, err := fromWire(m, nil)
			if err != nil {
				continue
			}
			if in.Message.MessageID != m.ID {
				t.Fatalf("id %q became %q", m.ID, in.Message.MessageID)
			}
			again, err := epoch.DecodeKey(epoch.EncodeKey(in.Message.Key))
			if err != nil {
				t.Fatalf("a decoded key does not round-trip: %v", err)
			}
			if string(epoch.EncodeKey(again)) != string(epoch.EncodeKey(in.Message.Key)) {
				t.Fatalf("key encoding is not canonical: %v vs %v", again, in.Message.Key)
			}
		}
	})
}

// FuzzPushBody feeds arbitrary bytes to the binary /push decoding: it must never panic, and
// what it accepts encodes back to a body that decodes the same.
func FuzzPushBody(f *testing.F) {
	rows := []ytstore.OutputRow{{MessageID: "m1", StreamID: "s", Key: epoch.EncodeKey(flow.Key{uint64(5), "w"}), KeyHash: 5, Payload: []byte("{word=w}"), EventTimestamp: 3, SystemTimestamp: 4}}
	f.Add(encodePush("j", "c", pushTag{sender: "s", session: 1, seq: 2}, rowPtrs(rows)))
	f.Add(encodePush("j", "c", pushTag{}, nil))
	f.Add([]byte{pushFormat, 1, 'j', 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, body []byte) {
		pr, err := decodePush(body)
		if err != nil {
			return
		}
		again := make([]ytstore.OutputRow, len(pr.Messages))
		for i, m := range pr.Messages {
			again[i] = ytstore.OutputRow{MessageID: m.ID, StreamID: m.Stream, Key: m.Key, Payload: m.Payload, KeyHash: m.KeyHash, EventTimestamp: m.EventTS, SystemTimestamp: m.SystemTS}
		}
		pr2, err := decodePush(encodePush(pr.JobID, pr.Computation, pushTag{sender: pr.Sender, session: pr.Session, seq: pr.Seq}, rowPtrs(again)))
		if err != nil {
			t.Fatalf("re-encoded body does not decode: %v", err)
		}
		if !reflect.DeepEqual(pr, pr2) {
			t.Fatalf("round trip differs: %+v vs %+v", pr, pr2)
		}
	})
}

// FuzzAckBody feeds arbitrary bytes to the binary push response decoding: it must never
// panic, and what it accepts encodes back to a body that decodes the same (varints need not
// be minimal, so the bytes may differ).
func FuzzAckBody(f *testing.F) {
	f.Add(encodeAcks(pushResponse{Acked: []string{"m1", "m2"}}))
	f.Add(encodeAcks(pushResponse{Refused: "inbox full", Reset: true}))
	f.Add([]byte{ackFormat, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, body []byte) {
		resp, err := decodeAcks(body)
		if err != nil {
			return
		}
		again, err := decodeAcks(encodeAcks(resp))
		if err != nil {
			t.Fatalf("re-encoded body does not decode: %v", err)
		}
		if !reflect.DeepEqual(again, resp) {
			t.Fatalf("round trip differs: %+v vs %+v", again, resp)
		}
	})
}

// TestAcksRoundTrip: the binary push response carries ids, refusal and reset unchanged, and
// a truncated body is an error.
func TestAcksRoundTrip(t *testing.T) {
	for _, resp := range []pushResponse{
		{Acked: []string{"a", "", "b/0/1"}},
		{Refused: "no job j here", Reset: true, Acked: []string{}},
		{Reset: true, Acked: []string{"x"}},
	} {
		body := encodeAcks(resp)
		got, err := decodeAcks(body)
		if err != nil {
			t.Fatalf("%+v: %v", resp, err)
		}
		if !reflect.DeepEqual(got, resp) {
			t.Fatalf("round trip: %+v became %+v", resp, got)
		}
		if _, err := decodeAcks(body[:len(body)-1]); err == nil {
			t.Fatalf("%+v: a truncated body decoded", resp)
		}
	}
}
