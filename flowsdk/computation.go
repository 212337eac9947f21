package flowsdk

import (
	"context"
	"fmt"

	"github.com/ytflow/yt-flow/flow"
)

// RowFunction handles input messages one at a time. A function may also implement
// RowTimerFunction (and RowVisitFunction, never called here: yt-flow has no key visitors yet).
type RowFunction interface {
	OnMessage(ctx context.Context, rt Runtime, msg ExtendedMessage, out OutputCollector) error
}

// RowTimerFunction handles a due timer of the key.
type RowTimerFunction interface {
	OnTimer(ctx context.Context, rt Runtime, timer Timer, out OutputCollector) error
}

// RowVisitFunction handles a key visitor's visit. yt-flow does not support key visitors yet:
// a spec with key_visitor_streams is refused by start and run, so OnVisit is never called.
type RowVisitFunction interface {
	OnVisit(ctx context.Context, rt Runtime, visit Visit, out OutputCollector) error
}

// BatchFunction handles all messages of one key in one epoch at once. A function may also
// implement BatchTimerFunction (and BatchVisitFunction, never called).
type BatchFunction interface {
	OnMessages(ctx context.Context, rt Runtime, msgs []ExtendedMessage, out OutputCollector) error
}

// BatchTimerFunction handles due timers of the key: yt-flow calls OnTimers once per timer (a
// slice of one), so each output names its timer as the parent.
type BatchTimerFunction interface {
	OnTimers(ctx context.Context, rt Runtime, timers []Timer, out OutputCollector) error
}

// BatchVisitFunction handles visits in batches; never called here (see RowVisitFunction).
type BatchVisitFunction interface {
	OnVisits(ctx context.Context, rt Runtime, visits []Visit, out OutputCollector) error
}

// RowFunc is a RowFunction made of a plain function.
type RowFunc func(ctx context.Context, rt Runtime, msg ExtendedMessage, out OutputCollector) error

// OnMessage calls f.
func (f RowFunc) OnMessage(ctx context.Context, rt Runtime, msg ExtendedMessage, out OutputCollector) error {
	return f(ctx, rt, msg, out)
}

// BatchFunc is a BatchFunction made of a plain function.
type BatchFunc func(ctx context.Context, rt Runtime, msgs []ExtendedMessage, out OutputCollector) error

// OnMessages calls f.
func (f BatchFunc) OnMessages(ctx context.Context, rt Runtime, msgs []ExtendedMessage, out OutputCollector) error {
	return f(ctx, rt, msgs, out)
}

// Computation binds a computation id to its function. Which kind it is (transform, swift map,
// source) is the spec's computation_class_name, as in Flow; the source constructors only say
// the function reads source rows.
type Computation struct {
	id     string
	row    RowFunction
	batch  BatchFunction
	source bool
}

// NewRowComputation binds a per-message function to computation id. It panics on a nil fn.
func NewRowComputation(id string, fn RowFunction) *Computation {
	return newComputation(id, fn, nil, false)
}

// NewBatchComputation binds a per-batch function to computation id. It panics on a nil fn.
func NewBatchComputation(id string, fn BatchFunction) *Computation {
	return newComputation(id, nil, fn, false)
}

// NewRowSourceComputation binds a per-row function to source computation id.
func NewRowSourceComputation(id string, fn RowFunction) *Computation {
	return newComputation(id, fn, nil, true)
}

// NewBatchSourceComputation binds a per-batch function to source computation id.
func NewBatchSourceComputation(id string, fn BatchFunction) *Computation {
	return newComputation(id, nil, fn, true)
}

func newComputation(id string, row RowFunction, batch BatchFunction, source bool) *Computation {
	if row == nil && batch == nil {
		panic(fmt.Sprintf("flowsdk: computation %q: nil function", id))
	}
	return &Computation{id: id, row: row, batch: batch, source: source}
}

// ID returns the computation id.
func (c *Computation) ID() string { return c.id }

func extended(m *flow.Message) ExtendedMessage {
	return ExtendedMessage{
		ID: m.MessageID, StreamID: m.StreamID, Key: m.Key,
		EventTimestamp: m.EventTimestamp, SystemTimestamp: m.SystemTimestamp,
		Payload: Payload{row: m.Payload},
	}
}

func timerOf(t *flow.Timer) Timer {
	return Timer{ID: t.MessageID, StreamID: t.StreamID, Key: t.Key, TriggerTimestamp: t.Trigger, EventTimestamp: t.EventTimestamp}
}

// function is the process function registered under the computation id: a flow.Process whose
// handlers call the SDK handlers with a Runtime and an OutputCollector over the flow.Context.
// Handlers get a background context: yt-flow's functions have no request context.
func (c *Computation) function() flow.Process {
	rt := func(ctx *flow.Context) *runtime { return &runtime{id: c.id, ctx: ctx, info: infoOf(c.id)} }
	wrap := func(handler string, err error) error {
		if err != nil {
			return fmt.Errorf("computation %q: %s: %w", c.id, handler, err)
		}
		return nil
	}
	var p flow.Process
	if c.row != nil {
		p.OnMessage = func(ctx *flow.Context, m *flow.Message) error {
			return wrap("OnMessage", c.row.OnMessage(context.Background(), rt(ctx), extended(m), collector{ctx}))
		}
		if tf, ok := c.row.(RowTimerFunction); ok {
			p.OnTimer = func(ctx *flow.Context, t *flow.Timer) error {
				return wrap("OnTimer", tf.OnTimer(context.Background(), rt(ctx), timerOf(t), collector{ctx}))
			}
		}
		return p
	}
	p.OnMessages = func(ctx *flow.Context, ms []flow.Message) error {
		msgs := make([]ExtendedMessage, len(ms))
		for i := range ms {
			msgs[i] = extended(&ms[i])
		}
		return wrap("OnMessages", c.batch.OnMessages(context.Background(), rt(ctx), msgs, collector{ctx}))
	}
	if tf, ok := c.batch.(BatchTimerFunction); ok {
		p.OnTimer = func(ctx *flow.Context, t *flow.Timer) error {
			return wrap("OnTimers", tf.OnTimers(context.Background(), rt(ctx), []Timer{timerOf(t)}, collector{ctx}))
		}
	}
	return p
}
