// Package sessions holds the process functions of the sessions example (examples/sessions,
// whose README.md gives the stream schemas): ParseEvents turns raw lines into events,
// SumByUser sums the amounts per user and flushes the total once the user has been idle for a
// session gap of event time, and SumBatchByUser is a swift batch alternative to ParseEvents
// that pre-aggregates the lines of one batch per user (it needs relaxed batching);
// SessionWindow (window.go) is an event-time session window splitting a user's events by their
// event times. Importing the package registers all four under those names.
package sessions

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/ytflow/yt-flow/flow"
)

func init() {
	flow.Register("ParseEvents", flow.PerMessage(ParseEvents))
	flow.Register("SumByUser", flow.Process{OnMessage: AddEvent, OnTimer: Flush})
	flow.Register("SumBatchByUser", flow.Batch(SumBatchByUser))
}

// ParseEvents parses the data column of a raw message, "<user> <amount>" (a user name without
// whitespace, one space, a decimal int64), into one events row {user; amount}. A malformed line
// produces nothing. The output's only parent is its raw message, whose event time it inherits:
// the function is deterministic, as a swift map must be.
func ParseEvents(ctx *flow.Context, msg *flow.Message) error {
	data, err := flow.Column[string](msg.Payload, "data")
	if err != nil {
		return err
	}
	if user, amount, ok := parseEvent(data); ok {
		ctx.AddMessage("events", flow.Row{"user": user, "amount": amount})
	}
	return nil
}

func parseEvent(data string) (user string, amount int64, ok bool) {
	user, num, found := strings.Cut(data, " ")
	if !found || user == "" || strings.ContainsFunc(user, unicode.IsSpace) {
		return "", 0, false
	}
	amount, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return "", 0, false
	}
	return user, amount, true
}

// SumBatchByUser parses the data column of every raw message of the invocation like
// ParseEvents and emits, per user, one events row {user; amount; events} holding the sum of that
// user's amounts and the number of lines summed, in the order users first appear. The row's
// parents are exactly the messages it sums, so it needs allow_batching_with_relaxed_guarantees
// whenever a user has several lines in one invocation; malformed lines produce nothing. The
// function is deterministic for a given set of messages, as a swift map must be, but the sets
// depend on how the runtime cuts batches: after a restart a line may be summed again in
// another composition (at-least-once downstream, see README.md).
func SumBatchByUser(ctx *flow.Context, msgs []flow.Message) error {
	type agg struct {
		amount, events int64
		parents        []string
	}
	byUser := map[string]*agg{}
	var users []string
	for i := range msgs {
		data, err := flow.Column[string](msgs[i].Payload, "data")
		if err != nil {
			return err
		}
		user, amount, ok := parseEvent(data)
		if !ok {
			continue
		}
		a := byUser[user]
		if a == nil {
			a = &agg{}
			byUser[user] = a
			users = append(users, user)
		}
		a.amount += amount
		a.events++
		a.parents = append(a.parents, msgs[i].MessageID)
	}
	for _, user := range users {
		a := byUser[user]
		sort.Strings(a.parents)
		ctx.WithParentIDs(a.parents...).AddMessage("events", flow.Row{"user": user, "amount": a.amount, "events": a.events})
	}
	return nil
}

// Session is the state "session" of one user.
type Session struct {
	Total  int64 `yson:"total"`
	Events int64 `yson:"events"`
	// LastEventTime is the latest event time seen, in microseconds.
	LastEventTime uint64 `yson:"last_event_time"`
}

// Params are SumByUser's processing_function_parameters.
type Params struct {
	// SessionGapSeconds is the event-time idle gap after which a user's session is flushed;
	// it must be positive.
	SessionGapSeconds int64 `yson:"session_gap_seconds"`
	// EmitRunning, when true, makes SumByUser also emit, for every events message, the user's
	// running values {user; total; events} after it to stream running (which the computation
	// must then list in output_stream_ids).
	EmitRunning bool `yson:"emit_running"`
}

// paramsOf returns the parameters with the gap in microseconds.
func paramsOf(ctx *flow.Context) (Params, uint64, error) {
	p, err := flow.ParamsOf[Params](ctx)
	if err != nil {
		return p, 0, err
	}
	if p.SessionGapSeconds <= 0 {
		return p, 0, fmt.Errorf("parameter session_gap_seconds = %d: %w: must be positive", p.SessionGapSeconds, flow.ErrBadParameters)
	}
	return p, uint64(p.SessionGapSeconds) * 1_000_000, nil
}

// userOf returns the user of the key [hash, user].
func userOf(key flow.Key) (string, error) {
	if len(key) == 2 {
		if user, ok := key[1].(string); ok {
			return user, nil
		}
	}
	return "", fmt.Errorf("key %v: want [hash uint64, user string]", key)
}

// AddEvent is SumByUser's message handler: it adds the event's amount to the user's session,
// moves the session's last event time forward (an event without event time counts at its
// system time) and, when the event opens a session, sets a flush timer at its time + gap.
// Later events only move the session's end in state: the timer is re-armed when it fires
// early (see Flush), so a busy user costs one timer per session, not one per event. An events row with an events column stands for that many events (a
// SumBatchByUser pre-aggregate); without it, for one. With emit_running it then emits the
// session's running {user; total; events} to stream running.
func AddEvent(ctx *flow.Context, msg *flow.Message) error {
	p, gap, err := paramsOf(ctx)
	if err != nil {
		return err
	}
	amount, err := flow.Column[int64](msg.Payload, "amount")
	if err != nil {
		return err
	}
	events := int64(1)
	if v, ok := msg.Payload["events"]; ok && v != nil {
		if events, err = flow.Column[int64](msg.Payload, "events"); err != nil {
			return err
		}
		if events < 1 {
			return fmt.Errorf("column \"events\" = %d: %w: an events row stands for at least one event", events, flow.ErrColumn)
		}
	}
	at := msg.EventTimestamp
	if at == 0 {
		at = msg.SystemTimestamp
	}
	state := flow.StateOf[Session](ctx, "session")
	s, open := state.Get()
	s.Total += amount
	s.Events += events
	s.LastEventTime = max(s.LastEventTime, at)
	state.Set(s)
	if !open {
		ctx.AddTimer("flush", s.LastEventTime+gap, nil)
	}
	if p.EmitRunning {
		user, err := userOf(ctx.Key())
		if err != nil {
			return err
		}
		ctx.AddMessage("running", flow.Row{"user": user, "total": s.Total, "events": s.Events})
	}
	return nil
}

// Flush is SumByUser's timer handler. A timer that fires before the session's end (events
// extended it after the timer was set) is re-armed at the end; otherwise it emits
// {user; total; events} to stream totals and clears the session. A timer of a session
// already flushed does nothing.
func Flush(ctx *flow.Context, t *flow.Timer) error {
	_, gap, err := paramsOf(ctx)
	if err != nil {
		return err
	}
	user, err := userOf(ctx.Key())
	if err != nil {
		return err
	}
	state := flow.StateOf[Session](ctx, "session")
	s, open := state.Get()
	if !open {
		return nil
	}
	if end := s.LastEventTime + gap; t.Trigger < end {
		ctx.AddTimer("flush", end, nil)
		return nil
	}
	ctx.AddMessage("totals", flow.Row{"user": user, "total": s.Total, "events": s.Events})
	state.Clear()
	return nil
}
