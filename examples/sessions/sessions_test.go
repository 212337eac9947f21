package sessions

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"unicode"

	farm "github.com/dgryski/go-farm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/flow/flowtest"
)

const sec = uint64(1_000_000)

var params = flowtest.Options{Parameters: flow.Row{"session_gap_seconds": int64(60)}}

// key is the group-by key [farm_hash(s), s] of both computations.
func key(s string) flow.Key { return flow.Key{farm.Fingerprint64([]byte(s)), s} }

func raw(data string) flow.Message {
	return flowtest.Msg("raw", key(data), flow.Row{"data": data})
}

func event(user string, amount int64, at uint64) flow.Message {
	m := flowtest.Msg("events", key(user), flow.Row{"user": user, "amount": amount})
	m.EventTimestamp = at
	return m
}

func TestParseEvents(t *testing.T) {
	h := flowtest.New(t, "ParseEvents", flowtest.Options{Swift: true})
	lines := []string{
		"alice 5", "bob -3", "Ünïcode 0",
		// malformed: no amount, not a number, leading space, two spaces, trailing field,
		// tab in the name, overflow, empty
		"alice", "alice five", " alice 5", "alice  5", "alice 5 6", "al\tice 5", "alice 9223372036854775808", "",
	}
	var in []flow.Message
	for _, l := range lines {
		in = append(in, raw(l))
	}
	r := h.Run(flowtest.Epoch{Messages: in})
	assert.Equal(t, []flow.Row{
		{"user": "alice", "amount": int64(5)},
		{"user": "bob", "amount": int64(-3)},
		{"user": "Ünïcode", "amount": int64(0)},
	}, r.Payloads("events"))

	// Swift map: exactly one parent per output, the raw line it came from; no state, no timers.
	for i, o := range r.Outputs {
		require.Len(t, o.ParentIDs, 1)
		assert.Equal(t, r.Invocations[i].Messages[0].MessageID, o.ParentIDs[0])
	}
	assert.Empty(t, h.Keys())
	assert.Empty(t, h.PendingTimers())
}

func TestParseEventsRejectsNonStringData(t *testing.T) {
	h := flowtest.New(t, "ParseEvents", flowtest.Options{})
	_, err := h.TryRun(flowtest.Epoch{Messages: []flow.Message{flowtest.Msg("raw", key("x"), flow.Row{"data": int64(1)})}})
	assert.ErrorIs(t, err, flow.ErrColumn)
	assert.ErrorContains(t, err, `"data"`)
}

func TestSumByUserSessions(t *testing.T) {
	h := flowtest.New(t, "SumByUser", params)

	// Epoch 1: alice at 1 s and 20 s, bob at 10 s.
	r := h.Run(flowtest.Epoch{Now: 30 * sec, Messages: []flow.Message{
		event("alice", 5, 1*sec), event("bob", 7, 10*sec), event("alice", 3, 20*sec),
	}})
	assert.Empty(t, r.Outputs, "nothing is flushed before the watermark passes a session's end")
	s, ok := flowtest.Get[Session](h, key("alice"), "session")
	require.True(t, ok)
	assert.Equal(t, Session{Total: 8, Events: 2, LastEventTime: 20 * sec}, s)
	var triggers []uint64
	for _, tm := range h.PendingTimers() {
		assert.Equal(t, "flush", tm.StreamID)
		triggers = append(triggers, tm.Trigger)
	}
	assert.Equal(t, []uint64{61 * sec, 70 * sec}, triggers, "one timer per session: alice 61 s, bob 70 s")

	// Epoch 2: watermark 70 s. Alice's timer at 61 s fires early and is re-armed at her
	// session's end; bob's session ends.
	r = h.Run(flowtest.Epoch{Watermark: 70 * sec})
	assert.Len(t, r.Fired, 2)
	assert.Equal(t, []flow.Row{{"user": "bob", "total": int64(7), "events": int64(1)}}, r.Payloads("totals"))
	_, ok = flowtest.Get[Session](h, key("bob"), "session")
	assert.False(t, ok, "bob's session is cleared after the flush")
	s, _ = flowtest.Get[Session](h, key("alice"), "session")
	assert.Equal(t, int64(8), s.Total, "an early timer leaves the session alone")
	require.Len(t, h.PendingTimers(), 1)
	assert.Equal(t, 80*sec, h.PendingTimers()[0].Trigger, "re-armed at alice's session end")

	// Epoch 3: watermark 80 s and a new alice event at 90 s. The timer runs before the message:
	// the old session is flushed, the event opens a new one.
	r = h.Run(flowtest.Epoch{Watermark: 80 * sec, Messages: []flow.Message{event("alice", 4, 90*sec)}})
	assert.Equal(t, []flow.Row{{"user": "alice", "total": int64(8), "events": int64(2)}}, r.Payloads("totals"))
	s, _ = flowtest.Get[Session](h, key("alice"), "session")
	assert.Equal(t, Session{Total: 4, Events: 1, LastEventTime: 90 * sec}, s)
	require.Len(t, h.PendingTimers(), 1)
	assert.Equal(t, 150*sec, h.PendingTimers()[0].Trigger)

	// The flush output names its timer as the only parent.
	require.Len(t, r.Outputs, 1)
	assert.Equal(t, []string{r.Fired[0].MessageID}, r.Outputs[0].ParentIDs)

	// Epoch 4: everything ends.
	r = h.Run(flowtest.Epoch{Watermark: 1000 * sec})
	assert.Equal(t, []flow.Row{{"user": "alice", "total": int64(4), "events": int64(1)}}, r.Payloads("totals"))
	assert.Empty(t, h.Keys())
	assert.Empty(t, h.PendingTimers())
}

func TestSumByUserLateEventKeepsSessionEnd(t *testing.T) {
	h := flowtest.New(t, "SumByUser", params)
	h.Run(flowtest.Epoch{Messages: []flow.Message{event("carol", 1, 50*sec), event("carol", 2, 10*sec)}})
	s, _ := flowtest.Get[Session](h, key("carol"), "session")
	assert.Equal(t, Session{Total: 3, Events: 2, LastEventTime: 50 * sec}, s, "an older event does not move the end back")
	require.Len(t, h.PendingTimers(), 1, "an event of an open session sets no timer")
	assert.Equal(t, 110*sec, h.PendingTimers()[0].Trigger)
}

func TestSumByUserEventWithoutEventTime(t *testing.T) {
	h := flowtest.New(t, "SumByUser", params)
	m := event("dave", 2, 0)
	m.SystemTimestamp = 5 * sec
	h.Run(flowtest.Epoch{Messages: []flow.Message{m}})
	s, _ := flowtest.Get[Session](h, key("dave"), "session")
	assert.Equal(t, 5*sec, s.LastEventTime, "the system timestamp stands in")
}

func TestSumByUserNeedsPositiveGap(t *testing.T) {
	for name, opts := range map[string]flowtest.Options{
		"missing":  {},
		"zero":     {Parameters: flow.Row{"session_gap_seconds": int64(0)}},
		"negative": {Parameters: flow.Row{"session_gap_seconds": int64(-5)}},
		"string":   {Parameters: flow.Row{"session_gap_seconds": "60"}},
	} {
		t.Run(name, func(t *testing.T) {
			h := flowtest.New(t, "SumByUser", opts)
			_, err := h.TryRun(flowtest.Epoch{Messages: []flow.Message{event("a", 1, sec)}})
			assert.ErrorIs(t, err, flow.ErrBadParameters)
			assert.ErrorContains(t, err, "SumByUser")
			assert.Empty(t, h.Keys(), "a failed epoch writes no state")
		})
	}
}

func TestSumByUserRejectsBadAmount(t *testing.T) {
	h := flowtest.New(t, "SumByUser", params)
	m := flowtest.Msg("events", key("a"), flow.Row{"user": "a", "amount": "5"})
	_, err := h.TryRun(flowtest.Epoch{Messages: []flow.Message{m}})
	assert.ErrorIs(t, err, flow.ErrColumn)
	assert.False(t, errors.Is(err, flow.ErrUserPanic))
}

// TestParseThenSum chains both functions as the pipeline does: raw lines are parsed, keyed by
// user and summed.
func TestParseThenSum(t *testing.T) {
	parse := flowtest.New(t, "ParseEvents", flowtest.Options{})
	sum := flowtest.New(t, "SumByUser", params)
	var in []flow.Message
	for i, l := range []string{"alice 5", "bob 1", "garbage", "alice 10", "bob 2", "alice -1"} {
		m := raw(l)
		m.EventTimestamp = uint64(i+1) * sec
		in = append(in, m)
	}
	parsed := parse.Run(flowtest.Epoch{Messages: in})
	byID := map[string]flow.Message{}
	for _, inv := range parsed.Invocations {
		for _, m := range inv.Messages {
			byID[m.MessageID] = m
		}
	}
	var events []flow.Message
	for _, o := range parsed.Outputs {
		// The event inherits the event time of its only parent, as a swift map output does.
		parent := byID[o.ParentIDs[0]]
		events = append(events, event(o.Payload["user"].(string), o.Payload["amount"].(int64), parent.EventTimestamp))
	}
	sum.Run(flowtest.Epoch{Messages: events})
	// The sessions' timers fire early (their sessions grew) and are re-armed at the sessions'
	// ends, which the watermark has passed too: they flush in the next epoch.
	r := sum.Run(flowtest.Epoch{Watermark: 3600 * sec})
	assert.Empty(t, r.Payloads("totals"))
	r = sum.Run(flowtest.Epoch{Watermark: 3600 * sec})
	assert.ElementsMatch(t, []flow.Row{
		{"user": "alice", "total": int64(14), "events": int64(3)},
		{"user": "bob", "total": int64(3), "events": int64(2)},
	}, r.Payloads("totals"))
	assert.Empty(t, sum.PendingTimers())
}

// FuzzParseEvent checks that an accepted line has a non-empty user without whitespace and that
// the canonical form of what was parsed parses back to the same event.
func FuzzParseEvent(f *testing.F) {
	for _, s := range []string{"alice 5", "bob -3", "alice", " a 1", "a  1", "a +07", "ü 9223372036854775807", "a\u00a0b 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		user, amount, ok := parseEvent(data)
		if !ok {
			return
		}
		if user == "" || strings.ContainsFunc(user, unicode.IsSpace) {
			t.Fatalf("parseEvent(%q) accepted user %q", data, user)
		}
		u2, a2, ok2 := parseEvent(user + " " + strconv.FormatInt(amount, 10))
		if !ok2 || u2 != user || a2 != amount {
			t.Fatalf("parseEvent(%q) = %q, %d; its canonical form parses to %q, %d, %v", data, user, amount, u2, a2, ok2)
		}
	})
}

func TestSumByUserEmitsRunning(t *testing.T) {
	h := flowtest.New(t, "SumByUser", flowtest.Options{Parameters: flow.Row{"session_gap_seconds": int64(60), "emit_running": true}})
	r := h.Run(flowtest.Epoch{Now: 30 * sec, Messages: []flow.Message{
		event("alice", 5, 1*sec), event("bob", 7, 10*sec), event("alice", 3, 20*sec),
	}})
	assert.ElementsMatch(t, []flow.Row{
		{"user": "alice", "total": int64(5), "events": int64(1)},
		{"user": "alice", "total": int64(8), "events": int64(2)},
		{"user": "bob", "total": int64(7), "events": int64(1)},
	}, r.Payloads("running"))
	var alice []int64
	for _, o := range r.Outputs {
		if o.StreamID == "running" && o.Payload["user"] == "alice" {
			alice = append(alice, o.Payload["total"].(int64))
			require.Len(t, o.ParentIDs, 1, "a running row descends from its event")
		}
	}
	assert.Equal(t, []int64{5, 8}, alice, "a user's running rows follow its events in order")
	assert.Empty(t, r.Payloads("totals"), "the session total still waits for the flush")

	// Bob's timer flushes; alice's fires early (her session grew) and is re-armed at its end,
	// which flushes in the next epoch.
	r = h.Run(flowtest.Epoch{Watermark: 1000 * sec})
	assert.Equal(t, []flow.Row{{"user": "bob", "total": int64(7), "events": int64(1)}}, r.Payloads("totals"))
	r = h.Run(flowtest.Epoch{Watermark: 1000 * sec})
	assert.Equal(t, []flow.Row{{"user": "alice", "total": int64(8), "events": int64(2)}}, r.Payloads("totals"))
	assert.Empty(t, r.Payloads("running"), "a flush is no event")
}

func TestSumByUserCountsPreAggregates(t *testing.T) {
	h := flowtest.New(t, "SumByUser", params)
	m := event("erin", 12, sec)
	m.Payload["events"] = int64(3)
	h.Run(flowtest.Epoch{Messages: []flow.Message{m, event("erin", 1, 2*sec)}})
	s, _ := flowtest.Get[Session](h, key("erin"), "session")
	assert.Equal(t, Session{Total: 13, Events: 4, LastEventTime: 2 * sec}, s, "a pre-aggregate counts as the events it sums")

	for _, bad := range []any{int64(0), "3"} {
		m := event("frank", 1, sec)
		m.Payload["events"] = bad
		_, err := h.TryRun(flowtest.Epoch{Messages: []flow.Message{m}})
		assert.ErrorIs(t, err, flow.ErrColumn, "events = %v", bad)
	}
}

// batch is a raw message of the single bucket key the batch tests use.
func batch(data string) flow.Message {
	return flowtest.Msg("raw", flow.Key{int64(0)}, flow.Row{"data": data})
}

func TestSumBatchByUser(t *testing.T) {
	h := flowtest.New(t, "SumBatchByUser", flowtest.Options{})
	in := []flow.Message{batch("alice 5"), batch("bob 1"), batch("garbage"), batch("alice 10"), batch("bob 2"), batch("carol 4"), batch("alice -1")}
	r := h.Run(flowtest.Epoch{Messages: in})
	assert.Equal(t, []flow.Row{
		{"user": "alice", "amount": int64(14), "events": int64(3)},
		{"user": "bob", "amount": int64(3), "events": int64(2)},
		{"user": "carol", "amount": int64(4), "events": int64(1)},
	}, r.Payloads("events"), "one pre-aggregate per user, in order of first appearance")
	ids := func(idx ...int) []string {
		var out []string
		for _, i := range idx {
			out = append(out, r.Invocations[0].Messages[i].MessageID)
		}
		return out
	}
	require.Len(t, r.Invocations, 1)
	require.Len(t, r.Outputs, 3)
	assert.ElementsMatch(t, ids(0, 3, 6), r.Outputs[0].ParentIDs, "an aggregate's parents are exactly the lines it sums")
	assert.ElementsMatch(t, ids(1, 4), r.Outputs[1].ParentIDs)
	assert.ElementsMatch(t, ids(5), r.Outputs[2].ParentIDs)
	assert.Empty(t, h.Keys(), "stateless")
	assert.Empty(t, h.PendingTimers())
}

// TestSumBatchByUserThenSum: however the lines are cut into batches, SumByUser over the
// pre-aggregates ends with the totals of summing every line once.
func TestSumBatchByUserThenSum(t *testing.T) {
	lines := []string{"alice 5", "bob 1", "garbage", "alice 10", "bob 2", "alice -1", "carol 7", "bob 4"}
	for _, cut := range [][]int{{8}, {1, 1, 1, 1, 1, 1, 1, 1}, {3, 5}, {2, 2, 4}} {
		pre := flowtest.New(t, "SumBatchByUser", flowtest.Options{})
		sum := flowtest.New(t, "SumByUser", params)
		next := 0
		for _, n := range cut {
			var in []flow.Message
			for _, l := range lines[next : next+n] {
				in = append(in, batch(l))
			}
			next += n
			r := pre.Run(flowtest.Epoch{Messages: in})
			var events []flow.Message
			for _, o := range r.Outputs {
				m := event(o.Payload["user"].(string), o.Payload["amount"].(int64), sec)
				m.Payload["events"] = o.Payload["events"]
				events = append(events, m)
			}
			sum.Run(flowtest.Epoch{Messages: events})
		}
		r := sum.Run(flowtest.Epoch{Watermark: 3600 * sec})
		assert.ElementsMatch(t, []flow.Row{
			{"user": "alice", "total": int64(14), "events": int64(3)},
			{"user": "bob", "total": int64(7), "events": int64(3)},
			{"user": "carol", "total": int64(7), "events": int64(1)},
		}, r.Payloads("totals"), "batches %v", cut)
	}
}
