package controller

import (
	"cmp"
	"slices"
	"sort"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/internal/autopart"

	"github.com/ytflow/yt-flow/internal/throttle"
	"github.com/ytflow/yt-flow/spec"
)

// TopologyOf derives the topology from parsed specs. dyn may be nil.
func TopologyOf(p *spec.Pipeline, dyn *spec.DynamicPipeline) Topology {
	var t Topology
	if p == nil {
		return t
	}
	t.ValidateBinaryVersion, t.BinaryVersion = p.ValidateBinaryVersion, p.BinaryVersion
	t.ValidateBinaryChecksum, t.BinaryChecksum = p.ValidateBinaryChecksum, p.BinaryChecksum
	t.AwaitsWatermarks = p.AwaitsWatermarks()
	for id, c := range p.Computations {
		d := dyn.Computation(id)
		tc := Computation{ID: id, PartitionCount: max(d.DesiredPartitionCount, 1), Draining: d.Draining, RelaxedOrdering: c.DistributionOrdering == "relaxed",
			WeightMultiplier: d.Partitioning.WeightMultiplier, InterruptingWeightMultiplier: d.Partitioning.InterruptingWeightMultiplier}
		tc.RowsThrottler, tc.RowsThrottlerClass = d.InputRowsThrottlerID, d.InputRowsThrottlerClassID
		tc.BytesThrottler, tc.BytesThrottlerClass = d.InputBytesThrottlerID, d.InputBytesThrottlerClassID
		tc.Inputs = slices.Sorted(slices.Values(c.InputStreamIDs))
		tc.Outputs = slices.Sorted(slices.Values(c.OutputStreamIDs))
		if c.Kind.Source() {
			if ws := c.Watermark; ws != nil && ws.Alignment != nil {
				tc.AlignmentGroup, tc.DriftBound, tc.ReadDelays = ws.Alignment.GroupName, ws.Alignment.DriftBound, ws.Alignment.ReadDelays
			}
			if ws := c.Watermark; ws != nil && ws.IdlePartitions != nil {
				tc.IdlePartitions = &IdleRule{Duration: ws.IdlePartitions.Duration, MaxRatio: ws.IdlePartitions.MaxRatio}
			}
			if ws := c.Watermark; ws != nil && ws.LateDataPartitions != nil {
				tc.LateDataPartitions = &LateDataRule{Percentile: ws.LateDataPartitions.Percentile, Delay: ws.LateDataPartitions.Delay}
			}
			for sid, s := range c.Sources {
				src := Source{ID: sid, Params: s.Params}
				if s.Class != nil {
					src.Class = s.Class.Name
					var dp map[string]any
					if ds := d.SourceStreams[sid]; ds != nil {
						dp = ds.Parameters
					}
					src.Dynamic, _ = spec.DynamicParams(s.Class, s.Params, dp, "")
					if ctors, ok := connector.SourceOf(s.Class.Name); ok && ctors.Partitions != nil {
						src.ListKey = sourcePrefix(id, sid)
					}
				}
				tc.Sources = append(tc.Sources, src)
			}
			sort.Slice(tc.Sources, func(i, j int) bool { return tc.Sources[i].ID < tc.Sources[j].ID })
		} else {
			if d.MinPartitionCount > 0 {
				tc.PartitionCount = max(tc.PartitionCount, d.MinPartitionCount)
			}
			if d.MaxPartitionCount > 0 {
				tc.PartitionCount = min(tc.PartitionCount, d.MaxPartitionCount)
			}
			if d.DesiredPartitionCount == 0 {
				tc.Auto = autoParams(d)
				tc.PartitionCount = tc.Auto.Initial()
			}
		}
		t.Computations = append(t.Computations, tc)
	}
	sort.Slice(t.Computations, func(i, j int) bool { return t.Computations[i].ID < t.Computations[j].ID })
	if dyn != nil && len(dyn.ThrottlerSpecs) > 0 {
		t.Throttlers = map[string]throttle.Config{}
		for id, th := range dyn.ThrottlerSpecs {
			t.Throttlers[id] = throttle.Config{Limit: th.Limit, Period: th.Period, MaxGrant: th.MaxGrantAmount, Weights: th.Classes}
		}
	}
	return t
}

// autoParams are the partitioning-by-load parameters of a keyed computation without
// desired_partition_count.
func autoParams(d spec.DynamicComputation) *autopart.Params {
	pp := d.Partitioning
	p := autopart.DefaultParams()
	p.Min = cmp.Or(d.MinPartitionCount, p.Min)
	p.Max = cmp.Or(d.MaxPartitionCount, p.Max)
	if d.MaxPartitionCount > 0 && d.MinPartitionCount == 0 {
		p.Min = min(p.Min, p.Max) // max_partition_count below the default minimum
	}
	p.Targets = autopart.Load{CPU: pp.CPULoad, Memory: pp.MemoryUsed, Messages: pp.MessagesPerSecond, Bytes: pp.BytesPerSecond, Timers: pp.TimerCount}
	p.Deviation, p.DoubleDelay, p.HalfDelay = pp.Deviation, pp.DoubleDelay, pp.HalfDelay
	return &p
}
