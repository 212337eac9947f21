package spec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/connectors/queue"
)

// crossClusterSpec is a runner config with a queue source and sinks whose paths are given.
func crossClusterSpec(source, consumer, syncQueue, asyncQueue, producer string) []byte {
	return []byte(`{path = "//p"; clusters = {a = "a-proxy:80"};
    spec = {computations = {c = {computation_class_name = "TProcessFunctionSourceComputation"; processing_function = "F";
        source_streams = {s = {source_class_name = "TQueueSource"; parameters = {queue_path = "` + source + `"; consumer_path = "` + consumer + `"}}};
        output_stream_ids = ["x"];
        sinks = {
            sync = {sink_class_name = "TSyncQueueSink"; input_stream_ids = ["x"]; parameters = {queue_path = "` + syncQueue + `"}};
            async = {sink_class_name = "TAsyncQueueSink"; input_stream_ids = ["x"]; parameters = {queue_path = "` + asyncQueue + `"; producer_path = "` + producer + `"}}}}};
        streams = {x = {schema = [{name = "k"; type = "string"}]}}}}`)
}

// TestCrossClusterQueuePaths: <cluster=NAME> in queue_path, consumer_path and producer_path
// names the queue's cluster (a consumer or producer path without one is on the queue's); the
// clusters map of the runner config is kept; a sync queue sink on another cluster, and a
// consumer or producer on another cluster than its queue, are spec errors naming the path.
func TestCrossClusterQueuePaths(t *testing.T) {
	cfg, err := ParseConfig(crossClusterSpec("<cluster=a>//in", "//consumer", "//out", "<cluster=a>//out2", "<cluster=a>//producer"))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": "a-proxy:80"}, cfg.Clusters)
	c := cfg.Spec.Computations["c"]
	src := c.Sources["s"].Params.(*queue.SourceParams)
	assert.Equal(t, "a", src.Cluster)
	assert.Equal(t, "//in", src.QueuePath)
	assert.Equal(t, "//consumer", src.ConsumerPath)
	async := c.Sinks["async"].Params.(*queue.SinkParams)
	assert.Equal(t, "a", async.Cluster)
	assert.Equal(t, "//out2", async.QueuePath)
	assert.Equal(t, "//producer", async.ProducerPath)
	assert.Equal(t, "", c.Sinks["sync"].Params.(*queue.SinkParams).Cluster)

	_, err = ParseConfig(crossClusterSpec("//in", "<cluster=b>//consumer", "<cluster=a>//out", "<cluster=a>//out2", "<cluster=b>//producer"))
	require.Error(t, err)
	for _, want := range []string{
		`spec/computations/c/source_streams/s/parameters/consumer_path: is on cluster b, the queue on the pipeline's cluster`,
		`spec/computations/c/sinks/sync/parameters/queue_path: the sync queue sink writes in the epoch's transaction, on the pipeline's cluster only: cluster "a" is another`,
		`spec/computations/c/sinks/async/parameters/producer_path: is on cluster b, the queue on cluster a`,
	} {
		assert.Contains(t, err.Error(), want)
	}

	_, err = ParseConfig([]byte(`{path = "//p"; clusters = {a = 1}; spec = {computations = {}}}`))
	require.ErrorContains(t, err, "clusters/a: want a cluster name mapped to a proxy")
}

// TestMultiClusterSinkPaths: TAsyncMultiClusterQueueSink takes its clusters from
// <clusters=[…]> in queue_path; a path without them is an error naming it.
func TestMultiClusterSinkPaths(t *testing.T) {
	doc := func(queuePath string) []byte {
		return []byte(`{path = "//p"; spec = {computations = {c = {computation_class_name = "TProcessFunctionSourceComputation"; processing_function = "F";
        source_streams = {s = {source_class_name = "TQueueSource"; parameters = {queue_path = "//in"; consumer_path = "//consumer"}}};
        output_stream_ids = ["x"];
        sinks = {m = {sink_class_name = "TAsyncMultiClusterQueueSink"; input_stream_ids = ["x"]; parameters = {queue_path = "` + queuePath + `"; producer_path = "//producer"}}}}};
        streams = {x = {schema = [{name = "k"; type = "string"}]}}}}`)
	}
	cfg, err := ParseConfig(doc("<clusters=[a;b]>//out"))
	require.NoError(t, err)
	p := cfg.Spec.Computations["c"].Sinks["m"].Params.(*queue.MultiSinkParams)
	assert.Equal(t, []string{"a", "b"}, p.Clusters)
	assert.Equal(t, "//out", p.QueuePath)
	assert.Equal(t, "//producer", p.ProducerPath)

	_, err = ParseConfig(doc("//out"))
	require.ErrorContains(t, err, `spec/computations/c/sinks/m/parameters/queue_path: "//out" names no clusters`)
	_, err = ParseConfig(doc("<clusters=[a;a]>//out"))
	require.ErrorContains(t, err, "want distinct cluster names")
}
