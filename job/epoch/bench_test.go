package epoch

import (
	"fmt"
	"testing"

	"github.com/ytflow/yt-flow/flow"
)

// BenchmarkEpochCore plans and builds the commit of a 1000-input epoch over 100 keys, each
// invocation writing one state and one output routed to a downstream computation.
func BenchmarkEpochCore(b *testing.B) {
	cfg := &Config{ComputationID: "count", PartitionID: "p", Dedup: true,
		Routes: map[string][]Destination{"out": {{ID: "down", Kind: ToComputation}}},
		Keyer:  func(_ string, row flow.Row) (flow.Key, error) { return flow.Key{row["w"]}, nil }}
	batch := &Batch{Now: 1, SeqNo: 1}
	for i := 0; i < 1000; i++ {
		batch.Inputs = append(batch.Inputs, Input{Message: flow.Message{MessageID: fmt.Sprintf("m%04d", i),
			Key: flow.Key{fmt.Sprintf("k%d", i%100)}, Payload: flow.Row{"w": "x"}}})
	}
	b.ReportAllocs()
	for b.Loop() {
		p := PlanEpoch(cfg, batch, func(Input) bool { return false })
		res := make([]*flow.Result, len(p.Groups))
		for i := range res {
			res[i] = &flow.Result{StateWrites: map[string][]byte{"n": []byte("1")},
				Outputs: []flow.Output{{StreamID: "out", Payload: flow.Row{"w": "y"}}}}
		}
		if _, err := BuildCommit(cfg, batch, p, res); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(batch.Inputs))/b.Elapsed().Seconds(), "inputs/s")
}

// BenchmarkPlannerTransform plans and builds, with one reused Planner as the runner does, a
// transform epoch like the burst benchmark's count: 1000 inputs over 500 keys, each input
// giving one output to an async sink and each invocation one state.
func BenchmarkPlannerTransform(b *testing.B) {
	cfg := &Config{ComputationID: "count", PartitionID: "p", Dedup: true,
		Routes: map[string][]Destination{"out": {{ID: "sink", Kind: ToAsyncSink}}}}
	batch := &Batch{Now: 1, SeqNo: 1, DistinctInputs: true}
	for i := range 1000 {
		batch.Inputs = append(batch.Inputs, Input{Message: flow.Message{MessageID: fmt.Sprintf("%016x-3%03x", 7, i),
			Key: flow.Key{fmt.Sprintf("word%d", i*7%500)}, Payload: flow.Row{"w": "x"}, EventTimestamp: uint64(i + 1)}})
	}
	var pl Planner
	fresh := func(Input) bool { return false }
	// The plan's groups are the same every time: the invocations' results are made once.
	p := pl.Plan(cfg, batch, fresh)
	results := make([]*flow.Result, len(p.Groups))
	for i, g := range p.Groups {
		results[i] = &flow.Result{StateWrites: map[string][]byte{"n": []byte("1")}}
		for range g.Messages {
			results[i].Outputs = append(results[i].Outputs, flow.Output{StreamID: "out", Payload: flow.Row{"w": "y"}})
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		batch.SeqNo++
		p := pl.Plan(cfg, batch, fresh)
		c, err := pl.Build(cfg, batch, p, results)
		if err != nil {
			b.Fatal(err)
		}
		sinkID = c.Stored[len(c.Stored)-1].Message.MessageID
	}
}

// sinkID keeps the benchmarks' ids from being optimised away.
var sinkID string

// BenchmarkPlannerSource plans and builds, with one reused Planner, a source epoch like the
// burst benchmark's split: 1000 source rows, each giving one output to a computation.
func BenchmarkPlannerSource(b *testing.B) {
	cfg := &Config{ComputationID: "split", PartitionID: "p", Source: true,
		Routes: map[string][]Destination{"words": {{ID: "count", Kind: ToComputation}}},
		Keyer:  func(_ string, row flow.Row) (flow.Key, error) { return flow.Key{row["w"]}, nil }}
	batch := &Batch{Now: 1, SeqNo: 1}
	for i := range 1000 {
		batch.Sources = append(batch.Sources, SourceRow{SourcePartition: SourcePartition{SourceID: "kafka", Partition: 1},
			Offset: int64(i), Payload: flow.Row{"line": "x"}, EventTimestamp: uint64(i + 1)})
	}
	var pl Planner
	results := make([]*flow.Result, len(batch.Sources))
	for i := range results {
		results[i] = &flow.Result{Outputs: []flow.Output{{StreamID: "words", Payload: flow.Row{"w": "y"}}}}
	}
	b.ReportAllocs()
	for b.Loop() {
		for i := range batch.Sources {
			batch.Sources[i].Offset += int64(len(batch.Sources))
		}
		p := pl.Plan(cfg, batch, nil)
		c, err := pl.Build(cfg, batch, p, results)
		if err != nil {
			b.Fatal(err)
		}
		sinkID = c.Stored[len(c.Stored)-1].Message.MessageID
	}
}

// BenchmarkMessageIDs builds the three ids an input costs in the burst benchmark: its source
// row's, the source computation's output's and the transform's output's.
func BenchmarkMessageIDs(b *testing.B) {
	sp := SourcePartition{SourceID: "kafka", Partition: 1}
	b.Run("strings", func(b *testing.B) {
		b.ReportAllocs()
		n := uint64(0)
		for b.Loop() {
			n++
			parent := SourceMessageID("split", sp, int64(n))
			sinkID = SourceOutputID(parent, "words", 0)
			sinkID = TransformMessageID(n, n&1023)
		}
	})
	b.Run("arena", func(b *testing.B) {
		b.ReportAllocs()
		var a idArena
		n := uint64(0)
		for b.Loop() {
			n++
			parent := a.source("split", sp, int64(n))
			sinkID = a.sourceOutput(parent, "words", 0)
			sinkID = a.transform(n, n&1023)
		}
	})
}
