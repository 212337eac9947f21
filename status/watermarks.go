package status

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/ytflow/yt-flow/internal/watermark"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytstore"
)

// Watermark is one line of `yt-flow status --watermarks`: the EventWatermark of a stream or an
// alignment group as published, and what holds it back at this snapshot.
type Watermark struct {
	// Kind is "stream" or "group"; ID the stream id or the group_name.
	Kind, ID string
	// Published is the published watermark (µs; 0: none yet; math.MaxUint64: the end of time).
	Published uint64
	// Current is what the snapshot's statuses give now (one observation, before the
	// controller's second look; 0 when unavailable).
	Current uint64
	// Partition and Computation hold it back for Reason (watermark.Reason*); all empty when
	// nothing does.
	Partition, Computation string
	Reason                 watermark.Reason
	// Idle and Late count the source partitions left out as idle and passed as late.
	Idle, Late int
}

// Watermarks explains the EventWatermark of every stream and alignment group of the spec:
// the published value with, from the snapshot's statuses, the partition holding it back and
// why (watermark.Streams, as the controller computes it). nil when the spec does not parse.
func (s *Snapshot) Watermarks() []Watermark {
	p := s.Spec()
	if p == nil {
		return nil
	}
	reports := map[string][]watermark.Report{}
	for _, j := range s.Jobs {
		reports[j.PartitionID] = append(reports[j.PartitionID], s.Statuses[j.JobID].EventReport())
	}
	var parts []watermark.Partition
	for _, pt := range s.Partitions {
		parts = append(parts, watermark.PartitionOf(pt.PartitionID, pt.ComputationID, pt.SourceID, pt.State == ytstore.PartitionCompleted, reports[pt.PartitionID]))
	}
	state := watermark.Streams(graphOf(p), parts)
	var pub ytstore.EventWatermarks
	if s.Attrs.EventWatermarks != nil {
		pub = *s.Attrs.EventWatermarks
	}
	var out []Watermark
	add := func(kind string, now map[string]watermark.StreamState, published map[string]uint64) {
		ids := SortedKeys(now)
		for id := range published {
			if _, ok := now[id]; !ok {
				ids = append(ids, id)
			}
		}
		sort.Strings(ids)
		for _, id := range ids {
			st := now[id]
			w := Watermark{Kind: kind, ID: id, Published: published[id], Partition: st.Partition, Computation: st.Computation, Reason: st.Reason, Idle: st.Idle, Late: st.Late}
			if st.Available {
				w.Current = st.Watermark
			}
			out = append(out, w)
		}
	}
	add("stream", state.Streams, pub.Streams)
	add("group", state.Groups, pub.Groups)
	return out
}

// graphOf is the stream graph of a spec with its source computations' watermark rules, as
// the controller builds it (controller.Topology.WatermarkGraph).
func graphOf(p *spec.Pipeline) watermark.Graph {
	var g watermark.Graph
	for _, id := range SortedKeys(p.Computations) {
		c := p.Computations[id]
		n := watermark.Node{ID: id, Inputs: c.InputStreamIDs, Outputs: c.OutputStreamIDs, Sources: SortedKeys(c.Sources)}
		if ws := c.Watermark; ws != nil && c.Kind.Source() {
			if r := ws.IdlePartitions; r != nil {
				n.Idle = &watermark.IdleRule{Duration: uint64(r.Duration.Microseconds()), MaxRatio: r.MaxRatio}
			}
			if r := ws.LateDataPartitions; r != nil {
				n.Late = &watermark.LateRule{Percentile: r.Percentile, Delay: uint64(r.Delay.Microseconds())}
			}
			if a := ws.Alignment; a != nil {
				n.Group, n.DriftBound = a.GroupName, uint64(a.DriftBound.Microseconds())
				for sid, d := range a.ReadDelays {
					if n.ReadDelays == nil {
						n.ReadDelays = map[string]uint64{}
					}
					n.ReadDelays[sid] = uint64(max(d, 0).Microseconds())
				}
			}
		}
		g.Computations = append(g.Computations, n)
	}
	return g
}

// WatermarkTime is a watermark in human form: a UTC time, "end of time" for math.MaxUint64,
// "-" for 0 (none).
func WatermarkTime(w uint64) string {
	switch {
	case w == 0:
		return "-"
	case w == math.MaxUint64:
		return "end of time"
	case w == 1:
		return "beginning of time"
	}
	return time.UnixMicro(int64(w)).UTC().Format("2006-01-02 15:04:05.000")
}

// WatermarkLag is how far a watermark is behind Now ("-" for none or the end of time).
func (s *Snapshot) WatermarkLag(w uint64) string {
	if w == 0 || w == math.MaxUint64 {
		return "-"
	}
	return s.Lag(w)
}

// Why says in words why w's holder holds it back.
func (w Watermark) Why() string {
	var why string
	switch w.Reason {
	case "":
		return "-"
	case watermark.ReasonSlowest:
		why = "slowest partition"
	case watermark.ReasonIdle:
		why = "idle, but idle_partitions.max_ratio is reached"
	case watermark.ReasonLate:
		why = fmt.Sprintf("late_data_partitions: this partition's bound − delay; %d partition(s) behind it are late", w.Late)
	case watermark.ReasonUnavailable:
		why = "unavailable: no running job reports for it"
	case watermark.ReasonAlignment:
		why = "alignment: held more than drift_bound ahead of its group"
	default:
		why = string(w.Reason)
	}
	if w.Idle > 0 {
		why += fmt.Sprintf(" (%d idle partition(s) left out)", w.Idle)
	}
	return why
}
