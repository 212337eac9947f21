package clickhouse

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"

	farm "github.com/dgryski/go-farm"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/yson"
)

// ShardedClass is the canonical name of the sharded batching sink.
const ShardedClass = "clickhouse_sharded_batching"

// ShardedParams are the static parameters of TShardedClickHouseBatchingSink: the common ones
// (Params, whose Hosts stays empty) and the shards.
type ShardedParams struct {
	Params
	// Shards are the shard names of shard_hosts, sorted; ShardHosts their hosts.
	Shards     []string
	ShardHosts map[string][]string
}

func init() {
	registry.Register(registry.Class{
		Name: ShardedClass, Role: registry.Sink, FlowNames: []string{"NYT::NFlow::TShardedClickHouseBatchingSink"},
		Guarantee: registry.ExactlyOnce, Kind: registry.AsyncSink, Runs: true,
		AtMostOnceRefusal: "TShardedClickHouseBatchingSink is exactly-once; at_most_once_strategy belongs to TAtMostOnceClickHouseSink",
		Summary:           "inserts committed outputs into shards chosen by rendezvous hashing, in deterministic batches with insert_deduplication_token",
		Parse:             parseSharded,
		ParseDynamic:      parseDynamic,
		Validate: func(params any, inputs []registry.Input, report func(key, format string, args ...any)) {
			validate(&params.(*ShardedParams).Params, inputs, report)
		},
		Columns: func(params any) map[string][]string {
			return map[string][]string{"sharding_key_columns": params.(*ShardedParams).ShardingKeyColumns}
		},
	})
	connector.RegisterSink(ShardedClass, connector.Constructors{
		AsyncSink: func(env connector.Env, params any) (connector.AsyncSink, error) {
			dyn, _ := env.Dynamic.(*Dynamic)
			return newSharded(env.SinkID, params.(*ShardedParams), dyn), nil
		},
	})
}

func parseSharded(f *yson.Fields) any {
	c := &ShardedParams{ShardHosts: map[string][]string{}}
	n := f.Required("shard_hosts")
	if n != nil {
		f.Walker().Each(n, f.Path("shard_hosts"), func(shard string, v *yson.Node, path string) {
			hosts, ok := f.Walker().Strings(v, path, true)
			switch {
			case !ok:
			case len(hosts) == 0:
				f.Walker().Errorf(path, "shard %q lists no host", shard)
			case slices.Contains(hosts, ""):
				f.Walker().Errorf(path, "shard %q lists an empty host", shard)
			}
			if shard == "" {
				f.Walker().Errorf(path, "a shard name must not be empty")
			}
			c.ShardHosts[shard] = hosts
			c.Shards = append(c.Shards, shard)
		})
		if len(c.Shards) == 0 {
			f.Errorf("shard_hosts", "must name at least one shard")
		}
	}
	sort.Strings(c.Shards)
	parseCommon(f, &c.Params)
	return c
}

// ShardOf returns the index, in shards (sorted), of the shard a row goes to: rendezvous
// hashing of key over the shard names — the shard with the greatest FarmHash of the key's
// fingerprint and its name — so adding or removing a shard moves only the keys it gains or
// loses. Pure.
func ShardOf(key []byte, shards []string) int {
	h := farm.Fingerprint64(key)
	best, bestScore := 0, uint64(0)
	var b []byte
	for i, s := range shards {
		b = binary.LittleEndian.AppendUint64(b[:0], h)
		b = append(b, s...)
		if score := farm.Fingerprint64(b); i == 0 || score > bestScore {
			best, bestScore = i, score
		}
	}
	return best
}

// shardKey encodes the sharding key of a row (its sharding_key_columns' values; the message
// id when there are none) deterministically.
func shardKey(cols []string, row map[string]any, messageID string) []byte {
	if len(cols) == 0 {
		return []byte(messageID)
	}
	var b []byte
	for _, c := range cols {
		switch v := row[c].(type) {
		case nil:
			b = append(b, 0)
		case int64:
			b = binary.LittleEndian.AppendUint64(append(b, 1), uint64(v))
		case uint64:
			b = binary.LittleEndian.AppendUint64(append(b, 2), v)
		case float64:
			b = binary.LittleEndian.AppendUint64(append(b, 3), math.Float64bits(v))
		case bool:
			if v {
				b = append(b, 4, 1)
			} else {
				b = append(b, 4, 0)
			}
		case string:
			b = binary.LittleEndian.AppendUint64(append(b, 5), uint64(len(v)))
			b = append(b, v...)
		case []byte:
			b = binary.LittleEndian.AppendUint64(append(b, 5), uint64(len(v)))
			b = append(b, v...)
		default:
			b = append(b, fmt.Sprintf("\x06%v", v)...)
		}
	}
	return b
}

// sharded is TShardedClickHouseBatchingSink's runtime for one job: a target per shard.
type sharded struct {
	params  *ShardedParams
	targets []*target // by shard index
	mu      sync.Mutex
}

func newSharded(sinkID string, p *ShardedParams, dyn *Dynamic) *sharded {
	s := &sharded{params: p}
	for _, shard := range p.Shards {
		sp := p.Params
		sp.Hosts = p.ShardHosts[shard]
		t := newTarget(ShardedClass, sinkID+" shard "+shard, &sp, dyn, nil)
		t.sticky = true
		s.targets = append(s.targets, t)
	}
	return s
}

// Deliver inserts each stored batch's rows into their shards (ShardOf), shard by shard in
// name order, each shard's rows cut into blocks as the unsharded sink cuts them, each block
// with insert_deduplication_token = its greatest message id + ":" + the shard's name. A
// batch is held once every shard holds its blocks; a replay sends the same blocks with the
// same tokens. Errors are the unsharded sink's (Deliver of batching).
//
// Invariant: a replay sends every shard the same blocks with the same tokens
// (TestShardOf, TestClickHouseShardedConformance).
func (s *sharded) Deliver(ctx context.Context, batches []connector.Batch) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(batches) == 0 {
		return 0, nil
	}
	for _, t := range s.targets {
		if err := t.session(ctx, true); err != nil {
			return 0, err
		}
	}
	for i := range batches {
		b := &batches[i]
		byShard := make([][]int, len(s.targets)) // row indexes, in message id order
		rows := make([][]any, len(b.Rows))
		for j := range b.Rows {
			d := &b.Rows[j]
			m, err := s.targets[0].decode(d)
			shard := 0
			if err == nil {
				shard = ShardOf(shardKey(s.params.ShardingKeyColumns, m, d.MessageID), s.params.Shards)
				rows[j], err = s.targets[shard].values(m)
			}
			if err != nil {
				return i, s.targets[shard].breakWith(fmt.Errorf("message (seq %d): %w", d.SequenceNumber, err))
			}
			byShard[shard] = append(byShard[shard], j)
		}
		for shard, idx := range byShard {
			t := s.targets[shard]
			for _, sp := range split(len(idx), func(k int) int64 { return rowSize(&b.Rows[idx[k]]) }, t.dyn.MaxRowsPerBatch, t.dyn.MaxBytesPerBatch) {
				block := make([][]any, 0, sp.to-sp.from)
				for _, j := range idx[sp.from:sp.to] {
					block = append(block, rows[j])
				}
				token := b.Rows[idx[sp.to-1]].MessageID + ":" + s.params.Shards[shard]
				if err := t.insertRetrying(ctx, block, token, true); err != nil {
					return i, err
				}
			}
		}
	}
	return len(batches), nil
}
