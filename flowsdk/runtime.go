package flowsdk

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"

	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/flow"
)

// Runtime is what a handler sees of its computation and key. It is valid only during the
// handler call.
type Runtime interface {
	// Parameters returns the processing_function_parameters. yt-flow merges the dynamic
	// spec's over the static spec's before the function runs, so this is the merge.
	Parameters() Parameters
	// DynamicParameters returns the same merge as Parameters (yt-flow does not keep them apart).
	DynamicParameters() Parameters
	// KeySchema returns the computation's group_by_schema; empty when the spec is not known
	// to the program (see docs/flow-go-sdk.md) or for source computations.
	KeySchema() schema.Schema
	// StreamSpecs returns the schemas of the streams the computation reads and writes, as far
	// as the spec and Pipeline.AddStreams tell.
	StreamSpecs() StreamSpecs
	// MessageBuilder returns a builder of an output message of streamID; ErrUnknownStream when
	// the spec is known and streamID is not an output of the computation.
	MessageBuilder(streamID string) (*MessageBuilder, error)
	// MinWatermark and Watermark are not supported by yt-flow yet: they return 0 and
	// (0, false). Event-time timers fire by the watermark all the same.
	MinWatermark() uint64
	Watermark(streamID string) (uint64, bool)
	// InternalState returns the key's state called name; ErrUnknownState when the computation
	// declares parameters.internal_states without name.
	InternalState(name string) (*InternalState, error)
	// ExternalState and JoinedExternalState return errors wrapping ErrNotSupported.
	ExternalState(name string) (*ExternalState, error)
	JoinedExternalState(name string) (*ExternalState, error)
}

// compInfo is what the program knows of a computation from its spec (nil fields: unknown).
type compInfo struct {
	keySchema      schema.Schema
	streams        StreamSpecs // inputs and outputs with known schemas
	outputs        []string    // nil: unknown
	internalStates []string
}

// known holds the compInfo of each computation of the spec the program runs with, set by
// Pipeline.Main when it reads the spec.
var known = struct {
	sync.RWMutex
	comps   map[string]*compInfo
	streams map[string]schema.Schema // from AddStreams
}{comps: map[string]*compInfo{}, streams: map[string]schema.Schema{}}

func infoOf(id string) *compInfo {
	known.RLock()
	defer known.RUnlock()
	if c, ok := known.comps[id]; ok {
		return c
	}
	return &compInfo{}
}

func streamSchema(info *compInfo, id string) (schema.Schema, bool) {
	if s, ok := info.streams[id]; ok {
		return s, true
	}
	known.RLock()
	defer known.RUnlock()
	s, ok := known.streams[id]
	return s, ok
}

// runtime is the Runtime of one handler call.
type runtime struct {
	id   string
	ctx  *flow.Context
	info *compInfo
}

func (r *runtime) Parameters() Parameters        { return Parameters{row: r.ctx.Parameters()} }
func (r *runtime) DynamicParameters() Parameters { return r.Parameters() }
func (r *runtime) KeySchema() schema.Schema      { return r.info.keySchema }

func (r *runtime) StreamSpecs() StreamSpecs {
	out := StreamSpecs{}
	for id, s := range r.info.streams {
		out[id] = s
	}
	return out
}

func (r *runtime) MessageBuilder(streamID string) (*MessageBuilder, error) {
	if r.info.outputs != nil && !slices.Contains(r.info.outputs, streamID) {
		return nil, fmt.Errorf("computation %q: MessageBuilder(%q): not an output stream: %w", r.id, streamID, ErrUnknownStream)
	}
	b := &MessageBuilder{streamID: streamID, row: flow.Row{}}
	if s, ok := streamSchema(r.info, streamID); ok {
		b.schema = &s
	} else if r.info.outputs == nil {
		return nil, fmt.Errorf("computation %q: MessageBuilder(%q): no such stream (add it with AddStreams): %w", r.id, streamID, ErrUnknownStream)
	}
	return b, nil
}

func (r *runtime) MinWatermark() uint64            { return 0 }
func (r *runtime) Watermark(string) (uint64, bool) { return 0, false }
func (r *runtime) ExternalState(name string) (*ExternalState, error) {
	return nil, fmt.Errorf("computation %q: ExternalState(%q): %w", r.id, name, ErrNotSupported)
}

func (r *runtime) JoinedExternalState(name string) (*ExternalState, error) {
	return nil, fmt.Errorf("computation %q: JoinedExternalState(%q): %w", r.id, name, ErrNotSupported)
}

func (r *runtime) InternalState(name string) (*InternalState, error) {
	if len(r.info.internalStates) > 0 && !slices.Contains(r.info.internalStates, name) {
		return nil, fmt.Errorf("computation %q: InternalState(%q): not in parameters.internal_states %q: %w", r.id, name, r.info.internalStates, ErrUnknownState)
	}
	return &InternalState{raw: flow.StateOf[yson.RawValue](r.ctx, name), name: name}, nil
}

// OutputCollector takes a handler's outputs and timers. Outputs have the input being handled
// as their parent (a message, a timer, or all messages of a batch) unless WithParentIDs says
// otherwise.
type OutputCollector interface {
	// AddMessage emits msg (from a MessageBuilder of this handler's Runtime).
	AddMessage(msg *Message) error
	// AddUndistributedMessage returns an error wrapping ErrNotSupported.
	AddUndistributedMessage(msg *Message) error
	// AddTimer sets a timer for the current key.
	AddTimer(req TimerRequest) error
	// WithParentIDs returns a collector whose outputs have exactly these parents, ids of the
	// invocation's messages or timers; another id fails the invocation.
	WithParentIDs(ids ...string) OutputCollector
}

type collector struct{ ctx *flow.Context }

func (c collector) AddMessage(msg *Message) error {
	if msg == nil {
		return fmt.Errorf("AddMessage: nil message")
	}
	ctx := c.ctx
	if msg.eventTS != 0 {
		ctx = ctx.WithEventTimestamp(msg.eventTS)
	}
	ctx.AddMessage(msg.streamID, msg.row)
	return nil
}

func (c collector) AddUndistributedMessage(msg *Message) error {
	return fmt.Errorf("AddUndistributedMessage: %w", ErrNotSupported)
}

func (c collector) AddTimer(req TimerRequest) error {
	if req.StreamID == "" {
		return fmt.Errorf("AddTimer: StreamID is required")
	}
	ctx := c.ctx
	if req.EventTimestamp != 0 {
		ctx = ctx.WithEventTimestamp(req.EventTimestamp)
	}
	ctx.AddTimer(req.StreamID, req.TriggerTimestamp, nil)
	return nil
}

func (c collector) WithParentIDs(ids ...string) OutputCollector {
	return collector{ctx: c.ctx.WithParentIDs(ids...)}
}

// Go runs fn on a goroutine of its own, for a handler that splits its work, and returns a wait
// function that returns fn's error once it has returned. A panic in fn becomes an error
// wrapping flow.ErrUserPanic instead of ending the worker. The handler must wait before it
// returns: a Runtime and an OutputCollector are not safe for concurrent use, so fn computes
// and the handler emits.
func Go(ctx context.Context, fn func(ctx context.Context) error) (wait func() error) {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- &flow.PanicError{Value: r, Stack: debug.Stack()}
			}
		}()
		done <- fn(ctx)
	}()
	return sync.OnceValue(func() error { return <-done })
}
