package job

import (
	"encoding/json"
	"testing"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
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
			in, err := fromWire(m)
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
