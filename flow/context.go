package flow

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
)

// Context is what a handler sees of its invocation: the key, parameters and time, the output
// collector, and the key's state (see StateOf).
//
// A Context is valid only while the handler that received it runs. It is not safe for
// concurrent use: the runtime calls the handlers of one invocation one after another.
type Context struct {
	inv     *Invocation
	run     *run
	parents []string // nil = default lineage of the handler's inputs
	eventTS uint64   // 0 = derived by the runtime
}

// run is the part of an invocation shared by a Context and every Context derived from it.
type run struct {
	res Result
	// inline holds the first states used (inlined of them), states any further ones.
	inline  [inlineSlots]namedSlot
	inlined int
	states  map[string]*stateSlot
	ext     map[string]*extSlot  // external states written (ExternalStateOf)
	err     error                // first misuse or bad state; fails the invocation
	inputs  map[string]bool      // ids of the invocation's messages and timers, built on first use
	params  map[reflect.Type]any // decoded parameters by type (see ParamsOf)
	// spareWrites is an empty map left by a released Result (Result.Release), used for
	// res.StateWrites when the invocation writes states.
	spareWrites map[string][]byte
	// block is what is left of the block that encoded scalar states are cut from
	// (encodeScalar); the bytes before its length were handed out and are never written again.
	block []byte
}

// invocation is a Context with its run and a Context for the handlers, allocated together,
// with room for the first output and the parent id of a one-message invocation (most
// invocations of a per-message function emit one output or a few): the result points into
// the invocation anyway, so these cost no allocation of their own.
type invocation struct {
	ctx       Context
	handler   Context
	run       run
	firstOut  [1]Output
	oneParent [1]string
	// outs and parents are the Outputs array and the per-message parent ids of an earlier
	// invocation, kept by Release (cleared: zero past their length) so that a recycled
	// invocation with several outputs or messages does not allocate them again.
	outs    []Output
	parents []string
}

// invocations recycles the invocations of released Results (Result.Release): an epoch
// invokes once per source row or key, and most invocations are small.
var invocations = sync.Pool{New: func() any { return new(invocation) }}

// newInvocation returns a zero invocation (a recycled one when a Result was released) set up
// for inv.
func newInvocation(inv *Invocation) *invocation {
	iv := invocations.Get().(*invocation)
	iv.ctx = Context{inv: inv, run: &iv.run}
	if iv.outs != nil {
		iv.run.res.Outputs = iv.outs[:0]
	} else {
		iv.run.res.Outputs = iv.firstOut[:0:1]
	}
	iv.run.res.iv = iv
	return iv
}

// handlerContext is the Context for one handler call with default lineage ids (nil = all
// inputs). There is one per invocation: a Context is valid only while its handler runs, so
// each call reuses it.
func (iv *invocation) handlerContext(ids []string) *Context {
	iv.handler = iv.ctx
	iv.handler.parents = ids
	return &iv.handler
}

// Key returns the invocation's key; nil in source computations.
func (c *Context) Key() Key { return c.inv.Key }

// Parameters returns the processing function parameters (static merged with dynamic). The row
// belongs to the runtime: do not modify it. See ParamsOf for a typed view.
func (c *Context) Parameters() Row { return c.inv.Parameters }

// Now returns the epoch's time in microseconds since the epoch, as supplied by the runtime.
// It is the clock transform computations may read (their epoch commits one attempt). Swift
// computations must not let outputs depend on it: a recomputation after a restart runs in a
// later epoch and sees another Now, so its outputs would differ from the first attempt's; use
// message and timer timestamps there.
func (c *Context) Now() uint64 { return c.inv.Now }

// AddMessage adds an output message with the given payload to stream. Its lineage is the
// Context's parents: by default the message being processed (per-message handlers), the timer
// (timer handlers) or the whole batch (batch handlers). AddMessage takes ownership of payload:
// do not modify the row afterwards.
func (c *Context) AddMessage(stream string, payload Row) {
	c.run.res.Outputs = append(c.run.res.Outputs, Output{
		StreamID:       stream,
		Payload:        payload,
		ParentIDs:      c.parents,
		EventTimestamp: c.eventTS,
	})
}

// AddTimer sets a timer for the invocation's key on the timer stream; it fires once the stream's
// governing time reaches trigger (microseconds), and its handler gets payload (which may be nil)
// back. The timer carries the Context's event timestamp, if one was set.
func (c *Context) AddTimer(stream string, trigger uint64, payload Row) {
	c.run.res.Timers = append(c.run.res.Timers, Timer{
		StreamID:       stream,
		Key:            c.inv.Key,
		Trigger:        trigger,
		Payload:        payload,
		EventTimestamp: c.eventTS,
	})
}

// WithParentIDs returns a Context whose outputs have exactly the given parents, which must be ids
// of the invocation's messages or due timers (the invocation fails with ErrUnknownParent
// otherwise). With no ids, outputs go back to having all inputs of the invocation as parents.
// State accessed through either Context is the same.
func (c *Context) WithParentIDs(ids ...string) *Context {
	for _, id := range ids {
		if !c.isInput(id) {
			c.fail(fmt.Errorf("WithParentIDs(%q): %w", id, ErrUnknownParent))
		}
	}
	d := *c
	d.parents = slices.Clone(ids)
	return &d
}

// WithEventTimestamp returns a Context whose outputs and timers carry the event timestamp ts
// (microseconds) instead of the one derived from their parents.
func (c *Context) WithEventTimestamp(ts uint64) *Context {
	d := *c
	d.eventTS = ts
	return &d
}

func (c *Context) isInput(id string) bool {
	r := c.run
	if r.inputs == nil {
		r.inputs = make(map[string]bool, len(c.inv.Messages)+len(c.inv.Timers))
		for i := range c.inv.Messages {
			r.inputs[c.inv.Messages[i].MessageID] = true
		}
		for i := range c.inv.Timers {
			if id := c.inv.Timers[i].MessageID; id != "" {
				r.inputs[id] = true
			}
		}
	}
	return r.inputs[id]
}

// fail records the first error of the invocation; the invocation then fails even if the handler
// returns nil.
func (c *Context) fail(err error) {
	if c.run.err == nil {
		c.run.err = err
	}
}

// result finishes the invocation: the first recorded error, or the outputs, timers and changed
// states.
func (c *Context) result() (*Result, error) {
	r := c.run
	if r.err != nil {
		return nil, r.err
	}
	res := &r.res
	if len(res.Outputs) == 0 {
		res.Outputs = nil // the inline slot unused: no outputs, as before any AddMessage
	}
	// Invariant: StateWrites holds exactly the changed states, deletions as nil
	// (TestStateGetSetClear, TestStateEmptyIsAbsent, TestStateUnchangedIsNotWritten).
	r.eachSlot(c.flush)
	if r.err != nil {
		return nil, r.err
	}
	r.eachSlot(func(name string, s *stateSlot) {
		if !s.changed() {
			return
		}
		if res.StateWrites == nil {
			if res.StateWrites = r.spareWrites; res.StateWrites == nil {
				res.StateWrites = make(map[string][]byte, 1)
			}
			r.spareWrites = nil
		}
		res.StateWrites[name] = s.cur
	})
	res.ExternalWrites, res.ExternalRowWrites = r.externalWrites()
	return res, nil
}

// AcquireQuota asks the pipeline's distributed throttler throttlerID (a throttler of the
// dynamic spec's throttlers) for amount units and blocks until the controller granted them to
// the job, ctx is done or the job stops; then the units are the job's, taken from the
// throttler's bucket, which every job of the pipeline shares (Flow's GetThrottlerOrThrow and
// Acquire). amount ≤ 0 returns nil at once.
//
// It returns an error wrapping ErrNoThrottler when the dynamic spec has no such throttler or
// the runtime has none (flowtest's harness), and ctx's error when ctx ends first. An
// invocation usually returns the error, which fails its epoch (retried). Quota is not part of
// the epoch's transaction: units taken by an invocation whose epoch is not applied stay taken,
// and the retried invocation asks again.
func (c *Context) AcquireQuota(ctx context.Context, throttlerID string, amount int64) error {
	if amount <= 0 {
		return nil
	}
	if c.inv.Quota == nil {
		return fmt.Errorf("throttler %q: %w", throttlerID, ErrNoThrottler)
	}
	return c.inv.Quota(ctx, throttlerID, amount)
}
