package watermark

import (
	"math"
	"sort"
)

// Graph is the stream graph event watermarks propagate along: the computations with their
// input, output and source streams and the source computations' watermark rules.
type Graph struct {
	Computations []Node
}

// Node is one computation of a Graph.
type Node struct {
	ID string
	// Inputs, Outputs and Sources are the ids of its input, output and source streams.
	Inputs, Outputs, Sources []string
	// Idle and Late are a source computation's idle_partitions and late_data_partitions rules
	// (nil: absent); they apply to each of its source streams.
	Idle *IdleRule
	Late *LateRule
	// Group is the watermark_alignment group of a source computation ("" without alignment)
	// and DriftBound (µs) how far its sources may read ahead of the group's watermark.
	Group      string
	DriftBound uint64
	// ReadDelays (µs, by source stream) read those source streams that much behind the group:
	// each counts in the group's watermark that much ahead (read_delays).
	ReadDelays map[string]uint64
}

// IdleRule leaves out of a source stream's watermark the partitions idle for at least
// Duration (µs), the lowest bounds first, as long as at most MaxRatio of the stream's
// partitions are left out and at least one counts.
type IdleRule struct {
	Duration uint64
	MaxRatio float64
}

// LateRule makes a source stream's watermark max(the smallest bound, the Percentile-th
// percentile of its partitions' bounds − Delay (µs)): partitions more than Delay behind pass as
// late data.
type LateRule struct {
	Percentile float64
	Delay      uint64
}

// Partition is one partition of a computation, with what its job last reported.
type Partition struct {
	ID, Computation string
	// Source is the source stream a source partition reads ("" for a keyed partition).
	Source string
	// Reporting is false when the partition has no job, or its job no running or completed
	// status: the partition's bound is unknown (unavailable).
	Reporting bool
	// Bound is the job's event_watermark (µs): the smallest event timestamp it holds and, for
	// a source partition, its estimate; 0 when it does not bound event time.
	Bound uint64
	// IdleFor is how long (µs) the source partition has given no row while holding nothing;
	// 0 when it is not idle.
	IdleFor uint64
}

// Reason says why a partition holds a watermark back.
type Reason string

// Reasons a partition holds a watermark back.
const (
	// ReasonSlowest: its bound is the smallest that counts.
	ReasonSlowest Reason = "slowest"
	// ReasonIdle: it is idle, but leaving it out would pass the idle rule's max_ratio.
	ReasonIdle Reason = "idle"
	// ReasonLate: the late-data rule sets the watermark from this partition's bound − delay;
	// the partitions behind it are late.
	ReasonLate Reason = "late"
	// ReasonUnavailable: it has no reporting job, so the watermark is not known.
	ReasonUnavailable Reason = "unavailable"
	// ReasonAlignment: it is the slowest, and it is held back by watermark_alignment
	// (more than drift_bound ahead of its group's watermark, so it reads nothing).
	ReasonAlignment Reason = "alignment"
)

// StreamState is the event watermark of one stream (or alignment group) at one observation.
type StreamState struct {
	// Available is false when some partition it depends on has no reporting job; Watermark is
	// then 0.
	Available bool
	// Watermark (µs) is a lower bound on the event timestamps still to come on the stream;
	// math.MaxUint64 when nothing bounds it (every source exhausted, nothing held).
	Watermark uint64
	// Partition and Computation name the partition holding it back ("" when none does) and
	// Reason says why.
	Partition, Computation string
	Reason                 Reason
	// Idle and Late count a source stream's partitions left out as idle and passed as late.
	Idle, Late int
}

// State is the event watermark of every stream and alignment group at one observation.
type State struct {
	Streams map[string]StreamState
	Groups  map[string]StreamState
}

var unbounded = StreamState{Available: true, Watermark: math.MaxUint64}

// Streams computes the event watermark of every stream of g from its partitions' reports:
//
//   - a source stream: over the bounds of the partitions reading it, with the computation's
//     idle rule (idle partitions left out, lowest first, up to max_ratio, one always counts)
//     and then its late-data rule (max(smallest, percentile − delay));
//   - an output stream of a computation: the minimum of its input streams' watermarks, its
//     source streams' watermarks and the bounds of its own partitions (what they hold);
//   - an alignment group: the minimum over the source streams of its computations, each
//     shifted ahead by its read delay.
//
// A stream is unavailable when a partition it depends on has no reporting job. Cycles
// converge: the propagation repeats until nothing changes.
//
// Invariant: a stream's watermark is never above the bound of a partition upstream of it
// that counts, so an event-time timer over it never passes a message still held upstream
// (TestStreamWatermarks, TestStreamWatermarksPropagate).
func Streams(g Graph, parts []Partition) State {
	st := State{Streams: map[string]StreamState{}, Groups: map[string]StreamState{}}
	byComp := map[string][]Partition{}
	for _, p := range parts {
		byComp[p.Computation] = append(byComp[p.Computation], p)
	}
	own := map[string]StreamState{} // by computation: its own partitions (keyed) or sources
	for _, n := range g.Computations {
		if len(n.Sources) == 0 {
			own[n.ID] = minOver(byComp[n.ID], n.ID)
			continue
		}
		for _, sid := range n.Sources {
			var ps []Partition
			for _, p := range byComp[n.ID] {
				if p.Source == sid || (p.Source == "" && len(n.Sources) == 1) {
					ps = append(ps, p)
				}
			}
			st.Streams[sid] = sourceStream(n, ps)
		}
	}
	for _, n := range g.Computations {
		if n.Group == "" {
			continue
		}
		g, ok := st.Groups[n.Group]
		if !ok {
			g = unbounded
		}
		for _, sid := range n.Sources {
			g = lower(g, shifted(st.Streams[sid], n.ReadDelays[sid]))
		}
		st.Groups[n.Group] = g
	}
	// A slowest source partition of a group that is itself more than drift_bound ahead of
	// the group's watermark reads nothing: alignment holds it.
	for _, n := range g.Computations {
		if n.Group == "" {
			continue
		}
		gw := st.Groups[n.Group]
		for _, sid := range n.Sources {
			s := st.Streams[sid]
			ahead := shifted(s, n.ReadDelays[sid]).Watermark
			if s.Available && gw.Available && s.Reason == ReasonSlowest && ahead != math.MaxUint64 && ahead > gw.Watermark && ahead-gw.Watermark > n.DriftBound {
				s.Reason = ReasonAlignment
				st.Streams[sid] = s
			}
		}
	}
	for _, n := range g.Computations { // the source streams with their alignment reasons
		if len(n.Sources) > 0 {
			o := unbounded
			for _, sid := range n.Sources {
				o = lower(o, st.Streams[sid])
			}
			own[n.ID] = o
		}
	}
	for range len(g.Computations) + 1 {
		changed := false
		for _, n := range g.Computations {
			w := own[n.ID]
			for _, in := range n.Inputs {
				if s, ok := st.Streams[in]; ok {
					w = lower(w, s)
				}
			}
			for _, out := range n.Outputs {
				if prev, ok := st.Streams[out]; !ok || prev != w {
					st.Streams[out] = w
					changed = true
				}
			}
		}
		if !changed {
			break
		}
	}
	for _, n := range g.Computations {
		for _, in := range n.Inputs {
			if _, ok := st.Streams[in]; !ok {
				st.Streams[in] = unbounded // no computation writes it: nothing will come
			}
		}
	}
	return st
}

// shifted is s with its watermark d ahead (saturating; unavailable and unbounded stay).
func shifted(s StreamState, d uint64) StreamState {
	if d != 0 && s.Available && s.Watermark != math.MaxUint64 {
		s.Watermark = min(s.Watermark+d, math.MaxUint64-1)
		if s.Watermark < d { // overflow
			s.Watermark = math.MaxUint64 - 1
		}
	}
	return s
}

// lower returns the lower of two states: unavailable wins (the first one met), then the
// smaller watermark.
func lower(a, b StreamState) StreamState {
	switch {
	case !a.Available:
		return a
	case !b.Available:
		return b
	case b.Watermark < a.Watermark:
		return b
	}
	return a
}

// minOver is the state of the bounds of a keyed computation's partitions: their minimum.
func minOver(ps []Partition, comp string) StreamState {
	s := unbounded
	for _, p := range ps {
		if !p.Reporting {
			return StreamState{Partition: p.ID, Computation: comp, Reason: ReasonUnavailable}
		}
		if p.Bound != 0 && p.Bound < s.Watermark {
			s = StreamState{Available: true, Watermark: p.Bound, Partition: p.ID, Computation: comp, Reason: ReasonSlowest}
		}
	}
	return s
}

// sourceStream applies n's idle and late-data rules to the partitions of one source stream.
func sourceStream(n Node, ps []Partition) StreamState {
	for _, p := range ps {
		if !p.Reporting {
			return StreamState{Partition: p.ID, Computation: n.ID, Reason: ReasonUnavailable}
		}
	}
	skip := map[string]bool{}
	idleCounted := map[string]bool{} // idle long enough, but over max_ratio
	if r := n.Idle; r != nil {
		var idle []Partition
		for _, p := range ps {
			if p.IdleFor != 0 && p.Bound != 0 && p.IdleFor >= r.Duration {
				idle = append(idle, p)
			}
		}
		allowed := min(int(r.MaxRatio*float64(len(ps))), len(ps)-1)
		sort.SliceStable(idle, func(a, b int) bool { return idle[a].Bound < idle[b].Bound })
		for i, p := range idle {
			if i < allowed {
				skip[p.ID] = true
			} else {
				idleCounted[p.ID] = true
			}
		}
	}
	var counted []Partition
	s := unbounded
	for _, p := range ps {
		if skip[p.ID] {
			s.Idle++
			continue
		}
		if p.Bound != 0 {
			counted = append(counted, p)
		}
	}
	if len(counted) == 0 {
		return s
	}
	sort.SliceStable(counted, func(a, b int) bool { return counted[a].Bound < counted[b].Bound })
	hold := counted[0]
	s.Watermark, s.Partition, s.Computation, s.Reason = hold.Bound, hold.ID, n.ID, ReasonSlowest
	if idleCounted[hold.ID] {
		s.Reason = ReasonIdle
	}
	if r := n.Late; r != nil {
		rank := int(math.Ceil(r.Percentile / 100 * float64(len(counted))))
		p := counted[min(max(rank, 1), len(counted))-1]
		if p.Bound > r.Delay && p.Bound-r.Delay > s.Watermark {
			s.Watermark, s.Partition, s.Reason = p.Bound-r.Delay, p.ID, ReasonLate
			for _, c := range counted {
				if c.Bound < s.Watermark {
					s.Late++
				}
			}
		}
	}
	return s
}

// Report is what one job of a partition last reported of event time (its job_status row).
type Report struct {
	// Running is true for a job whose status is running or completed, with a time.
	Running bool
	// UpdatedAt (µs, the job's clock), Bound (event_watermark, 0: none) and IdleSince
	// (event_idle_since, 0: not idle) as reported.
	UpdatedAt, Bound, IdleSince uint64
}

// PartitionOf is what the reports of a partition's jobs say of its event time: it is
// reporting when it has a job and each job a running status, or when it is a completed source
// partition without a job (it bounds nothing); its bound is the smallest of its jobs', and it
// is idle (for the shortest time any of them has been, by that job's clock) when all are.
func PartitionOf(id, computation, source string, completed bool, reports []Report) Partition {
	p := Partition{ID: id, Computation: computation, Source: source}
	if len(reports) == 0 {
		p.Reporting = completed
		return p
	}
	p.Reporting = true
	idle := true
	for _, r := range reports {
		if !r.Running || r.UpdatedAt == 0 {
			p.Reporting = false
			continue
		}
		if r.Bound != 0 && (p.Bound == 0 || r.Bound < p.Bound) {
			p.Bound = r.Bound
		}
		if r.IdleSince == 0 || r.Bound == 0 || r.UpdatedAt < r.IdleSince {
			idle = false
		} else if d := max(r.UpdatedAt-r.IdleSince, 1); p.IdleFor == 0 || d < p.IdleFor {
			p.IdleFor = d
		}
	}
	if !idle {
		p.IdleFor = 0
	}
	return p
}
