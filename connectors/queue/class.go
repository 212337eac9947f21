package queue

import (
	"math"

	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/yson"
)

// Class names of the queue connector.
const (
	SourceClass    = "queue"
	SyncSinkClass  = "sync_queue"
	AsyncSinkClass = "async_queue"
)

// SourceParams are the parameters of TQueueSource.
type SourceParams struct {
	QueuePath, ConsumerPath string // required
	// Cluster is the cluster of the queue and its consumer (queue_path's <cluster=NAME>);
	// "" is the pipeline's.
	Cluster               string
	Finite                bool
	TryParseFlowQueueMeta bool   // default true
	FlowQueueMetaColumn   string // default "flow_queue_meta"
	IgnoreMalformedMeta   bool
	// PartitionFilter lists [begin, end) tablet ranges; nil reads all tablets.
	PartitionFilter [][2]int64
}

// IsFinite tells whether the source completes at the end of the queue.
func (p *SourceParams) IsFinite() bool { return p.Finite }

// String names the source: "queue //path".
func (p *SourceParams) String() string { return "queue " + p.QueuePath }

// SinkParams are the parameters of the queue sinks.
type SinkParams struct {
	QueuePath string // required
	// Cluster is the cluster of the queue and its producer (queue_path's <cluster=NAME>);
	// "" is the pipeline's. Only the async sink may name one.
	Cluster             string
	ProducerPath        string // required for the async sink
	WriteFlowQueueMeta  bool
	FlowQueueMetaColumn string
	ColumnFilter        []string
	RequireSyncReplica  bool // async sink, default true
	// Routing (sync sink only).
	TabletIndexExpression            string
	TabletIndexRoutingHashExpression string
	TabletIndexRoutingHashPolicy     string // "range" | "modulo"
	TabletCount                      int64
}

func init() {
	registry.Register(registry.Class{
		Name: SourceClass, Role: registry.Source, FlowNames: []string{"NYT::NFlow::TQueueSource"},
		Guarantee: registry.ExactlyOnce, Runs: true,
		Summary: "reads a queue's tablets through a consumer; offsets advance only with the epoch commit",
		Parse:   parseSource,
	})
	registry.Register(registry.Class{
		Name: SyncSinkClass, Role: registry.Sink, FlowNames: []string{"NYT::NFlow::TSyncQueueSink"},
		Guarantee: registry.ExactlyOnce, Kind: registry.SyncSink, Runs: true,
		Summary: "appends rows to a queue inside the epoch transaction",
		Parse:   func(f *yson.Fields) any { return parseSink(f, false) },
		Columns: sinkColumns,
	})
	registry.Register(registry.Class{
		Name: AsyncSinkClass, Role: registry.Sink, FlowNames: []string{"NYT::NFlow::TAsyncQueueSink"},
		Guarantee: registry.ExactlyOnce, Kind: registry.AsyncSink, AtMostOnce: true, Runs: true,
		Summary: "delivers committed outputs to a queue through a producer session (seqNo dedup)",
		Parse:   func(f *yson.Fields) any { return parseSink(f, true) },
		Columns: sinkColumns,
	})
}

func parseSource(f *yson.Fields) any {
	q := &SourceParams{}
	q.Cluster, q.QueuePath = registry.ClusterPath(f, "queue_path")
	var consumerCluster string
	consumerCluster, q.ConsumerPath = registry.ClusterPath(f, "consumer_path")
	sameCluster(f, "consumer_path", q.Cluster, consumerCluster)
	q.Finite = f.Bool("finite", false)
	q.TryParseFlowQueueMeta = f.Bool("try_parse_flow_queue_meta", true)
	q.FlowQueueMetaColumn = f.String("flow_queue_meta_column", "flow_queue_meta")
	q.IgnoreMalformedMeta = f.Bool("ignore_malformed_flow_queue_meta", false)
	q.PartitionFilter = registry.PartitionFilter(f)
	f.Duration("update_info_period", 0)
	f.Float("byte_size_alpha", 0)
	f.Duration("update_partition_count_period", 0)
	f.Duration("update_partition_count_retry_min_backoff", 0)
	return q
}

func parseSink(f *yson.Fields, async bool) any {
	q := &SinkParams{}
	q.Cluster, q.QueuePath = registry.ClusterPath(f, "queue_path")
	q.WriteFlowQueueMeta = f.Bool("write_flow_queue_meta", false)
	q.FlowQueueMetaColumn = f.String("flow_queue_meta_column", "flow_queue_meta")
	q.ColumnFilter = f.Strings("column_filter", true)
	routing := []string{"tablet_index_expression", "tablet_index_routing_hash_expression", "tablet_index_routing_hash_policy", "tablet_count"}
	if async {
		var producerCluster string
		producerCluster, q.ProducerPath = registry.ClusterPath(f, "producer_path")
		sameCluster(f, "producer_path", q.Cluster, producerCluster)
		q.RequireSyncReplica = f.Bool("require_sync_replica", true)
		for _, key := range routing {
			if f.Has(key) {
				f.Node(key)
				f.Errorf(key, "the async queue sink does not accept routing parameters")
			}
		}
		return q
	}
	if q.Cluster != "" {
		f.Errorf("queue_path", "the sync queue sink writes in the epoch's transaction, on the pipeline's cluster only: cluster %q is another; write there with NYT::NFlow::TAsyncQueueSink", q.Cluster)
	}
	q.TabletIndexExpression = f.String("tablet_index_expression", "")
	q.TabletIndexRoutingHashExpression = f.String("tablet_index_routing_hash_expression", "")
	q.TabletIndexRoutingHashPolicy = f.Enum("tablet_index_routing_hash_policy", "", "range", "modulo")
	q.TabletCount = f.Int("tablet_count", 0, 1, math.MaxInt32)
	if q.TabletIndexExpression != "" && q.TabletIndexRoutingHashExpression != "" {
		f.Errorf("tablet_index_routing_hash_expression", "set either tablet_index_expression or tablet_index_routing_hash_expression, not both")
	}
	if q.TabletIndexRoutingHashPolicy != "" && q.TabletIndexRoutingHashExpression == "" {
		f.Errorf("tablet_index_routing_hash_policy", "requires tablet_index_routing_hash_expression")
	}
	f.Duration("update_partition_count_period", 0)
	return q
}

func sinkColumns(params any) map[string][]string {
	return map[string][]string{"column_filter": params.(*SinkParams).ColumnFilter}
}

// sameCluster reports at key when its path names another cluster than the queue's: a
// consumer or producer lives with its queue (a path without a cluster is on the queue's).
func sameCluster(f *yson.Fields, key, queue, other string) {
	if other == "" || other == queue {
		return
	}
	where := "the pipeline's cluster"
	if queue != "" {
		where = "cluster " + queue
	}
	f.Errorf(key, "is on cluster %s, the queue on %s: a consumer or producer is on its queue's cluster", other, where)
}
