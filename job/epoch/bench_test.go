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
