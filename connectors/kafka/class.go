// Package kafka connects yt-flow to Kafka through franz-go: the source TKafkaSource (one Flow
// partition per Kafka partition, offsets kept in the pipeline state) and the async sink
// TKafkaSink (Kafka transactions with a progress marker). Both take their connection from the
// static resource KafkaClient (TKafkaClient) of the pipeline spec, as in Flow; see
// ResolveClient. TAtLeastOnceKafkaSink is a sync at-least-once sink: an epoch's records are
// acknowledged by Kafka before the epoch commits.
package kafka

import (
	"fmt"
	"time"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/yson"
)

// Class is the canonical name of the Kafka source and of the Kafka async sink.
const Class = "kafka"

// AtLeastOnceSinkClass is the canonical name of TAtLeastOnceKafkaSink.
const AtLeastOnceSinkClass = "at_least_once_kafka"

// SourceParams are the static parameters of TKafkaSource.
type SourceParams struct {
	Topic, GroupID string // required
	// PartitionFilter lists [begin, end) Kafka partition ranges; nil reads every partition.
	PartitionFilter            [][2]int64
	UpdatePartitionCountPeriod time.Duration // default 60s
	MetadataTimeout            time.Duration // default 30s; bounds metadata and offset requests
	MaxBufferBytes             int64         // default 64 MiB; caps a reader's fetch buffer
	UseConsumerGroupOffset     bool          // default true
}

// String names the source: "kafka topic <topic>".
func (p *SourceParams) String() string { return "kafka topic " + p.Topic }

// Malformed message policies (malformed_message_policy).
const (
	PolicyFail = "fail"
	PolicyDrop = "drop"
	PolicyKeep = "keep"
)

// SourceDynamicParams are the dynamic parameters of TKafkaSource.
type SourceDynamicParams struct {
	PollTimeout           time.Duration // default 200ms: how long a read waits for records
	WatermarkUpdatePeriod time.Duration // default 5s (accepted; the runtime computes watermarks itself)
	// MalformedMessagePolicy is fail (default), drop or keep: what a record whose value fails
	// the source's unpack step becomes (see Source).
	MalformedMessagePolicy string
}

// Delivery guarantees of TKafkaSink (delivery_guarantee).
const (
	ExactlyOnce = "exactly_once"
	AtLeastOnce = "at_least_once"
)

// SinkParams are the parameters of TKafkaSink (and of TAtLeastOnceKafkaSink, which has no
// delivery_guarantee).
type SinkParams struct {
	Topic           string // required
	PayloadColumn   string // default "data"
	KeyColumn       string
	MessageIDHeader string
	// DeliveryGuarantee is exactly_once (default: transactions with a progress marker) or
	// at_least_once (the idempotent producer, no transactions).
	DeliveryGuarantee string
}

func init() {
	registry.Register(registry.Class{
		Name: Class, Role: registry.Source, FlowNames: []string{"NYT::NFlow::TKafkaSource"},
		Guarantee: registry.ExactlyOnce, Runs: true,
		Summary:      "reads topic partitions; offsets kept in the pipeline state, advanced with the commit",
		Parse:        parseSource,
		ParseDynamic: parseSourceDynamic,
	})
	registry.Register(registry.Class{
		Name: Class, Role: registry.Sink, FlowNames: []string{"NYT::NFlow::TKafkaSink"},
		Guarantee: registry.ExactlyOnce, Kind: registry.AsyncSink, AtMostOnce: true, Runs: true,
		Summary:  "delivers committed outputs in Kafka transactions with a progress marker",
		Parse:    func(f *yson.Fields) any { return parseSink(f, true) },
		Columns:  sinkColumns,
		Validate: validateSink,
	})
	registry.Register(registry.Class{
		Name: AtLeastOnceSinkClass, Role: registry.Sink, FlowNames: []string{"NYT::NFlow::TAtLeastOnceKafkaSink"},
		Guarantee: registry.AtLeastOnce, Kind: registry.AtLeastOnceSyncSink, Runs: true,
		Summary:  "writes an epoch's records before its commit (fresh idempotent producer per start)",
		Parse:    func(f *yson.Fields) any { return parseSink(f, false) },
		Columns:  sinkColumns,
		Validate: validateSink,
	})
}

func sinkColumns(params any) map[string][]string {
	p := params.(*SinkParams)
	cols := map[string][]string{"payload_column": {p.PayloadColumn}}
	if p.KeyColumn != "" {
		cols["key_column"] = []string{p.KeyColumn}
	}
	return cols
}

// recordTypes are the column types whose values have record bytes (arena.bytesOf): strings as they
// are, numbers and booleans in decimal text.
var recordTypes = map[schema.Type]bool{
	schema.TypeString: true, schema.TypeBytes: true, schema.TypeBoolean: true,
	schema.TypeInt8: true, schema.TypeInt16: true, schema.TypeInt32: true, schema.TypeInt64: true,
	schema.TypeUint8: true, schema.TypeUint16: true, schema.TypeUint32: true, schema.TypeUint64: true,
	schema.TypeFloat32: true, schema.TypeFloat64: true,
}

// validateSink checks that payload_column and key_column name columns whose values have
// record bytes in every input stream (a missing column is the spec's own error).
func validateSink(params any, inputs []registry.Input, report func(key, format string, args ...any)) {
	p := params.(*SinkParams)
	for _, in := range inputs {
		for _, kc := range [][2]string{{"payload_column", p.PayloadColumn}, {"key_column", p.KeyColumn}} {
			key, col := kc[0], kc[1]
			for _, c := range in.Schema.Columns {
				if col != "" && c.Name == col && (c.ComplexType != nil || !recordTypes[c.Type]) {
					report(key, "column %q of stream %q has type %s, which has no record bytes: name a string, number or boolean column", col, in.ID, typeName(c))
				}
			}
		}
	}
}

func typeName(c schema.Column) string {
	if c.ComplexType != nil {
		return fmt.Sprint(c.ComplexType)
	}
	return string(c.Type)
}

func parseSource(f *yson.Fields) any {
	k := &SourceParams{}
	k.Topic = f.RequiredString("topic")
	k.GroupID = f.RequiredString("group_id")
	k.PartitionFilter = registry.PartitionFilter(f)
	k.UpdatePartitionCountPeriod = positive(f, "update_partition_count_period", time.Minute)
	k.MetadataTimeout = positive(f, "metadata_timeout", 30*time.Second)
	k.MaxBufferBytes = f.Size("max_buffer_bytes", 64<<20)
	if k.MaxBufferBytes <= 0 {
		f.Errorf("max_buffer_bytes", "must be positive")
		k.MaxBufferBytes = 64 << 20
	}
	k.UseConsumerGroupOffset = f.Bool("use_consumer_group_offset", true)
	return k
}

func parseSourceDynamic(f *yson.Fields, _ any) any {
	return &SourceDynamicParams{
		PollTimeout:            positive(f, "poll_timeout", 200*time.Millisecond),
		WatermarkUpdatePeriod:  positive(f, "watermark_update_period", 5*time.Second),
		MalformedMessagePolicy: f.Enum("malformed_message_policy", PolicyFail, PolicyFail, PolicyDrop, PolicyKeep),
	}
}

// positive reads a duration that must be above zero.
func positive(f *yson.Fields, key string, def time.Duration) time.Duration {
	d := f.Duration(key, def)
	if d <= 0 {
		f.Errorf(key, "must be positive")
		return def
	}
	return d
}

// parseSink reads the sink parameters; async: TKafkaSink, which also has delivery_guarantee
// and the older spelling exactly_once (a bool: true is exactly_once, false at_least_once;
// both set and disagreeing is an error).
func parseSink(f *yson.Fields, async bool) any {
	k := &SinkParams{}
	k.Topic = f.RequiredString("topic")
	k.PayloadColumn = f.String("payload_column", "data")
	if k.PayloadColumn == "" {
		f.Errorf("payload_column", "must not be empty")
	}
	k.KeyColumn = f.String("key_column", "")
	k.MessageIDHeader = f.String("message_id_header", "")
	if !async {
		k.DeliveryGuarantee = AtLeastOnce
		return k
	}
	k.DeliveryGuarantee = f.Enum("delivery_guarantee", ExactlyOnce, ExactlyOnce, AtLeastOnce)
	if eo := f.OptBool("exactly_once"); eo != nil {
		legacy := AtLeastOnce
		if *eo {
			legacy = ExactlyOnce
		}
		switch {
		case !f.Has("delivery_guarantee"):
			k.DeliveryGuarantee = legacy
		case legacy != k.DeliveryGuarantee:
			f.Errorf("exactly_once", "disagrees with delivery_guarantee %q", k.DeliveryGuarantee)
		}
	}
	return k
}
