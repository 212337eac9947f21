package controller

import (
	"slices"
	"strings"
	"time"

	"github.com/ytflow/yt-flow/internal/watermark"
	"github.com/ytflow/yt-flow/ytstore"
)

// StreamWatermarkTracker keeps the EventWatermark of every stream and alignment group over
// scheduling cycles (watermark.Streams over each observation), with the two-observation
// rule of WatermarkTracker applied to each of them: the state of observation k is published
// only at a later observation in which every job with a status has reported again, as the minimum of both,
// and a watermark never decreases. A stream unavailable in either observation keeps its
// published value; so do the streams not downstream of an unavailable partition, which
// advance on their own.
//
// Invariant: a stream's published watermark never passes a bound a job upstream of it
// reported in either of two consecutive rounds of statuses, and never decreases
// (TestStreamWatermarkTracker).
type StreamWatermarkTracker struct {
	w       ytstore.EventWatermarks
	pending *streamSnapshot
	graph   watermark.Graph
}

type streamSnapshot struct {
	state   watermark.State
	updated map[string]uint64 // job id -> updated_at of the status the state used
}

// NewStreamWatermarkTracker returns a tracker that continues from the published watermarks
// (nil: none yet) and follows the graph and rules of t.
func NewStreamWatermarkTracker(published *ytstore.EventWatermarks, t Topology) *StreamWatermarkTracker {
	tr := &StreamWatermarkTracker{w: ytstore.EventWatermarks{Streams: map[string]uint64{}, Groups: map[string]uint64{}}}
	if published != nil {
		tr.w = published.Clone()
	}
	tr.SetTopology(t)
	return tr
}

// SetTopology makes the tracker follow a new spec version's graph and rules.
func (t *StreamWatermarkTracker) SetTopology(top Topology) { t.graph = top.WatermarkGraph() }

// Value returns a copy of the current watermarks.
func (t *StreamWatermarkTracker) Value() ytstore.EventWatermarks {
	return t.w.Clone()
}

// Observe folds one observation into the watermarks and returns them; advanced reports
// whether any grew (or appeared).
func (t *StreamWatermarkTracker) Observe(partitions []ytstore.Partition, jobs []ytstore.Job, statuses []ytstore.JobStatus) (w ytstore.EventWatermarks, advanced bool) {
	snap := &streamSnapshot{
		state:   watermark.Streams(t.graph, WatermarkPartitions(partitions, jobs, statuses)),
		updated: make(map[string]uint64, len(statuses)),
	}
	for _, st := range statuses {
		snap.updated[st.JobID] = st.UpdatedAt
	}
	if t.pending == nil {
		t.pending = snap
		return t.Value(), false
	}
	for _, j := range jobs {
		// A job without a status now leaves the streams downstream of it unavailable; the
		// others need not wait for it.
		before, seen := t.pending.updated[j.JobID]
		if now, has := snap.updated[j.JobID]; seen && has && now <= before {
			return t.Value(), false // wait until every job has reported again
		}
	}
	fold := func(into map[string]uint64, prev, now map[string]watermark.StreamState) {
		for id, n := range now {
			p, ok := prev[id]
			if !ok || !p.Available || !n.Available {
				continue
			}
			cur, published := into[id]
			if next := max(cur, min(p.Watermark, n.Watermark)); next > cur || !published {
				into[id] = next
				advanced = true
			}
		}
	}
	fold(t.w.Streams, t.pending.state.Streams, snap.state.Streams)
	fold(t.w.Groups, t.pending.state.Groups, snap.state.Groups)
	t.pending = snap
	return t.Value(), advanced
}

// WatermarkGraph is the stream graph of t with its source computations' watermark rules.
func (t Topology) WatermarkGraph() watermark.Graph {
	var g watermark.Graph
	for _, c := range t.Computations {
		n := watermark.Node{ID: c.ID, Inputs: c.Inputs, Outputs: c.Outputs, Group: c.AlignmentGroup, DriftBound: uint64(c.DriftBound.Microseconds())}
		for _, s := range c.Sources {
			n.Sources = append(n.Sources, s.ID)
		}
		n.ReadDelays = micros(c.ReadDelays)
		if r := c.IdlePartitions; r != nil {
			n.Idle = &watermark.IdleRule{Duration: uint64(r.Duration.Microseconds()), MaxRatio: r.MaxRatio}
		}
		if r := c.LateDataPartitions; r != nil {
			n.Late = &watermark.LateRule{Percentile: r.Percentile, Delay: uint64(r.Delay.Microseconds())}
		}
		g.Computations = append(g.Computations, n)
	}
	return g
}

// WatermarkPartitions is what an observation says of each partition's event time
// (watermark.PartitionOf over the statuses of its jobs), sorted by partition id.
func WatermarkPartitions(partitions []ytstore.Partition, jobs []ytstore.Job, statuses []ytstore.JobStatus) []watermark.Partition {
	status := make(map[string]ytstore.JobStatus, len(statuses))
	for _, st := range statuses {
		status[st.JobID] = st
	}
	reports := map[string][]watermark.Report{}
	for _, j := range jobs {
		reports[j.PartitionID] = append(reports[j.PartitionID], status[j.JobID].EventReport())
	}
	out := make([]watermark.Partition, 0, len(partitions))
	for _, pt := range partitions {
		out = append(out, watermark.PartitionOf(pt.PartitionID, pt.ComputationID, pt.SourceID, pt.State == ytstore.PartitionCompleted, reports[pt.PartitionID]))
	}
	slices.SortFunc(out, func(a, b watermark.Partition) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// micros is a map of durations in µs (nil for none).
func micros(ds map[string]time.Duration) map[string]uint64 {
	if len(ds) == 0 {
		return nil
	}
	out := make(map[string]uint64, len(ds))
	for k, d := range ds {
		out[k] = uint64(max(d, 0).Microseconds())
	}
	return out
}
