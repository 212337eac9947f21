// Package random is the random source (TRandomSource), for tests and load generation: each
// of partition_count partitions emits rows {id; partition; offset; key; payload} generated
// from a PRNG seeded by the partition index and the row offset, so a partition's rows are
// the same on every read and a restart reproduces them (the position is the next offset).
//
// A partition has partition_message_count rows (a finite source without it: 1e6, Flow's
// default message_count_mean; a non-finite one: no end). Row offset o of partition p has
// id = o × partition_count + p: the ids of a finite source are exactly
// 0..partition_count×partition_message_count−1. key is uniform in
// [0, message_key_range) (Flow draws it from a Poisson distribution), payload is a string of
// letters whose length is uniform in [0, 2×message_size_mean].
//
// Flow makes every parameter but finite dynamic. Here partition_count,
// partition_message_count, message_size_mean and message_key_range are static parameters:
// they fix the partitions the controller lists and the rows of each; the dynamic parameters
// refuse them with that reason, and accept Flow's others (message_count_mean,
// reported_backlog_*) without applying them; unavailable_threshold is the runtime's
// (connector.Unavailability), though a random source's reads do not fail.
package random

import (
	"time"

	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/yson"
)

// Class is the canonical name of the random source.
const Class = "random"

// DefaultFiniteCount is the number of rows of a partition of a finite source without
// partition_message_count: Flow's default message_count_mean.
const DefaultFiniteCount = 1_000_000

// Params are the parameters of TRandomSource.
type Params struct {
	Finite bool
	// PartitionCount is the number of partitions: default 3, at most 65536.
	PartitionCount int64
	// PartitionMessageCount is the number of rows of each partition. 0 (the default) means
	// without end for a non-finite source and DefaultFiniteCount rows for a finite one.
	PartitionMessageCount int64
	// MessageSizeMean is the mean payload length in bytes: default 1024, at most 1Mi.
	MessageSizeMean int64
	// MessageKeyRange bounds the key: [0, MessageKeyRange), default 1024.
	MessageKeyRange int64
}

// IsFinite tells whether the source completes.
func (p *Params) IsFinite() bool { return p.Finite }

// Dynamic are the dynamic parameters of TRandomSource that this runtime accepts; none of
// them applies yet.
type Dynamic struct {
	MessageCountMean                 float64 // 1e6
	ReportedBacklogBytesPerSecond    float64
	ReportedBacklogMessagesPerSecond float64
	UnavailableThreshold             time.Duration // 5m
}

func init() {
	registry.Register(registry.Class{
		Name: Class, Role: registry.Source, FlowNames: []string{"NYT::NFlow::TRandomSource"},
		Guarantee: registry.ExactlyOnce, Runs: true,
		Summary:      "generates rows, for tests and load; deterministic per partition and offset",
		Parse:        parse,
		ParseDynamic: parseDynamic,
	})
}

func parse(f *yson.Fields) any {
	p := &Params{
		Finite:                f.Bool("finite", false),
		PartitionCount:        f.Int("partition_count", 3, 1, 1<<16),
		PartitionMessageCount: f.Int("partition_message_count", 0, 0, 1<<40),
		MessageSizeMean:       f.Int("message_size_mean", 1024, 0, 1<<20),
		MessageKeyRange:       f.Int("message_key_range", 1024, 1, 1<<62),
	}
	if p.Finite && p.PartitionMessageCount == 0 {
		p.PartitionMessageCount = DefaultFiniteCount
	}
	return p
}

// static are the keys Flow has as dynamic parameters that fix the rows here.
var static = []string{"partition_count", "partition_message_count", "message_size_mean", "message_key_range"}

func parseDynamic(f *yson.Fields, _ any) any {
	d := &Dynamic{
		MessageCountMean:                 f.Float("message_count_mean", 1e6),
		ReportedBacklogBytesPerSecond:    f.Float("reported_backlog_bytes_per_second", 0),
		ReportedBacklogMessagesPerSecond: f.Float("reported_backlog_messages_per_second", 0),
		UnavailableThreshold:             f.Duration("unavailable_threshold", 5*time.Minute),
	}
	for _, key := range static {
		if f.Node(key) != nil {
			f.Errorf(key, "is a static parameter in yt-flow (it fixes the partitions and their rows); set it in the source's static parameters")
		}
	}
	return d
}

// UnavailableAfter implements connector.Unavailability: unavailable_threshold.
func (d *Dynamic) UnavailableAfter() time.Duration { return d.UnavailableThreshold }
