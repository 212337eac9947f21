package flowtest

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"testing"

	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/flow"
)

var (
	// ErrNondeterministic is wrapped by TryRun when two runs of one invocation differ.
	ErrNondeterministic = errors.New("process function is not deterministic")
	// ErrSwiftRule is wrapped by TryRun when Options.Swift is set and an output does not have
	// exactly one parent, or a timer handler emitted an output.
	ErrSwiftRule = errors.New("swift rule broken")
)

// Options configure a Harness; the zero value is the default.
type Options struct {
	// Parameters are passed as Invocation.Parameters.
	Parameters flow.Row
	// AllowNondeterminism turns off running each invocation twice and comparing the results.
	AllowNondeterminism bool
	// Swift checks the rules of swift stages: every output has exactly one parent (an output
	// without explicit parents counts all inputs of its invocation), and no output descends
	// from a timer.
	Swift bool
}

// Epoch is one scripted epoch.
type Epoch struct {
	// Now is the epoch's time in microseconds; 0 keeps the previous epoch's.
	Now uint64
	// Watermark is the governing time of the timer streams in microseconds: timers whose
	// trigger is at or below it fire in this epoch. It never goes back: a lower value (or 0)
	// keeps the previous one.
	Watermark uint64
	// StreamWatermarks overrides Watermark for single timer streams (say a system_time stream
	// next to event_time ones). Each also only moves forward.
	StreamWatermarks map[string]uint64
	// Messages are the input messages in arrival order. An empty MessageID is filled with a
	// unique id in production order, a zero SystemTimestamp with Now. Messages with an empty
	// key are source messages (one invocation with a nil key).
	Messages []flow.Message
}

// Emitted is an output together with the key of the invocation that produced it.
type Emitted struct {
	Key flow.Key
	flow.Output
}

// StateWrite is one state change applied by an epoch; a nil Value deleted the state.
type StateWrite struct {
	Key   flow.Key
	Name  string
	Value []byte
}

// EpochResult is what one epoch produced and applied.
type EpochResult struct {
	// Invocations are the invocations made, in order (one per key).
	Invocations []flow.Invocation
	// Outputs are the outputs in production order.
	Outputs []Emitted
	// Fired are the timers that fired.
	Fired []flow.Timer
	// Timers are the timers set, with the ids the harness gave them.
	Timers []flow.Timer
	// StateWrites are the state changes, per invocation in order, names sorted.
	StateWrites []StateWrite
}

// Payloads returns the payloads of the outputs to stream, in order.
func (r *EpochResult) Payloads(stream string) []flow.Row {
	return payloads(r.Outputs, stream)
}

// Harness runs one function over scripted epochs; see the package documentation.
type Harness struct {
	t         testing.TB
	fn        flow.Function
	opts      Options
	now       uint64
	watermark uint64
	streamWM  map[string]uint64
	seq       int                  // ids given to messages and timers
	states    map[string]*keyState // canonical key -> state
	timers    []flow.Timer         // pending, in the order they were set
	outputs   []Emitted            // everything produced so far
	epochs    int
}

type keyState struct {
	key    flow.Key
	states map[string][]byte
}

// New returns a Harness for the function registered under name; the test fails at once when
// there is none.
func New(t testing.TB, name string, opts Options) *Harness {
	t.Helper()
	fn, err := flow.Lookup(name)
	if err != nil {
		t.Fatalf("flowtest: %v", err)
	}
	return NewFunc(t, fn, opts)
}

// NewFunc returns a Harness for fn.
func NewFunc(t testing.TB, fn flow.Function, opts Options) *Harness {
	return &Harness{t: t, fn: fn, opts: opts, states: map[string]*keyState{}}
}

// Msg returns a message for an Epoch: the harness fills in its id and system timestamp.
func Msg(stream string, key flow.Key, payload flow.Row) flow.Message {
	return flow.Message{StreamID: stream, Key: key, Payload: payload}
}

// Run runs one epoch and fails the test if any invocation fails.
func (h *Harness) Run(e Epoch) *EpochResult {
	h.t.Helper()
	r, err := h.TryRun(e)
	if err != nil {
		h.t.Fatalf("flowtest: epoch %d: %v", h.epochs, err)
	}
	return r
}

// TryRun runs one epoch. When an invocation fails it returns the error and applies nothing
// (time and watermark still advance).
func (h *Harness) TryRun(e Epoch) (*EpochResult, error) {
	h.epochs++
	if e.Now != 0 {
		h.now = e.Now
	}
	h.watermark = max(h.watermark, e.Watermark)
	for stream, wm := range e.StreamWatermarks {
		if h.streamWM == nil {
			h.streamWM = map[string]uint64{}
		}
		h.streamWM[stream] = max(h.streamWM[stream], wm)
	}

	invs, order := h.plan(e)
	res := &EpochResult{}
	results := make([]*flow.Result, len(invs))
	for i, inv := range invs {
		r, err := h.invoke(inv)
		if err == nil && h.opts.Swift {
			err = checkSwift(inv, r)
		}
		if err != nil {
			return nil, err
		}
		results[i] = r
		res.Invocations = append(res.Invocations, *cloneInvocation(inv))
		res.Fired = append(res.Fired, inv.Timers...)
	}

	// Commit: everything succeeded.
	// Invariant: an epoch with a failed invocation applies nothing (TestHarnessFailedEpochAppliesNothing).
	fired := map[string]bool{}
	for _, t := range res.Fired {
		fired[t.MessageID] = true
	}
	h.timers = slices.DeleteFunc(h.timers, func(t flow.Timer) bool { return fired[t.MessageID] })
	for i, r := range results {
		key := invs[i].Key
		for _, o := range r.Outputs {
			res.Outputs = append(res.Outputs, Emitted{Key: key, Output: o})
		}
		for _, t := range r.Timers {
			h.seq++
			t.MessageID = fmt.Sprintf("timer-%08d", h.seq)
			if len(t.Key) == 0 {
				t.Key = key // as the runtime does: a new timer belongs to its invocation's key
			}
			res.Timers = append(res.Timers, t)
			h.timers = append(h.timers, t)
		}
		ks := h.keyState(order[i], key)
		for _, name := range slices.Sorted(maps.Keys(r.StateWrites)) {
			v := r.StateWrites[name]
			res.StateWrites = append(res.StateWrites, StateWrite{Key: key, Name: name, Value: v})
			if v == nil {
				delete(ks.states, name)
			} else {
				ks.states[name] = slices.Clone(v)
			}
		}
	}
	h.outputs = append(h.outputs, res.Outputs...)
	return res, nil
}

// plan builds the epoch's invocations: keys in order of first appearance, due timers first
// (by trigger, then by the order they were set), then messages.
func (h *Harness) plan(e Epoch) (invs []*flow.Invocation, order []string) {
	byKey := map[string]*flow.Invocation{}
	get := func(key flow.Key) *flow.Invocation {
		ck := canonical(key)
		inv, ok := byKey[ck]
		if !ok {
			if len(key) == 0 {
				key = nil
			}
			inv = &flow.Invocation{Key: key, Parameters: h.opts.Parameters, Now: h.now, State: h.keyState(ck, key).states}
			byKey[ck] = inv
			invs = append(invs, inv)
			order = append(order, ck)
		}
		return inv
	}
	due := slices.Clone(h.timers)
	due = slices.DeleteFunc(due, func(t flow.Timer) bool { return t.Trigger > h.watermarkOf(t.StreamID) })
	sort.SliceStable(due, func(i, j int) bool { return due[i].Trigger < due[j].Trigger })
	for _, t := range due {
		inv := get(t.Key)
		inv.Timers = append(inv.Timers, t)
	}
	for _, m := range e.Messages {
		if m.MessageID == "" {
			h.seq++
			m.MessageID = fmt.Sprintf("msg-%08d", h.seq)
		}
		if m.SystemTimestamp == 0 {
			m.SystemTimestamp = h.now
		}
		inv := get(m.Key)
		inv.Messages = append(inv.Messages, m)
	}
	return invs, order
}

// invoke calls the function, twice unless nondeterminism is allowed, on private copies.
func (h *Harness) invoke(inv *flow.Invocation) (*flow.Result, error) {
	first, err := h.fn.Invoke(cloneInvocation(inv))
	if err != nil || h.opts.AllowNondeterminism {
		return first, err
	}
	second, err2 := h.fn.Invoke(cloneInvocation(inv))
	if err2 != nil {
		return nil, fmt.Errorf("key %v: %w: first run succeeded, second failed: %w", inv.Key, ErrNondeterministic, err2)
	}
	if !reflect.DeepEqual(first, second) {
		return nil, fmt.Errorf("key %v: %w: results differ:\nfirst:  %+v\nsecond: %+v", inv.Key, ErrNondeterministic, first, second)
	}
	return first, nil
}

// watermarkOf is the governing time of a timer stream.
func (h *Harness) watermarkOf(stream string) uint64 {
	if wm, ok := h.streamWM[stream]; ok {
		return wm
	}
	return h.watermark
}

// checkSwift checks the swift rules for one invocation's result.
func checkSwift(inv *flow.Invocation, r *flow.Result) error {
	timers := map[string]bool{}
	for _, t := range inv.Timers {
		timers[t.MessageID] = true
	}
	for i, o := range r.Outputs {
		parents := o.ParentIDs
		if len(parents) == 0 {
			parents = nil
			for _, t := range inv.Timers {
				parents = append(parents, t.MessageID)
			}
			for _, m := range inv.Messages {
				parents = append(parents, m.MessageID)
			}
		}
		if len(parents) != 1 {
			return fmt.Errorf("key %v: output %d to %q: %w: %d parents %q, want exactly one", inv.Key, i, o.StreamID, ErrSwiftRule, len(parents), parents)
		}
		if timers[parents[0]] {
			return fmt.Errorf("key %v: output %d to %q: %w: descends from timer %s", inv.Key, i, o.StreamID, ErrSwiftRule, parents[0])
		}
	}
	return nil
}

func (h *Harness) keyState(ck string, key flow.Key) *keyState {
	ks, ok := h.states[ck]
	if !ok {
		ks = &keyState{key: key, states: map[string][]byte{}}
		h.states[ck] = ks
	}
	return ks
}

// Now returns the current time of the harness in microseconds.
func (h *Harness) Now() uint64 { return h.now }

// Outputs returns every output produced so far, in order.
func (h *Harness) Outputs() []Emitted { return slices.Clone(h.outputs) }

// Payloads returns the payloads of every output to stream so far, in order.
func (h *Harness) Payloads(stream string) []flow.Row { return payloads(h.outputs, stream) }

// PendingTimers returns the timers set and not yet fired, in the order they were set.
func (h *Harness) PendingTimers() []flow.Timer { return slices.Clone(h.timers) }

// State returns the stored YSON bytes of a state, or nil when it is absent.
func (h *Harness) State(key flow.Key, name string) []byte {
	if ks, ok := h.states[canonical(key)]; ok {
		return ks.states[name]
	}
	return nil
}

// Keys returns the keys that have at least one state, in canonical (YSON text) order.
func (h *Harness) Keys() []flow.Key {
	var keys []flow.Key
	for _, ck := range slices.Sorted(maps.Keys(h.states)) {
		if ks := h.states[ck]; len(ks.states) > 0 {
			keys = append(keys, ks.key)
		}
	}
	return keys
}

// SetState stores v (YSON-encoded) as a state, as if an earlier epoch had committed it.
func (h *Harness) SetState(key flow.Key, name string, v any) {
	h.t.Helper()
	b, err := yson.Marshal(v)
	if err != nil {
		h.t.Fatalf("flowtest: SetState %q of key %v: %v", name, key, err)
	}
	h.keyState(canonical(key), key).states[name] = b
}

// Get decodes a state of key into a T; ok is false when the state is absent. The test fails
// when the stored bytes do not decode.
func Get[T any](h *Harness, key flow.Key, name string) (v T, ok bool) {
	h.t.Helper()
	b := h.State(key, name)
	if b == nil {
		return v, false
	}
	if err := yson.Unmarshal(b, &v); err != nil {
		h.t.Fatalf("flowtest: state %q of key %v: decode %q as %T: %v", name, key, b, v, err)
	}
	return v, true
}

func payloads(outs []Emitted, stream string) []flow.Row {
	var rows []flow.Row
	for _, o := range outs {
		if o.StreamID == stream {
			rows = append(rows, o.Payload)
		}
	}
	return rows
}

// canonical is a key's identity: its YSON text; "" for the nil key of sources.
func canonical(key flow.Key) string {
	if len(key) == 0 {
		return ""
	}
	b, err := yson.Marshal([]any(key))
	if err != nil {
		panic(fmt.Sprintf("flowtest: key %v is not YSON: %v", key, err))
	}
	return string(b)
}

func cloneInvocation(inv *flow.Invocation) *flow.Invocation {
	c := *inv
	c.Messages = slices.Clone(inv.Messages)
	for i := range c.Messages {
		c.Messages[i].Payload = maps.Clone(c.Messages[i].Payload)
	}
	c.Timers = slices.Clone(inv.Timers)
	for i := range c.Timers {
		c.Timers[i].Payload = maps.Clone(c.Timers[i].Payload)
	}
	c.State = maps.Clone(inv.State)
	c.Parameters = maps.Clone(inv.Parameters)
	return &c
}
