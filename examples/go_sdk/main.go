// Command go_sdk is a word count written against YTsaurus Flow's Go SDK, as a Flow Go companion
// program is, and run by yt-flow after one change: the import path of the SDK.
//
//	go run ./examples/go_sdk --config examples/go_sdk/config.yson
//
// runs config.yson (Flow's runner config, unchanged) on the embedded YTsaurus server with the
// setup of local.yson next to it, and prints the ten most frequent words of input.txt.
package main

import (
	"context"
	"strings"
	"unicode"

	// Flow: flow "go.ytsaurus.tech/yt/go/flow"
	flow "github.com/ytflow/yt-flow/flowsdk"
)

// Word is a message of stream words.
type Word struct {
	Word string `yson:"word"`
}

// Total is a message of stream totals, a row of the result table.
type Total struct {
	Hash  uint64 `yson:"hash"`
	Word  string `yson:"word"`
	Count int64  `yson:"count"`
}

// flushDelay is how long after a word's first message (in event time) its total is emitted.
const flushDelay = uint64(60_000_000) // microseconds

// splitLines emits one Word per word of the source row's text column: lower-case, split on
// every rune that is neither a letter nor a digit.
func splitLines(ctx context.Context, rt flow.Runtime, msg flow.ExtendedMessage, out flow.OutputCollector) error {
	text, err := msg.Payload.String("text")
	if err != nil {
		return err
	}
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		b, err := rt.MessageBuilder("words")
		if err != nil {
			return err
		}
		m, err := b.SetStruct(Word{Word: w}).Finish()
		if err != nil {
			return err
		}
		if err := out.AddMessage(m); err != nil {
			return err
		}
	}
	return nil
}

// counter counts the messages of its key (the word) in the state "count"; the first message
// of a word sets the timer that emits its total.
type counter struct{}

func (counter) OnMessage(ctx context.Context, rt flow.Runtime, msg flow.ExtendedMessage, out flow.OutputCollector) error {
	state, err := rt.InternalState("count")
	if err != nil {
		return err
	}
	var n int64
	seen, err := state.Get(&n)
	if err != nil {
		return err
	}
	if err := state.Set(n + 1); err != nil {
		return err
	}
	if seen {
		return nil
	}
	return out.AddTimer(flow.TimerRequest{StreamID: "flush", TriggerTimestamp: msg.EventTimestamp + flushDelay})
}

func (counter) OnTimer(ctx context.Context, rt flow.Runtime, timer flow.Timer, out flow.OutputCollector) error {
	state, err := rt.InternalState("count")
	if err != nil {
		return err
	}
	var n int64
	if _, err := state.Get(&n); err != nil {
		return err
	}
	b, err := rt.MessageBuilder("totals")
	if err != nil {
		return err
	}
	m, err := b.SetStruct(Total{Hash: timer.Key[0].(uint64), Word: timer.Key[1].(string), Count: n}).Finish()
	if err != nil {
		return err
	}
	return out.AddMessage(m)
}

// newPipeline is the program's pipeline: its streams and computations.
func newPipeline() *flow.Pipeline {
	pipeline := flow.NewPipeline()
	if err := pipeline.AddStreams(flow.NewYSONStream[Word]("words"), flow.NewYSONStream[Total]("totals")); err != nil {
		panic(err)
	}
	if err := pipeline.Add(
		flow.NewRowSourceComputation("split", flow.RowFunc(splitLines)),
		flow.NewRowComputation("count", counter{}),
	); err != nil {
		panic(err)
	}
	return pipeline
}

func main() { newPipeline().Run() }
