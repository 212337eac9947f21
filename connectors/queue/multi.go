package queue

// TAsyncMultiClusterQueueSink: the async queue sink writing every output to the same queue
// on each cluster of queue_path's <clusters=[…]>.

import (
	"context"
	"fmt"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/yson"
)

// MultiClusterSinkClass is the class name of the multi-cluster async queue sink.
const MultiClusterSinkClass = "async_multi_cluster_queue"

// MultiSinkParams are the parameters of TAsyncMultiClusterQueueSink: those of the async
// sink, the clusters of queue_path's <clusters=[…]>, and use_clusters (accepted, default
// false: the sink writes to every cluster listed either way).
type MultiSinkParams struct {
	SinkParams
	Clusters    []string
	UseClusters bool
}

func init() {
	registry.Register(registry.Class{
		Name: MultiClusterSinkClass, Role: registry.Sink, FlowNames: []string{"NYT::NFlow::TAsyncMultiClusterQueueSink"},
		Guarantee: registry.ExactlyOnce, Kind: registry.AsyncSink, Runs: true,
		Summary: "delivers committed outputs to the queue on each cluster of <clusters=[…]> through each cluster's producer (seqNo dedup per cluster)",
		Parse:   parseMultiSink,
		Columns: func(params any) map[string][]string {
			return map[string][]string{"column_filter": params.(*MultiSinkParams).ColumnFilter}
		},
	})
	connector.RegisterSink(MultiClusterSinkClass, connector.Constructors{
		AsyncSink: func(env connector.Env, params any) (connector.AsyncSink, error) {
			p := params.(*MultiSinkParams)
			m := &MultiAsyncSink{clusters: p.Clusters}
			for _, c := range p.Clusters {
				st, err := storeOf(env, c)
				if err != nil {
					return nil, fmt.Errorf("multi-cluster queue sink %s: %w", p.QueuePath, err)
				}
				m.sinks = append(m.sinks, NewAsyncSink(st, p.ProducerPath, p.QueuePath, env.PartitionID+"/"+env.SinkID))
			}
			return m, nil
		},
	})
}

func parseMultiSink(f *yson.Fields) any {
	raw := f.String("queue_path", "")
	sp := parseSink(f, true).(*SinkParams)
	p := &MultiSinkParams{SinkParams: *sp}
	p.UseClusters = f.Bool("use_clusters", false)
	attrs := registry.PathAttrs(raw)
	list, _ := attrs["clusters"].([]any)
	seen := map[string]bool{}
	for _, c := range list {
		name, ok := c.(string)
		if !ok || name == "" || seen[name] {
			f.Errorf("queue_path", "<clusters=[…]> lists %v: want distinct cluster names", list)
			return p
		}
		seen[name] = true
		p.Clusters = append(p.Clusters, name)
	}
	if raw != "" && len(p.Clusters) == 0 {
		f.Errorf("queue_path", "%q names no clusters: the multi-cluster sink wants <clusters=[NAME;…]>//path", raw)
		return p
	}
	if sp.Cluster != "" {
		f.Errorf("queue_path", "give the clusters as <clusters=[…]>, not <cluster=%s>", sp.Cluster)
	}
	p.QueuePath = registry.PlainPath(raw)
	p.ProducerPath = registry.PlainPath(p.ProducerPath) // on every cluster alike
	return p
}

// MultiAsyncSink delivers to one AsyncSink per cluster; a delivery holds once every cluster
// holds it. Each cluster's producer deduplicates by sequence number, so a resend after a
// failure on one cluster adds nothing to the others.
type MultiAsyncSink struct {
	clusters []string
	sinks    []*AsyncSink
}

// Deliver pushes the batches to every cluster in order and returns once all hold them.
//
// Invariant: every cluster's queue holds each output once, whatever fails in between
// (TestMultiClusterSinkResend).
func (m *MultiAsyncSink) Deliver(ctx context.Context, batches []connector.Batch) (int, error) {
	for i, s := range m.sinks {
		if _, err := s.Deliver(ctx, batches); err != nil {
			return 0, fmt.Errorf("cluster %s: %w", m.clusters[i], err)
		}
	}
	return len(batches), nil
}
