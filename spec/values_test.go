package spec

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"
	ytyson "go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/connectors/arrivalorder"
	"github.com/ytflow/yt-flow/connectors/clickhouse"
	"github.com/ytflow/yt-flow/connectors/httpsink"
	"github.com/ytflow/yt-flow/connectors/kafka"
	"github.com/ytflow/yt-flow/connectors/queue"
	"github.com/ytflow/yt-flow/connectors/servicelog"
	"github.com/ytflow/yt-flow/connectors/sortedtable"
	"github.com/ytflow/yt-flow/connectors/statictable"
	pyson "github.com/ytflow/yt-flow/yson"
)

func TestAllFeaturesValues(t *testing.T) {
	cfg, err := ParseConfigFile("testdata/valid/all_features.yson")
	require.NoError(t, err)
	assert.Equal(t, "//home/all/pipeline", cfg.Path)
	assert.Equal(t, "localhost:8000", cfg.Proxy)
	assert.Equal(t, "my-cluster/role", cfg.ClusterURL)
	assert.False(t, cfg.SetFlowCoreTarget)
	assert.True(t, cfg.AbortOnUnrecognizedOptions)
	require.NotNil(t, cfg.Vanilla)

	pl := cfg.Spec
	require.Len(t, pl.Computations, 9)

	q := pl.Computations["queue_in"]
	assert.Equal(t, KindTransformSource, q.Kind)
	assert.Equal(t, "TProcessFunctionSourceComputation", q.ClassName)
	assert.Equal(t, map[string]any{"prefix": "x"}, q.ProcessingFunctionParameters)
	src := q.Sources["q"]
	qp := src.Params.(*queue.SourceParams)
	assert.Equal(t, "queue", src.Class.Name)
	assert.Equal(t, "<cluster=c>//in", qp.QueuePath)
	assert.Equal(t, "//consumer", qp.ConsumerPath)
	assert.False(t, qp.TryParseFlowQueueMeta)
	assert.Equal(t, "flow_queue_meta", qp.FlowQueueMetaColumn)
	assert.Equal(t, [][2]int64{{0, 4}}, qp.PartitionFilter)
	assert.Equal(t, "static_table", pl.Computations["table_in"].Sources["t"].Class.Name)
	assert.Equal(t, time.Hour, pl.Computations["table_in"].Sources["t"].Params.(*statictable.SourceParams).WatermarkDelay)
	assert.Equal(t, "//state", pl.Computations["servicelog_in"].Sources["s"].Params.(*servicelog.Params).Fetchers[0].TablePath)
	assert.True(t, pl.Computations["random_in"].Passthrough)
	assert.Equal(t, KindSwiftSource, pl.Computations["random_in"].Kind)
	assert.Equal(t, int64(64<<20), pl.Computations["kafka_in"].Sources["k"].Params.(*kafka.SourceParams).MaxBufferBytes)

	m := pl.Computations["mapper"]
	assert.Equal(t, KindSwiftMap, m.Kind)
	assert.True(t, m.AllowBatchingWithRelaxedGuarantees)
	assert.Equal(t, []string{"seen"}, m.InternalStates)
	assert.Equal(t, ExactlyOnce, m.ProcessingMode)
	assert.True(t, m.CompactDedup())
	assert.Equal(t, []string{"events"}, m.DependsOn("mapped"))
	assert.Equal(t, []string{"events"}, m.DependsOn("touch"), "timers default to all inputs")

	c := pl.Computations["counter"]
	assert.Equal(t, KindTransform, c.Kind)
	assert.Equal(t, AtLeastOnceConsistent, c.ProcessingMode)
	assert.False(t, c.CompactDedup(), "use_compact_input_messages overrides the automatic choice")
	assert.Equal(t, "relaxed", c.DistributionOrdering)
	require.Len(t, c.GroupBy.Columns, 2)
	assert.Equal(t, schema.Column{Name: "hash", Type: schema.TypeUint64, Required: true, Expression: "farm_hash(user)"}, c.GroupBy.Columns[0])
	assert.Equal(t, schema.TypeBytes, c.GroupBy.Columns[1].Type)
	assert.Equal(t, "event_time", c.Timers["flush"].TimeType)
	assert.True(t, c.Timers["flush"].DeduplicateEqualTimestamps)
	late := c.Timers["late-1"]
	assert.Equal(t, "current_time", late.TimeType)
	assert.Equal(t, map[string]time.Duration{"events": 5 * time.Second}, late.StreamsWithDelays)
	assert.False(t, late.DeduplicateEqualTimestamps)
	assert.Equal(t, []string{"flush", "mapped"}, c.DependsOn("totals"))
	assert.Equal(t, []string{"events", "flush", "late-1", "mapped"}, c.DependsOn("urls"), "outputs default to timers, inputs and sources")
	assert.Nil(t, c.DependsOn("nope"))

	sync := c.Sinks["sync"]
	assert.Equal(t, "sync_queue", sync.Class.Name)
	assert.Equal(t, "modulo", sync.Params.(*queue.SinkParams).TabletIndexRoutingHashPolicy)
	assert.Equal(t, int64(4), sync.Params.(*queue.SinkParams).TabletCount)
	assert.Nil(t, sync.AtMostOnce)
	async := c.Sinks["async"]
	assert.Equal(t, "async_queue", async.Class.Name)
	assert.Equal(t, &queue.SinkParams{QueuePath: "//out2", ProducerPath: "//producer", FlowQueueMetaColumn: "flow_queue_meta", RequireSyncReplica: true}, async.Params)
	assert.Equal(t, &AtMostOnceStrategy{Enabled: true, TotalQueueBytesLimit: 50e6, SuspendDestructionDuration: 10 * time.Second}, async.AtMostOnce)
	assert.Equal(t, "sorted_table", c.Sinks["table"].Class.Name)
	assert.Equal(t, "//t", c.Sinks["table"].Params.(*sortedtable.Params).TablePath)
	assert.True(t, c.Sinks["table"].Params.(*sortedtable.Params).RequireSyncReplica)
	ao := c.Sinks["arrival"].Params.(*arrivalorder.Params)
	assert.Equal(t, 24*time.Hour, ao.TableTTL)
	assert.Equal(t, 5*time.Minute, ao.TablePeriod)
	web := c.Sinks["web"]
	assert.Equal(t, "async_http", web.Class.Name)
	assert.Equal(t, "Idempotency-Key", web.Params.(*httpsink.Params).IdempotencyHeader)
	assert.Equal(t, int64(8), web.Params.(*httpsink.Params).MaxIdleConnections)
	assert.Equal(t, map[string]string{"X-A": "b"}, web.Params.(*httpsink.Params).Headers)
	assert.Equal(t, &AtMostOnceStrategy{Enabled: false, TotalQueueBytesLimit: 100 << 20, SuspendDestructionDuration: 10 * time.Second}, c.Sinks["kafka"].AtMostOnce)
	assert.Equal(t, "user", c.Sinks["kafka"].Params.(*kafka.SinkParams).PayloadColumn)
	assert.Equal(t, int64(9000), c.Sinks["ch"].Params.(*clickhouse.Params).Port)
	assert.Equal(t, []string{"a", "b"}, c.Sinks["ch"].Params.(*clickhouse.Params).Hosts)

	assert.True(t, pl.Computations["copier"].Passthrough)
	assert.Equal(t, KindTransform, pl.Computations["copier"].Kind)
	bn := pl.Computations["by_name"]
	assert.True(t, bn.ExperimentalEnableNonUintKey)
	assert.False(t, bn.CompactDedup())

	ev := pl.Streams["events"]
	require.NotNil(t, ev.Schema.Strict)
	assert.True(t, *ev.Schema.Strict)
	assert.Equal(t, "x", pl.Streams["kafka_events"].ClassName)

	d := cfg.Dynamic
	assert.Equal(t, "working", d.TargetState)
	dc := d.Computation("counter")
	assert.Equal(t, 250*time.Millisecond, dc.BatchDuration)
	assert.Equal(t, 500, dc.MaxRowsPerBatch)
	assert.Equal(t, int64(1<<20), dc.MaxBytesPerBatch)
	assert.Equal(t, 100*time.Millisecond, dc.EmptyBatchBackoff)
	assert.Equal(t, 30*time.Second, dc.LeaseCheckPeriod)
	assert.Equal(t, 3, dc.DesiredPartitionCount)
	assert.Equal(t, 8, dc.MaxPartitionCount)
	assert.Equal(t, 5*time.Minute, dc.MaxReadWindow)
	assert.Equal(t, int64(250000), dc.TimerStoreCountLimit)
	assert.Equal(t, int64(100<<30), dc.OutputStoreByteSizeLimit)
	assert.Equal(t, "is_null(user)", dc.SkipIfExpression)
	assert.Equal(t, map[string]any{"limit": int64(3)}, dc.ProcessingFunctionParameters)
	assert.True(t, d.Computation("queue_in").SourceStreams["q"].Draining)
	assert.Equal(t, &AtMostOnceStrategy{TotalQueueBytesLimit: 20 << 20, SuspendDestructionDuration: time.Minute}, dc.Sinks["async"].AtMostOnce)
	assert.Equal(t, map[string]any{"write_period": int64(100), "at_most_once_strategy": map[string]any{
		"total_queue_bytes_limit": "20Mi", "suspend_destruction_duration": "1m"}}, dc.Sinks["async"].Parameters)
	assert.Equal(t, DefaultDynamicComputation(), d.Computation("mapper"), "absent computations get the defaults")
	assert.True(t, d.EnableMermaidGraphDescribe)
	assert.Equal(t, "zstd_2", d.FlowViewCacheCodec)
}

func TestDynamicDefaults(t *testing.T) {
	want := DynamicComputation{
		BatchDuration: time.Second, MaxRowsPerBatch: 1000, MaxBytesPerBatch: 10 << 20,
		EmptyBatchBackoff: 250 * time.Millisecond, LeaseCheckPeriod: time.Minute,
		MaxReadWindow: 10 * time.Minute, BlockedTimeWindow: 10 * time.Minute,
		TimerStoreCountLimit: 250000, TimerStoreByteSizeLimit: 100 << 20,
		OutputStoreCountLimit: 1e9, OutputStoreByteSizeLimit: 100 << 30,
		Partitioning: Partitioning{WeightMultiplier: 1, InterruptingWeightMultiplier: 0.1, SinkChannelMultiplier: 3,
			CPULoad: 0.1, MemoryUsed: 300e6, MessagesPerSecond: 10000, BytesPerSecond: 2e6, TimerCount: 50000,
			Deviation: 1.1, DoubleDelay: 20 * time.Minute, HalfDelay: 200 * time.Minute},
	}
	var nilSpec *DynamicPipeline
	assert.Equal(t, want, nilSpec.Computation("x"))
	d, err := ParseDynamic([]byte(`{computations = {a = {batch_duration = 100; parameters = {desired_partition_count = 4}}}}`))
	require.NoError(t, err)
	assert.Equal(t, "unknown", d.TargetState)
	a := d.Computation("a")
	assert.Equal(t, 100*time.Millisecond, a.BatchDuration)
	assert.Equal(t, 4, a.DesiredPartitionCount)
	assert.Equal(t, 1000, a.MaxRowsPerBatch)
	assert.Equal(t, want, d.Computation("b"))
}

// TestPartitioningParameters: the partitioning parameters are read with Flow's defaults, and
// every bad value is reported at its YSON path.
func TestPartitioningParameters(t *testing.T) {
	d, err := ParseDynamic([]byte(`{computations = {a = {parameters = {
		desired_average_partition_messages_per_second = 20; desired_average_partition_bytes_per_second = 1000.5;
		desired_average_partition_memory_used = "1G"; allowed_partition_count_deviation = 1.5;
		partition_count_double_delay = "2s"; partition_count_half_delay = 60000; weight_multiplier = 2.0}}}}`))
	require.NoError(t, err)
	p := d.Computation("a").Partitioning
	assert.Equal(t, 20.0, p.MessagesPerSecond)
	assert.Equal(t, 1000.5, p.BytesPerSecond)
	assert.Equal(t, 1e9, p.MemoryUsed) // sizes: G is 10^9
	assert.Equal(t, 1.5, p.Deviation)
	assert.Equal(t, 2*time.Second, p.DoubleDelay)
	assert.Equal(t, time.Minute, p.HalfDelay)
	assert.Equal(t, 2.0, p.WeightMultiplier)
	assert.Equal(t, 0.1, p.CPULoad)

	_, err = ParseDynamic([]byte(`{computations = {a = {parameters = {
		desired_average_partition_cpu_load = 0; allowed_partition_count_deviation = 1.0;
		partition_count_half_delay = 0; interrupting_weight_multiplier = -1.0; desired_average_partition_timer_count = 0}}}}`))
	require.Error(t, err)
	for _, want := range []string{
		"computations/a/parameters/desired_average_partition_cpu_load: must be a positive number, got 0",
		"computations/a/parameters/allowed_partition_count_deviation: must be within 1.01..100, got 1",
		"computations/a/parameters/partition_count_half_delay: must be positive",
		"computations/a/parameters/interrupting_weight_multiplier: must be a non-negative number, got -1",
		"computations/a/parameters/desired_average_partition_timer_count",
	} {
		assert.Contains(t, err.Error(), want)
	}
}

func TestParsePipelinePaths(t *testing.T) {
	_, err := ParsePipeline([]byte(`{computations = {c = {computation_class_name = "transform"; processing_function = "F";
		group_by_schema = [{name = "k"; type = "uint64"}]; input_stream_ids = ["in"];
		sinks = {out = {sink_class_name = "sync_queue"; input_stream_ids = ["x"]; parameters = {}}}}}}`))
	require.Error(t, err)
	assert.Equal(t, `computations/c/input_stream_ids/0: stream "in" is not declared in streams
computations/c/sinks/out/input_stream_ids/0: stream "x" is not an output of computation "c"
computations/c/sinks/out/parameters/queue_path: required`, err.Error())
}

func TestWordCountExample(t *testing.T) {
	cfg, err := ParseConfigFile("../examples/word_count/pipeline.yson")
	require.NoError(t, err)
	assert.Equal(t, "//home/word_count/pipeline", cfg.Path)
	split, count := cfg.Spec.Computations["split"], cfg.Spec.Computations["count"]
	assert.Equal(t, "SplitWords", split.ProcessingFunction)
	assert.Equal(t, &queue.SourceParams{QueuePath: "//home/word_count/input", ConsumerPath: "//home/word_count/consumer",
		Finite: true, TryParseFlowQueueMeta: true, FlowQueueMetaColumn: "flow_queue_meta"}, split.Sources["lines"].Params)
	assert.Equal(t, "CountWords", count.ProcessingFunction)
	assert.True(t, count.CompactDedup())
	assert.Equal(t, "//home/word_count/counts", count.Sinks["table"].Params.(*sortedtable.Params).TablePath)
	assert.Equal(t, 100*time.Millisecond, cfg.Dynamic.Computation("split").BatchDuration)
	assert.Equal(t, 1, cfg.Dynamic.Computation("split").DesiredPartitionCount)
	assert.Equal(t, 4, cfg.Dynamic.Computation("count").DesiredPartitionCount)
}

func TestSessionsExample(t *testing.T) {
	cfg, err := ParseConfigFile("../examples/sessions/pipeline.yson")
	require.NoError(t, err)
	parse, sum := cfg.Spec.Computations["parse"], cfg.Spec.Computations["sum"]
	assert.Equal(t, KindSwiftMap, parse.Kind)
	assert.Equal(t, "ParseEvents", parse.ProcessingFunction)
	assert.Equal(t, "SumByUser", sum.ProcessingFunction)
	assert.Equal(t, "event_time", sum.Timers["flush"].TimeType)
	out := sum.Sinks["output"]
	assert.Equal(t, "async_queue", out.Class.Name)
	assert.Equal(t, "//home/sessions/output", out.Params.(*queue.SinkParams).QueuePath)
	assert.Nil(t, out.AtMostOnce, "the strategy is commented out")
}

func TestClassAliases(t *testing.T) {
	a := ClassAliases()
	for name, want := range map[string]string{
		"NYT::NFlow::TProcessFunctionComputation":         "transform",
		"TProcessFunctionComputation":                     "transform",
		"transform":                                       "transform",
		"NYT::NFlow::TPassthroughComputation":             "passthrough",
		"TSwiftMapComputation":                            "swift_map",
		"NYT::NFlow::TProcessFunctionSwiftMapComputation": "swift_map",
		"TSwiftPassthroughComputation":                    "swift_passthrough",
		"NYT::NFlow::TTransformOrderedSourceComputation":  "transform_source",
		"NYT::NFlow::TProcessFunctionSourceComputation":   "transform_source",
		"source":                         "transform_source",
		"TSwiftOrderedSourceComputation": "swift_source",
		"NYT::NFlow::TSwiftPassthroughOrderedSourceComputation": "swift_passthrough_source",
		"NYT::NFlow::TQueueSource":                              "queue",
		"queue":                                                 "queue",
		"TStaticTableSource":                                    "static_table",
		"NYT::NFlow::NStaticTableConnector::TSource":            "static_table",
		"TServiceLogSource":                                     "service_log",
		"TRandomSource":                                         "random",
		"TKafkaSource":                                          "kafka",
		"TSyncQueueSink":                                        "sync_queue",
		"NYT::NFlow::TAsyncQueueSink":                           "async_queue",
		"NYT::NFlow::NSortedDynamicTable::TSyncSink":            "sorted_table",
		"TSortedDynamicTableSink":                               "sorted_table",
		"TArrivalOrderTableSink":                                "arrival_order_table",
		"TAsyncHttpSink":                                        "async_http",
		"http":                                                  "async_http",
		"TKafkaSink":                                            "kafka",
		"TClickHouseBatchingSink":                               "clickhouse_batching",
		"clickhouse":                                            "clickhouse_batching",
	} {
		assert.Equal(t, want, a[name], name)
	}
}

// TestSpecSurvivesReencoding: the static and dynamic specs of a runner config, re-encoded from
// the generic tree (as they are stored on the pipeline node), parse to the same values.
func TestSpecSurvivesReencoding(t *testing.T) {
	for _, file := range []string{"testdata/valid/all_features.yson", "../examples/word_count/pipeline.yson", "../examples/sessions/pipeline.yson"} {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		cfg, err := ParseConfig(data)
		require.NoError(t, err, file)
		root, err := pyson.Decode(data)
		require.NoError(t, err)
		static, err := ytyson.Marshal(root.Get("spec").Any())
		require.NoError(t, err)
		pl, err := ParsePipeline(static)
		require.NoError(t, err, file)
		assert.Equal(t, cfg.Spec, pl, file)
		dynamic, err := ytyson.MarshalFormat(root.Get("dynamic_spec").Any(), ytyson.FormatBinary)
		require.NoError(t, err)
		d, err := ParseDynamic(dynamic)
		require.NoError(t, err, file)
		assert.Equal(t, cfg.Dynamic, d, file)
	}
}

// TestWatermarkStrategy: the keys of watermark_strategy the runtime interprets are read
// strictly (with their defaults); the other documented keys are accepted as written.
func TestWatermarkStrategy(t *testing.T) {
	const base = `{computations = {src = {computation_class_name = "NYT::NFlow::TSwiftPassthroughOrderedSourceComputation";
		source_streams = {in = {source_class_name = "NYT::NFlow::TQueueSource"; parameters = {queue_path = "//q"; consumer_path = "//c"}}};
		output_stream_ids = ["raw"]; watermark_strategy = WS}};
		streams = {raw = {schema = [{name = "ts"; type = "int64"}]}}}`
	parse := func(ws string) (*Pipeline, error) { return ParsePipeline([]byte(strings.Replace(base, "WS", ws, 1))) }

	p, err := parse(`{event_timestamp_assigner = {column = "ts"; format = "milliseconds"; limit_by_system_timestamp = %true};
		watermark_generator = {out_of_orderness_bound = 5000; idle_partitions = {duration = 60000; max_ratio = 0.4}};
		watermark_percentile = {value = 90.0; delay = 60000}}`)
	require.NoError(t, err)
	assert.Equal(t, &WatermarkStrategy{AssignerColumn: "ts", AssignerFormat: "milliseconds", LimitBySystemTimestamp: true,
		Generator: true, OutOfOrderness: 5 * time.Second, IdlePartitions: &IdlePartitions{Duration: time.Minute, MaxRatio: 0.4},
		Percentile: &WatermarkPercentile{Value: 90, Delay: time.Minute}},
		p.Computations["src"].Watermark)
	p, err = parse(`{watermark_alignment = {drift_bound = 60000; read_delays = {in = 1000}}}`)
	require.NoError(t, err)
	assert.Equal(t, &WatermarkAlignment{GroupName: "default-alignment-group", DriftBound: time.Minute,
		ReadDelays: map[string]time.Duration{"in": time.Second}}, p.Computations["src"].Watermark.Alignment)
	_, err = parse(`{watermark_alignment = {read_delays = {other = 1000}}}`)
	require.Error(t, err)
	assert.Equal(t, `computations/src/watermark_strategy/watermark_alignment/read_delays/other: stream "other" is not a source stream of this computation`, err.Error())
	p, err = parse(`{watermark_alignment = {}}`)
	require.NoError(t, err)
	assert.Equal(t, 20*time.Minute, p.Computations["src"].Watermark.Alignment.DriftBound, "drift_bound default: 20m")
	_, err = parse(`{watermark_alignment = {drift_bound = 0}}`)
	require.Error(t, err)
	assert.Equal(t, `computations/src/watermark_strategy/watermark_alignment/drift_bound: must be positive, got 0s`, err.Error())

	_, err = parse(`{watermark_percentile = {value = 101.0; delay = -1}}`)
	require.Error(t, err)
	assert.Equal(t, `computations/src/watermark_strategy/watermark_percentile/delay: duration -1: bad value: negative
computations/src/watermark_strategy/watermark_percentile/value: must be in (0, 100], got 101`, err.Error())

	p, err = parse(`{watermark_generator = {idle_partitions = {}}}`)
	require.NoError(t, err)
	assert.Equal(t, &IdlePartitions{Duration: time.Minute, MaxRatio: 0.4}, p.Computations["src"].Watermark.IdlePartitions,
		"idle_partitions defaults: 1m, 0.4")

	p, err = parse(`{watermark_generator = {late_data_partitions = {}}}`)
	require.NoError(t, err)
	assert.Equal(t, &LateDataPartitions{Percentile: 100, Delay: time.Minute}, p.Computations["src"].Watermark.LateDataPartitions,
		"late_data_partitions defaults: 100, 1m")
	p, err = parse(`{watermark_generator = {late_data_partitions = {value = 90.0; delay = 5000}}}`)
	require.NoError(t, err)
	assert.Equal(t, &LateDataPartitions{Percentile: 90, Delay: 5 * time.Second}, p.Computations["src"].Watermark.LateDataPartitions)
	_, err = parse(`{watermark_generator = {late_data_partitions = {value = 0.0}}}`)
	require.Error(t, err)
	assert.Equal(t, `computations/src/watermark_strategy/watermark_generator/late_data_partitions/value: must be in (0, 100], got 0`, err.Error())

	_, err = parse(`{watermark_generator = {idle_partitions = {duration = 0; max_ratio = 1.5; typo = 1}}}`)
	require.Error(t, err)
	assert.Equal(t, `computations/src/watermark_strategy/watermark_generator/idle_partitions/duration: must be positive, got 0s
computations/src/watermark_strategy/watermark_generator/idle_partitions/max_ratio: must be in (0, 1], got 1.5
computations/src/watermark_strategy/watermark_generator/idle_partitions/typo: unknown key`, err.Error())

	p, err = parse(`{event_timestamp_assigner = {column = "ts"}; watermark_generator = {}}`)
	require.NoError(t, err)
	assert.Equal(t, &WatermarkStrategy{AssignerColumn: "ts", AssignerFormat: "seconds", Generator: true, OutOfOrderness: time.Minute},
		p.Computations["src"].Watermark, "defaults: seconds, a 1m out-of-orderness bound")

	_, err = parse(`{event_timestamp_assigner = {column = "ts"; format = "hours"}; watermark_generator = {bound = 1}; typo = 1}`)
	require.Error(t, err)
	assert.Equal(t, `computations/src/watermark_strategy/event_timestamp_assigner/format: "hours" is not one of ["seconds" "milliseconds"]
computations/src/watermark_strategy/typo: unknown key
computations/src/watermark_strategy/watermark_generator/bound: unknown key`, err.Error())
}
