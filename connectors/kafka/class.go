// Package kafka connects yt-flow to Kafka: the source (TKafkaSource) and the sink
// (TKafkaSink). The spec accepts and validates both; the runtime does not run them yet.
package kafka

import (
	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/yson"
)

// Class is the canonical name of both Kafka classes (a source and a sink).
const Class = "kafka"

// SourceParams are the parameters of TKafkaSource.
type SourceParams struct {
	Topic, GroupID         string // required
	MaxBufferBytes         int64  // default 64 MiB
	UseConsumerGroupOffset bool   // default true
}

// SinkParams are the parameters of TKafkaSink.
type SinkParams struct {
	Topic           string // required
	PayloadColumn   string // default "data"
	KeyColumn       string
	MessageIDHeader string
	ExactlyOnce     bool
}

func init() {
	registry.Register(registry.Class{
		Name: Class, Role: registry.Source, FlowNames: []string{"NYT::NFlow::TKafkaSource"},
		Guarantee: registry.ExactlyOnce,
		Summary:   "reads topic partitions; offsets kept in the pipeline state, advanced with the commit",
		Parse:     parseSource,
	})
	registry.Register(registry.Class{
		Name: Class, Role: registry.Sink, FlowNames: []string{"NYT::NFlow::TKafkaSink"},
		Guarantee: registry.ExactlyOnce, Kind: registry.AsyncSink, AtMostOnce: true,
		Summary: "delivers committed outputs in Kafka transactions with a progress marker",
		Parse:   parseSink,
		Columns: func(params any) map[string][]string {
			p := params.(*SinkParams)
			cols := map[string][]string{"payload_column": {p.PayloadColumn}}
			if p.KeyColumn != "" {
				cols["key_column"] = []string{p.KeyColumn}
			}
			return cols
		},
	})
}

func parseSource(f *yson.Fields) any {
	k := &SourceParams{}
	k.Topic = f.RequiredString("topic")
	k.GroupID = f.RequiredString("group_id")
	registry.PartitionFilter(f)
	f.Duration("update_partition_count_period", 0)
	f.Duration("metadata_timeout", 0)
	k.MaxBufferBytes = f.Size("max_buffer_bytes", 64<<20)
	k.UseConsumerGroupOffset = f.Bool("use_consumer_group_offset", true)
	return k
}

func parseSink(f *yson.Fields) any {
	k := &SinkParams{}
	k.Topic = f.RequiredString("topic")
	k.PayloadColumn = f.String("payload_column", "data")
	k.KeyColumn = f.String("key_column", "")
	k.MessageIDHeader = f.String("message_id_header", "")
	k.ExactlyOnce = f.Bool("exactly_once", false)
	return k
}
