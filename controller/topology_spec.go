package controller

import (
	"slices"
	"sort"

	"github.com/ytflow/yt-flow/connectors/connector"

	"github.com/ytflow/yt-flow/internal/throttle"
	"github.com/ytflow/yt-flow/spec"
)

// TopologyOf derives the topology from parsed specs. dyn may be nil.
func TopologyOf(p *spec.Pipeline, dyn *spec.DynamicPipeline) Topology {
	var t Topology
	if p == nil {
		return t
	}
	for id, c := range p.Computations {
		d := dyn.Computation(id)
		tc := Computation{ID: id, PartitionCount: max(d.DesiredPartitionCount, 1), Draining: d.Draining, RelaxedOrdering: c.DistributionOrdering == "relaxed"}
		tc.RowsThrottler, tc.RowsThrottlerClass = d.InputRowsThrottlerID, d.InputRowsThrottlerClassID
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
