package random

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/ytflow/yt-flow/connectors/connector"
)

func init() {
	connector.RegisterSource(Class, connector.Constructors{
		Partitions: func(_ context.Context, _ connector.Env, params any) ([]int64, error) {
			out := []int64{}
			for i := range params.(*Params).PartitionCount {
				out = append(out, i)
			}
			return out, nil
		},
		Ends: func(_ context.Context, _ connector.Env, params any) (map[int64]int64, error) {
			p := params.(*Params)
			if p.PartitionMessageCount == 0 {
				return nil, nil
			}
			ends := map[int64]int64{}
			for i := range p.PartitionCount {
				ends[i] = p.PartitionMessageCount
			}
			return ends, nil
		},
		Source: func(env connector.Env, params any) (connector.Source, error) {
			p := params.(*Params)
			if env.SourcePartition < 0 || env.SourcePartition >= p.PartitionCount {
				return nil, fmt.Errorf("random source: partition %d of %d", env.SourcePartition, p.PartitionCount)
			}
			return &reader{params: p, partition: env.SourcePartition}, nil
		},
	})
}

// Generate returns the columns of row offset of partition of a source with params p: the
// same for the same arguments, on every call.
func Generate(p *Params, partition, offset int64) map[string]any {
	r := rand.New(rand.NewPCG(uint64(partition), uint64(offset)))
	key := r.Uint64N(uint64(p.MessageKeyRange))
	n := 0
	if p.MessageSizeMean > 0 {
		n = int(r.Int64N(2*p.MessageSizeMean + 1))
	}
	payload := make([]byte, n)
	for i := range payload {
		payload[i] = 'a' + byte(r.IntN(26))
	}
	return map[string]any{
		"id":        uint64(offset*p.PartitionCount + partition),
		"partition": uint64(partition),
		"offset":    uint64(offset),
		"key":       key,
		"payload":   string(payload),
	}
}

// reader reads one partition; its position is the next offset.
type reader struct {
	params    *Params
	partition int64
}

func (r *reader) Read(_ context.Context, from connector.Position, max int64) ([]connector.Row, error) {
	offset, err := connector.PositionOffset(from)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r, err)
	}
	end := offset + max
	if n := r.params.PartitionMessageCount; n > 0 {
		end = min(end, n)
	}
	if end <= offset {
		return nil, nil
	}
	rows := make([]connector.Row, 0, end-offset)
	for o := offset; o < end; o++ {
		rows = append(rows, connector.Row{Offset: o, Columns: Generate(r.params, r.partition, o)})
	}
	connector.OffsetRows(rows)
	return rows, nil
}

func (r *reader) Advance(context.Context, connector.Position) error { return nil }
func (r *reader) Finite() bool                                      { return r.params.Finite }
func (r *reader) String() string                                    { return fmt.Sprintf("random source partition %d", r.partition) }
