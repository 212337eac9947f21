package queue

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/ytstore"
)

func init() {
	connector.RegisterSource(SourceClass, connector.Constructors{
		Partitions: partitions,
		Ends:       ends,
		Source: func(env connector.Env, params any) (connector.Source, error) {
			p := params.(*SourceParams)
			st, err := storeOf(env, p.Cluster)
			if err != nil {
				return nil, fmt.Errorf("queue source %s: %w", p.QueuePath, err)
			}
			src := NewSource(st, p.QueuePath, p.ConsumerPath, env.SourcePartition, p.Finite)
			src.remote = p.Cluster != ""
			return src, nil
		},
	})
	connector.RegisterSink(SyncSinkClass, connector.Constructors{
		SyncSink: func(_ connector.Env, params any) (connector.SyncSink, error) {
			p := params.(*SinkParams)
			return &SyncSink{QueuePath: p.QueuePath, ColumnFilter: p.ColumnFilter}, nil
		},
	})
	connector.RegisterSink(AsyncSinkClass, connector.Constructors{
		// The producer session id is fixed per (partition, sink): a restarted job continues
		// the same session, and the queue drops rows it already accepted.
		AsyncSink: func(env connector.Env, params any) (connector.AsyncSink, error) {
			p := params.(*SinkParams)
			st, err := storeOf(env, p.Cluster)
			if err != nil {
				return nil, fmt.Errorf("async queue sink %s: %w", p.QueuePath, err)
			}
			return NewAsyncSink(st, p.ProducerPath, p.QueuePath, env.PartitionID+"/"+env.SinkID), nil
		},
		BestEffort: func(env connector.Env, params any) (connector.BestEffortWriter, error) {
			p := params.(*SinkParams)
			st, err := storeOf(env, p.Cluster)
			if err != nil {
				return nil, fmt.Errorf("async queue sink %s: %w", p.QueuePath, err)
			}
			return &BestEffort{store: st, queuePath: p.QueuePath}, nil
		},
	})
}

// partitions lists the tablets of the source's queue that its partition_filter admits.
func partitions(ctx context.Context, env connector.Env, params any) ([]int64, error) {
	p := params.(*SourceParams)
	st, err := storeOf(env, p.Cluster)
	if err != nil {
		return nil, fmt.Errorf("queue %s: %w", p.QueuePath, err)
	}
	n, err := st.TabletCount(ctx, p.QueuePath)
	if err != nil {
		return nil, fmt.Errorf("queue %s: tablet count: %w", p.QueuePath, err)
	}
	return TabletIndexes(n, p.PartitionFilter), nil
}

// TabletIndexes lists the tablets 0..n-1 that filter admits (nil = all).
func TabletIndexes(n int, filter [][2]int64) []int64 {
	var out []int64
	for i := range int64(n) {
		if filter == nil || slices.ContainsFunc(filter, func(r [2]int64) bool { return r[0] <= i && i < r[1] }) {
			out = append(out, i)
		}
	}
	return out
}

// ends reads the total row count of every tablet of the source's queue.
func ends(ctx context.Context, env connector.Env, params any) (map[int64]int64, error) {
	p := params.(*SourceParams)
	var tablets []struct {
		Index int64  `yson:"index"`
		Total *int64 `yson:"total_row_count"`
	}
	st, err := storeOf(env, p.Cluster)
	if err != nil {
		return nil, fmt.Errorf("queue %s: %w", p.QueuePath, err)
	}
	if err := st.GetAttribute(ctx, p.QueuePath, "tablets", &tablets); err != nil {
		return nil, fmt.Errorf("queue %s: @tablets: %w", p.QueuePath, err)
	}
	m := map[int64]int64{}
	for i, tb := range tablets {
		if tb.Total == nil {
			return nil, fmt.Errorf("queue %s: tablet %d reports no total_row_count", p.QueuePath, i)
		}
		idx := tb.Index
		if idx == 0 {
			idx = int64(i)
		}
		m[idx] = *tb.Total
	}
	return m, nil
}

// clusterTimeout bounds the read of the pipeline's clusters map when a connector opens.
const clusterTimeout = 30 * time.Second

// storeOf is the store of cluster ("" the pipeline's own) for the connector opened in env.
func storeOf(env connector.Env, cluster string) (*ytstore.Store, error) {
	if cluster == "" {
		return env.Store, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	return env.Store.Cluster(ctx, cluster)
}
