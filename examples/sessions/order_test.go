package sessions

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/flow/flowtest"
)

// TestEventOrderNumbersPerUser: EventOrder numbers each user's events in the order it sees
// them, across epochs and streams, and writes the stream and event time of each.
func TestEventOrderNumbersPerUser(t *testing.T) {
	h := flowtest.New(t, "EventOrder", flowtest.Options{Parameters: flow.Row{"output": "order"}})
	ev := func(user, stream string, at uint64) flow.Message {
		m := event(user, 1, at)
		m.StreamID = stream
		return m
	}
	r := h.Run(flowtest.Epoch{Messages: []flow.Message{ev("alice", "ea", 10), ev("bob", "eb", 5), ev("alice", "eb", 7)}})
	assert.ElementsMatch(t, []flow.Row{
		{"user": "alice", "seq": int64(0), "stream": "ea", "ts": int64(10)},
		{"user": "alice", "seq": int64(1), "stream": "eb", "ts": int64(7)},
		{"user": "bob", "seq": int64(0), "stream": "eb", "ts": int64(5)},
	}, r.Payloads("order"))
	r = h.Run(flowtest.Epoch{Messages: []flow.Message{ev("alice", "ea", 20)}})
	assert.Equal(t, []flow.Row{{"user": "alice", "seq": int64(2), "stream": "ea", "ts": int64(20)}}, r.Payloads("order"))

	bad := flowtest.New(t, "EventOrder", flowtest.Options{})
	_, err := bad.TryRun(flowtest.Epoch{Messages: []flow.Message{ev("alice", "ea", 1)}})
	assert.ErrorIs(t, err, flow.ErrBadParameters)
}
