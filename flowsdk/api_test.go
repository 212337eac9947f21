package flowsdk_test

import (
	"context"
	"errors"

	"go.ytsaurus.tech/library/go/core/log"
	"go.ytsaurus.tech/yt/go/schema"

	flow "github.com/ytflow/yt-flow/flowsdk"
)

// This file compiles only while flowsdk has every identifier §6.5 of the Flow digest names for
// Flow's Go SDK, with a program's import of go.ytsaurus.tech/yt/go/flow replaced by
//
//	import flow "github.com/ytflow/yt-flow/flowsdk"
//
// It is not run: go vet and go test build it.

type word struct {
	Word string `yson:"word"`
}

// handler implements every handler interface.
type handler struct{}

func (handler) OnMessage(ctx context.Context, rt flow.Runtime, msg flow.ExtendedMessage, out flow.OutputCollector) error {
	var w word
	_ = msg.ConvertTo(&w)
	_, _, _, _, _, _ = msg.Key, msg.StreamID, msg.EventTimestamp, msg.SystemTimestamp, msg.ID, msg.Payload
	_, _ = msg.Payload.Int64("a")
	_, _ = msg.Payload.Uint64("a")
	_, _ = msg.Payload.Float64("a")
	_, _ = msg.Payload.Bool("a")
	_, _ = msg.Payload.String("a")
	_, _ = msg.Payload.Bytes("a")
	_, _ = msg.Payload.Any("a")
	_ = msg.Payload.Has("a")
	_ = msg.Payload.Columns()

	var n int64
	err := rt.Parameters().Get("n", &n)
	_ = errors.Is(err, flow.ErrParameterNotFound)
	_ = rt.Parameters().Has("n")
	_ = rt.Parameters().Names()
	_ = rt.DynamicParameters()
	var _ schema.Schema = rt.KeySchema()
	var _ flow.StreamSpecs = rt.StreamSpecs()
	_ = rt.MinWatermark()
	_, _ = rt.Watermark("in")
	var st *flow.InternalState
	st, _ = rt.InternalState("count")
	_, _ = st.Get(&n)
	_ = st.Set(n)
	var ext *flow.ExternalState
	ext, _ = rt.ExternalState("/ext")
	ext, _ = rt.JoinedExternalState("/ext")
	_ = ext
	_, _ = flow.OpenYSONState[int64](rt, "count")
	_, _ = flow.OpenProtoState[word](rt, "proto")
	_, _ = flow.OpenRawState(rt, "raw")
	_, _ = flow.OpenExternalState(rt, "/ext")

	b, err := rt.MessageBuilder("out")
	_ = errors.Is(err, flow.ErrUnknownStream)
	m, err := b.Set("word", "x").SetStruct(w).SetEventTimestamp(1).SetSystemTimestamp(1).Finish()
	_ = errors.Is(err, flow.ErrTypeMismatch) || errors.Is(err, flow.ErrColumnNotFound)
	_ = out.AddMessage(m)
	_ = out.AddUndistributedMessage(m)
	_ = out.AddTimer(flow.TimerRequest{TriggerTimestamp: 1, EventTimestamp: 1, StreamID: "t"})
	_ = out.WithParentIDs(msg.ID).AddMessage(m)
	wait := flow.Go(ctx, func(ctx context.Context) error { return nil })
	return wait()
}

func (handler) OnTimer(ctx context.Context, rt flow.Runtime, t flow.Timer, out flow.OutputCollector) error {
	_, _, _, _, _ = t.ID, t.StreamID, t.Key, t.TriggerTimestamp, t.EventTimestamp
	return nil
}

func (handler) OnVisit(ctx context.Context, rt flow.Runtime, v flow.Visit, out flow.OutputCollector) error {
	_, _, _, _ = v.ID, v.StreamID, v.Key, v.EventTimestamp
	return nil
}

func (handler) OnMessages(ctx context.Context, rt flow.Runtime, msgs []flow.ExtendedMessage, out flow.OutputCollector) error {
	return nil
}

func (handler) OnTimers(ctx context.Context, rt flow.Runtime, ts []flow.Timer, out flow.OutputCollector) error {
	return nil
}

func (handler) OnVisits(ctx context.Context, rt flow.Runtime, vs []flow.Visit, out flow.OutputCollector) error {
	return nil
}

var (
	_ flow.RowFunction        = handler{}
	_ flow.RowTimerFunction   = handler{}
	_ flow.RowVisitFunction   = handler{}
	_ flow.BatchFunction      = handler{}
	_ flow.BatchTimerFunction = handler{}
	_ flow.BatchVisitFunction = handler{}
	_ flow.RowFunction        = flow.RowFunc(handler{}.OnMessage)
	_ flow.BatchFunction      = flow.BatchFunc(handler{}.OnMessages)
)

// program is the shape of a Flow Go program's main.
func program(logger log.Logger) {
	pipeline := flow.NewPipeline(flow.WithLogger(logger))
	_ = pipeline.AddStreams(flow.NewYSONStream[word]("words"))
	err := pipeline.Add(
		flow.NewRowComputation("a", handler{}),
		flow.NewBatchComputation("b", handler{}),
		flow.NewRowSourceComputation("c", handler{}),
		flow.NewBatchSourceComputation("d", handler{}),
	)
	_ = errors.Is(err, flow.ErrDuplicateComputation)
	_ = pipeline.Server()
	pipeline.Run()
}

var _ = program
