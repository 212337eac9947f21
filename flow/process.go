package flow

import (
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"

	"go.ytsaurus.tech/yt/go/yson"
)

// MessageFunc handles one input message. The message is valid only during the call.
type MessageFunc func(ctx *Context, msg *Message) error

// BatchFunc handles all input messages of one key in one epoch at once, in arrival order. The
// slice is valid only during the call.
type BatchFunc func(ctx *Context, msgs []Message) error

// TimerFunc handles one due timer. The timer is valid only during the call.
type TimerFunc func(ctx *Context, t *Timer) error

// VisitFunc handles one visit of a key by a key visitor stream (key_visitor_streams): once per
// key that has state, per pass of the visitor (one pass per period). The key's state is
// there as for a message. The visit is valid only during the call.
type VisitFunc func(ctx *Context, v *Visit) error

// Visit is one visit of a key by a key visitor stream.
type Visit struct {
	// StreamID is the key visitor stream.
	StreamID string
	// Key is the visited key.
	Key Key
	// Pass numbers the visitor's passes over the partition's keys (0, 1, ...); a key is
	// visited once per pass. PassStart is when the pass started (µs).
	Pass, PassStart uint64
	// MessageID identifies the visit: outputs of the handler name it as their parent.
	MessageID string
	// EventTimestamp is the visit's event time (µs): now − max(0, elapsed − scanned
	// fraction × period), so a visitor behind its schedule visits in the past.
	EventTimestamp uint64
}

// Process is a Function assembled from handlers. For each invocation it calls OnTimer for every
// due timer, then either OnMessage for every message or OnMessages once with all of them.
//
// Default lineage: outputs of OnMessage have the message as their parent, outputs of OnTimer the
// timer, outputs of OnMessages all messages of the batch; Context.WithParentIDs narrows it.
//
// An error returned by a handler stops the invocation and is returned wrapped with the key and
// the input being handled; a panic becomes an error wrapping ErrUserPanic. Either way the
// invocation's outputs, timers and state changes are discarded.
type Process struct {
	// OnMessage handles messages one at a time. At most one of OnMessage and OnMessages may be
	// set; with neither, an invocation carrying messages fails with ErrNoHandler.
	OnMessage MessageFunc
	// OnMessages handles all messages of the invocation at once.
	OnMessages BatchFunc
	// OnTimer handles due timers; without it an invocation carrying timers fails with
	// ErrNoHandler.
	OnTimer TimerFunc
	// OnVisit handles the visits of a key visitor stream (Timer.Visit), in the timers' place;
	// without it an invocation carrying visits fails with ErrNoHandler.
	OnVisit VisitFunc
}

// PerMessage returns a Function calling fn for each input message.
func PerMessage(fn MessageFunc) Process { return Process{OnMessage: fn} }

// Batch returns a Function calling fn once per invocation with all input messages of the key.
func Batch(fn BatchFunc) Process { return Process{OnMessages: fn} }

// PerTimer returns a Function calling fn for each due timer.
func PerTimer(fn TimerFunc) Process { return Process{OnTimer: fn} }

// Invoke runs the handlers for one invocation; see Process.
func (p Process) Invoke(inv *Invocation) (res *Result, err error) {
	iv := newInvocation(inv)
	ctx := &iv.ctx
	at := position{timer: -1, message: -1} // what is being handled, for errors
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("key %v: %s: %w", inv.Key, at.describe(inv), &PanicError{Value: r, Stack: debug.Stack()})
		}
	}()
	if p.OnMessage != nil && p.OnMessages != nil {
		return nil, errors.New("flow.Process: both OnMessage and OnMessages are set")
	}
	for i := range inv.Timers {
		t := &inv.Timers[i]
		if t.Visit && p.OnVisit == nil {
			return nil, fmt.Errorf("key %v: a visit of key visitor stream %q: %w for visits (OnVisit)", inv.Key, t.StreamID, ErrNoHandler)
		}
		if !t.Visit && p.OnTimer == nil {
			return nil, fmt.Errorf("key %v: %d due timers on stream %q: %w for timers", inv.Key, len(inv.Timers), t.StreamID, ErrNoHandler)
		}
	}
	if len(inv.Messages) > 0 && p.OnMessage == nil && p.OnMessages == nil {
		return nil, fmt.Errorf("key %v: %d messages on stream %q: %w for messages", inv.Key, len(inv.Messages), inv.Messages[0].StreamID, ErrNoHandler)
	}

	for i := range inv.Timers {
		at.timer = i
		t := &inv.Timers[i]
		var parents []string
		if t.MessageID != "" {
			parents = []string{t.MessageID}
		}
		if t.Visit {
			v := Visit{StreamID: t.StreamID, Key: t.Key, Pass: t.Pass, PassStart: t.Trigger, MessageID: t.MessageID, EventTimestamp: t.EventTimestamp}
			if err := p.OnVisit(iv.handlerContext(parents), &v); err != nil {
				return nil, fmt.Errorf("key %v: %s: %w", inv.Key, at.describe(inv), err)
			}
			continue
		}
		if err := p.OnTimer(iv.handlerContext(parents), t); err != nil {
			return nil, fmt.Errorf("key %v: %s: %w", inv.Key, at.describe(inv), err)
		}
	}
	at.timer = -1

	switch {
	case len(inv.Messages) == 0:
	case p.OnMessages != nil:
		at.batch = true
		// Outputs default to all inputs of the invocation, unless timers are among them.
		var parents []string
		if len(inv.Timers) > 0 {
			parents = make([]string, len(inv.Messages))
			for i := range inv.Messages {
				parents[i] = inv.Messages[i].MessageID
			}
		}
		if err := p.OnMessages(iv.handlerContext(parents), inv.Messages); err != nil {
			return nil, fmt.Errorf("key %v: %s: %w", inv.Key, at.describe(inv), err)
		}
	default:
		// One parent id slice for all messages.
		ids := iv.oneParent[:]
		if len(inv.Messages) > 1 {
			if cap(iv.parents) < len(inv.Messages) {
				iv.parents = make([]string, 0, len(inv.Messages))
			}
			ids = iv.parents[:len(inv.Messages)]
			iv.parents = ids // cleared by Release
		}
		for i := range inv.Messages {
			at.message = i
			m := &inv.Messages[i]
			ids[i] = m.MessageID
			if err := p.OnMessage(iv.handlerContext(ids[i:i+1:i+1]), m); err != nil {
				return nil, fmt.Errorf("key %v: %s: %w", inv.Key, at.describe(inv), err)
			}
		}
	}

	// Invariant: a failed invocation returns no result, so no part of it can be applied
	// (TestUserErrorNamesKeyAndMessage, TestPanicBecomesErrUserPanic, TestStateDecodeErrorFailsInvocation).
	if res, err = ctx.result(); err != nil {
		return nil, fmt.Errorf("key %v: %w", inv.Key, err)
	}
	return res, nil
}

// position is the input a Process is handling, described only when an error needs it.
type position struct {
	timer, message int // indexes, -1 = none
	batch          bool
}

func (p position) describe(inv *Invocation) string {
	switch {
	case p.timer >= 0:
		t := &inv.Timers[p.timer]
		if t.Visit {
			return fmt.Sprintf("visit %d of key visitor stream %q", t.Pass, t.StreamID)
		}
		return fmt.Sprintf("timer %q at %d", t.StreamID, t.Trigger)
	case p.batch:
		return fmt.Sprintf("batch of %d messages", len(inv.Messages))
	case p.message >= 0:
		return "message " + inv.Messages[p.message].MessageID
	}
	return "finishing"
}

// ParamsOf decodes the processing function parameters into a P (a struct with yson tags, or a
// map). The error wraps ErrBadParameters and names the type. Within one invocation the decoded
// value of a type without references is reused, so calling ParamsOf in every handler is cheap.
func ParamsOf[P any](ctx *Context) (P, error) {
	t := reflect.TypeFor[P]()
	cache := copyable(t)
	if cache {
		if p, ok := ctx.run.params[t]; ok {
			return p.(P), nil
		}
	}
	var p P
	b, err := yson.Marshal(ctx.inv.Parameters)
	if err == nil {
		err = yson.Unmarshal(b, &p)
	}
	if err != nil {
		var zero P
		return zero, fmt.Errorf("decode parameters as %T: %w: %w", p, ErrBadParameters, err)
	}
	if cache {
		if ctx.run.params == nil {
			ctx.run.params = map[reflect.Type]any{}
		}
		ctx.run.params[t] = p
	}
	return p, nil
}
