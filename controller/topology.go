package controller

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ytflow/yt-flow/internal/autopart"
	"github.com/ytflow/yt-flow/internal/throttle"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytstore"
)

// Topology is what scheduling needs to know of the static and dynamic specs.
type Topology struct {
	// Computations sorted by ID.
	Computations []Computation
	// Throttlers are the distributed throttlers of the dynamic spec, by id (nil: none).
	Throttlers map[string]throttle.Config
	// ValidateBinaryVersion and ValidateBinaryChecksum are the spec's validate_binary_version
	// and validate_binary_checksum: a controller whose FlowCoreVersion is not BinaryVersion,
	// or whose binary's SHA-256 is not BinaryChecksum, pauses the pipeline.
	ValidateBinaryVersion, ValidateBinaryChecksum bool
	BinaryVersion, BinaryChecksum                 string
	// AwaitsWatermarks is set when something in the pipeline waits for a watermark
	// (spec.Pipeline.AwaitsWatermarks: event_time or system_time timers, input_ordering,
	// watermark_alignment): the leader then also publishes watermarks between its cycles
	// (cycler.peekWatermarks).
	AwaitsWatermarks bool
}

// Computation is one computation as scheduling sees it.
type Computation struct {
	ID string
	// Sources is non-empty for source computations: one partition per source
	// partition. Otherwise the computation is keyed and partitioned by hash
	// ranges.
	Sources []Source
	// PartitionCount is the number of hash-range partitions of a keyed
	// computation: desired_partition_count, or with Auto the count it starts with.
	PartitionCount int
	// Auto, for a keyed computation without desired_partition_count, partitions it by load
	// (autopart.go): its partition count follows the measured load within Auto's bounds and
	// targets. nil: PartitionCount equal ranges.
	Auto *autopart.Params
	// WeightMultiplier and InterruptingWeightMultiplier scale the measured weight of its jobs,
	// of a retiring partition's job for the latter (weight_multiplier 1,
	// interrupting_weight_multiplier 0.1; rebalance.go). 0 reads as 1 and 0.
	WeightMultiplier, InterruptingWeightMultiplier float64
	// Draining is the dynamic per-computation draining flag.
	Draining bool
	// RelaxedOrdering is distribution_ordering = "relaxed": after a change of
	// the partition count, new partitions start at once instead of waiting
	// until the retiring partitions with overlapping ranges have drained, and
	// per-key order across the change is not kept.
	RelaxedOrdering bool
	// IdlePartitions is the source computation's watermark_generator.idle_partitions rule
	// (nil: idle jobs count like any other in the EventWatermark).
	IdlePartitions *IdleRule
	// LateDataPartitions is the source computation's watermark_generator.late_data_partitions
	// rule (nil: the smallest bound of its jobs holds the EventWatermark).
	LateDataPartitions *LateDataRule
	// Inputs and Outputs are the computation's input and output stream ids (sorted); event
	// watermarks propagate along them (StreamWatermarkTracker).
	Inputs, Outputs []string
	// AlignmentGroup is a source computation's watermark_alignment.group_name ("" without
	// watermark_alignment) and DriftBound its drift_bound.
	AlignmentGroup string
	DriftBound     time.Duration
	// ReadDelays is watermark_alignment.read_delays by source stream (nil: none).
	ReadDelays map[string]time.Duration
	// RowsThrottler is the dynamic input_rows_throttler_id ("" for none) and
	// RowsThrottlerClass its class ("" for default).
	RowsThrottler, RowsThrottlerClass string
	// BytesThrottler is the dynamic input_bytes_throttler_id ("" for none) and
	// BytesThrottlerClass its class ("" for default).
	BytesThrottler, BytesThrottlerClass string
}

// LateDataRule lets the EventWatermark pass a computation's lagging jobs: over their bounds it
// is max(the smallest, the Percentile-th percentile − Delay) (EventWatermarkBound).
type LateDataRule struct {
	Percentile float64 // (0, 100]
	Delay      time.Duration
}

// IdleRule leaves idle source jobs out of the EventWatermark: a job idle (its
// job_status.event_idle_since) for at least Duration, while at most MaxRatio of the
// computation's jobs are left out (EventWatermarkBound).
type IdleRule struct {
	Duration time.Duration
	MaxRatio float64
}

// Source is one source of a source computation.
type Source struct {
	// ID is the source (stream) id.
	ID string
	// ListKey, when set, names the listing of the source's partitions in
	// Input.SourcePartitions (the connector lists them: a queue's tablets); an
	// empty key means one partition, index 0.
	ListKey string
	// Class and Params are the source's connector class and typed parameters,
	// for the driver that lists the partitions.
	Class  string
	Params any
	// Dynamic are the source's dynamic parameters as its class parsed them (nil: none, or
	// they do not parse; the job reports that).
	Dynamic any
}

// Listed returns the sources whose partitions the driver lists, one per ListKey.
func (t Topology) Listed() []Source {
	var out []Source
	for _, c := range t.Computations {
		for _, s := range c.Sources {
			if s.ListKey != "" && !slices.ContainsFunc(out, func(o Source) bool { return o.ListKey == s.ListKey }) {
				out = append(out, s)
			}
		}
	}
	return out
}

func parseTopology(attrs *ytstore.Attributes) (Topology, error) {
	p, err := spec.ParsePipeline(attrs.Spec)
	if err != nil {
		return Topology{}, fmt.Errorf("@spec (version %d): %w", attrs.SpecVersion, err)
	}
	var dyn *spec.DynamicPipeline
	if len(attrs.DynamicSpec) > 0 {
		if dyn, err = spec.ParseDynamic(attrs.DynamicSpec); err != nil {
			return Topology{}, fmt.Errorf("@dynamic_spec (version %d): %w", attrs.DynamicSpecVersion, err)
		}
	}
	return TopologyOf(p, dyn), nil
}

// parallel calls f on every item with bounded concurrency and returns the
// results in item order. It returns after all calls have returned.
func parallel[T, R any](items []T, f func(T) (R, error)) ([]R, []error) {
	res := make([]R, len(items))
	errs := make([]error, len(items))
	sem := make(chan struct{}, pingConcurrency)
	var wg sync.WaitGroup
	for i, it := range items {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			res[i], errs[i] = f(it)
		}()
	}
	wg.Wait()
	return res, errs
}
