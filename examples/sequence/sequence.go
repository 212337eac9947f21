// Package sequence is the smallest complete connector: a source class "sequence" that emits
// the numbers 0..count-1 in each of its partitions, as rows {partition; value; square}. docs/connectors.md
// walks through it; a test builds a binary with it and runs a pipeline that reads it.
package sequence

import (
	"context"
	"fmt"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/yson"
)

// Params are the class's parameters.
type Params struct {
	Count      int64 // rows per partition (required)
	Partitions int64 // default 1
}

// IsFinite: a sequence ends.
func (p *Params) IsFinite() bool { return true }

func init() {
	// The spec half: names, guarantee, a strict parser.
	registry.Register(registry.Class{
		Name: "sequence", Role: registry.Source, Guarantee: registry.ExactlyOnce, Runs: true,
		Summary: "emits 0..count-1 in each partition",
		Parse: func(f *yson.Fields) any {
			return &Params{
				Count:      f.Int("count", 0, 1, 1<<40),
				Partitions: f.Int("partitions", 1, 1, 1024),
			}
		},
	})
	// The runtime half: partitions for the controller, a reader per partition for jobs.
	connector.RegisterSource("sequence", connector.Constructors{
		Partitions: func(_ context.Context, _ connector.Env, params any) ([]int64, error) {
			out := []int64{}
			for i := range params.(*Params).Partitions {
				out = append(out, i)
			}
			return out, nil
		},
		Source: func(env connector.Env, params any) (connector.Source, error) {
			return &reader{count: params.(*Params).Count, partition: env.SourcePartition}, nil
		},
	})
}

// reader reads one partition. The runtime keeps the offset (in the partition state, moved
// only with the epoch commit); a reader only answers "what is at offset".
type reader struct {
	count, partition int64
}

func (r *reader) Read(_ context.Context, from connector.Position, max int64) ([]connector.Row, error) {
	offset, err := connector.PositionOffset(from) // the position is the next row's index
	if err != nil {
		return nil, err
	}
	var rows []connector.Row
	for i := offset; i < r.count && int64(len(rows)) < max; i++ {
		rows = append(rows, connector.Row{Offset: i, Columns: map[string]any{
			"partition": uint64(r.partition), "value": uint64(i), "square": uint64(i * i),
		}})
	}
	connector.OffsetRows(rows) // each row's Next: the index after it
	return rows, nil
}

func (r *reader) Advance(context.Context, connector.Position) error { return nil }
func (r *reader) Finite() bool                                      { return true }
func (r *reader) String() string                                    { return fmt.Sprintf("sequence partition %d", r.partition) }
