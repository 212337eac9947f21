package flow

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Row is one payload: column name to a YSON-compatible Go value (int64, uint64, float64, bool,
// string, []byte, nil, or a composite of lists and maps).
type Row map[string]any

// Key holds the group-by key values of a keyed computation, in group_by_schema column order,
// computed columns included. It is nil for source computations, whose state is per partition.
type Key []any

// Message is one input message of an invocation.
type Message struct {
	// StreamID names the stream the message belongs to.
	StreamID string
	// MessageID is unique; for one producer, string order equals production order.
	MessageID string
	// Key is the message's group-by key in this computation (nil for source messages).
	Key Key
	// Payload holds the message columns. A handler reads it and must not change it: the
	// runtime may process the same message again (an epoch that did not commit), and a
	// producer in the same process may have handed its own row over. To emit a changed copy,
	// copy it first.
	Payload Row
	// EventTimestamp is the business time in microseconds since the epoch; 0 means unknown.
	EventTimestamp uint64
	// SystemTimestamp is the creation time in microseconds since the epoch.
	SystemTimestamp uint64
}

// Timer is a per-key delayed call. In Invocation.Timers it is a timer that is due; in
// Result.Timers it is a timer to set.
type Timer struct {
	// StreamID names the timer stream, one of the computation's timer_streams.
	StreamID string
	// Key is the key the timer belongs to. For timers set through a Context it is the
	// invocation's key.
	Key Key
	// Trigger is the time in microseconds at which the timer fires, once the governing time
	// of its stream (event watermark, system watermark or wall clock) reaches it.
	Trigger uint64
	// Payload is optional user data handed back when the timer fires.
	Payload Row
	// MessageID identifies a due timer; the runtime assigns it, and outputs of the timer
	// handler name it as their parent. It is ignored in Result.Timers.
	MessageID string
	// EventTimestamp is the event time carried by the timer, in microseconds; 0 lets the
	// runtime derive it from the lineage (the minimum over the parents).
	EventTimestamp uint64
	// Visit marks a due timer that is a key visitor's visit of its key (key_visitor_streams):
	// StreamID is the key visitor stream, Trigger the start of the visitor's pass (µs) and
	// Pass its number. Process hands it to OnVisit, not OnTimer.
	Visit bool
	Pass  uint64
}

// Output is one message produced by an invocation.
type Output struct {
	// StreamID is the output stream.
	StreamID string
	// Payload holds the output columns.
	Payload Row
	// ParentIDs narrows the lineage to these input message or timer ids; empty means all
	// inputs of the invocation.
	ParentIDs []string
	// EventTimestamp is the output's event time in microseconds; 0 lets the runtime derive it
	// from the parents (their minimum).
	EventTimestamp uint64
}

// Invocation is what the runtime hands to a Function: one key (nil for source or partition
// level) within one epoch. Timers come first, then messages, exactly as the runtime passes them.
type Invocation struct {
	// Key is the key of all timers and messages of the invocation.
	Key Key
	// Timers are the due timers of this key.
	Timers []Timer
	// Messages are the input messages of this key, in arrival order.
	Messages []Message
	// State maps a state name to its YSON bytes as stored; an absent name means no state.
	// The function must not modify it.
	State map[string][]byte
	// External maps an external state name ("/totals", of external_state_managers) to the row
	// its table holds for the invocation's key, as the epoch read it; an absent name means no
	// row. The function must not modify it. See ExternalStateOf.
	External map[string]Row
	// ExternalRows maps an external state whose table has several rows per key (further key
	// columns after the group_by_schema ones) to the rows the table holds for the key, and
	// ExternalSubKeys such a state to its further key columns (for every invocation of the
	// epoch, rows or not). The function must not modify them. See External.Rows.
	ExternalRows    map[string][]Row
	ExternalSubKeys map[string][]string
	// Joined reads the states of the computation's state joiners (nil when it has none).
	// See JoinedStateOf.
	Joined Joiner
	// Parameters are the processing_function_parameters (static merged with dynamic).
	Parameters Row
	// Now is the current time in microseconds, supplied by the runtime. User code reads the
	// time only from here, never from the clock.
	Now uint64
	// Quota is the runtime's distributed throttlers (Context.AcquireQuota); nil: none.
	Quota QuotaFunc
}

// QuotaFunc asks the pipeline's distributed throttler throttlerID (dynamic_spec throttlers)
// for amount units for the job and blocks until they are granted, ctx is done or the job
// stops. See Context.AcquireQuota.
type QuotaFunc func(ctx context.Context, throttlerID string, amount int64) error

// Result is what one invocation produced.
type Result struct {
	// Outputs are the output messages in the order they were added.
	Outputs []Output
	// Timers are the new timers to set.
	Timers []Timer
	// StateWrites holds the changed states only: name to new YSON bytes; a nil value means the
	// state was cleared and its row is deleted.
	StateWrites map[string][]byte
	// ExternalWrites holds the changed external states only: name to the key's new row; a
	// nil row means the row is deleted. The runtime fills the key columns from the key.
	ExternalWrites map[string]Row
	// ExternalRowWrites holds the changes of external states with several rows per key, by
	// state: upserted rows and deleted ones (their further key columns), in row order.
	ExternalRowWrites map[string][]RowWrite

	// iv is the invocation whose memory holds this Result (a Result made by Process), nil for
	// a Result made elsewhere. See Release.
	iv *invocation
}

// Release hands the memory of a Result made by Process back for later invocations; a Result
// made elsewhere is left alone. The caller must not use r, its Outputs or Timers slices or
// the ParentIDs slices of its outputs afterwards: a later invocation reuses them. What they
// referred to stays valid (payload rows, parent id strings, the bytes of StateWrites): only
// the Result's own memory is reused. A runtime releases an epoch's results once it has built
// its write set from them (copying out what it keeps).
func (r *Result) Release() {
	if r == nil || r.iv == nil {
		return
	}
	iv := r.iv
	writes, spare, block := r.StateWrites, iv.run.spareWrites, iv.run.block
	// The arrays kept are zero past their length: append writes only there, and each use is
	// cleared here.
	outs := iv.outs
	switch c := cap(r.Outputs); {
	case c > 1 && c <= maxSpare:
		clear(r.Outputs)
		outs = r.Outputs[:0] // the next invocation's Outputs, if it adds several
	case c > maxSpare:
		clear(outs[:cap(outs)]) // filled before the Outputs outgrew it
	}
	parents := iv.parents
	clear(parents)
	if cap(parents) > maxSpare {
		parents = nil
	}
	*iv = invocation{}
	if writes != nil && len(writes) <= maxSpareWrites {
		clear(writes)
		spare = writes // the next invocation's StateWrites, if it writes any
	}
	// A spare map this invocation did not take (it wrote no state) stays for the next one.
	iv.run.spareWrites, iv.run.block, iv.outs, iv.parents = spare, block, outs, parents[:0]
	invocations.Put(iv)
}

const (
	// maxSpareWrites bounds the StateWrites map a released invocation keeps for the next one.
	maxSpareWrites = 8
	// maxSpare bounds the Outputs and parent id arrays a released invocation keeps.
	maxSpare = 64
)

// Function is a process function as stored by Register and called by the runtime.
//
// Invoke must not retain inv or anything reachable from it after it returns. It recovers a panic
// in user code into an error wrapping ErrUserPanic (with the stack), so that one bad message never
// kills a worker. An error means the invocation produced nothing: the runtime must not apply any
// part of a failed invocation's result.
//
// The runtime may call Invoke concurrently for different invocations (other keys, other
// partitions), so a Function keeps no mutable state of its own: what must survive an invocation
// goes into state.
type Function interface {
	Invoke(inv *Invocation) (*Result, error)
}

var (
	// ErrUnknownFunction is wrapped by Lookup when no function is registered under a name.
	ErrUnknownFunction = errors.New("unknown process function")
	// ErrUserPanic is wrapped by the error of an invocation whose user code panicked.
	ErrUserPanic = errors.New("process function panicked")
	// ErrBadState is wrapped when a state's stored bytes do not decode into the requested type,
	// or a value to store does not encode.
	ErrBadState = errors.New("bad state value")
	// ErrBadParameters is wrapped when the parameters do not decode into the requested type.
	ErrBadParameters = errors.New("bad processing function parameters")
	// ErrColumn is wrapped by Column when a payload column is missing, null or of another type.
	ErrColumn = errors.New("bad column")
	// ErrNoHandler is wrapped when an invocation carries timers or messages that the function
	// has no handler for (a spec that does not match the function).
	ErrNoHandler = errors.New("no handler")
	// ErrNoThrottler is wrapped by Context.AcquireQuota when the pipeline's dynamic spec has
	// no distributed throttler of that id, or the runtime has no throttlers (a test harness,
	// a pipeline whose job_status predates them).
	ErrNoThrottler = errors.New("no such distributed throttler")
	// ErrUnknownParent is wrapped when WithParentIDs names an id that is not an input of the
	// invocation.
	ErrUnknownParent = errors.New("parent is not an input of the invocation")
)

// String formats the key for errors and logs: its values in order, strings quoted, e.g.
// [12345 "the"].
func (k Key) String() string {
	var b strings.Builder
	b.WriteByte('[')
	for i, v := range k {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch v := v.(type) {
		case string:
			b.WriteString(strconv.Quote(v))
		case []byte:
			b.WriteString(strconv.Quote(string(v)))
		default:
			fmt.Fprint(&b, v)
		}
	}
	b.WriteByte(']')
	return b.String()
}
