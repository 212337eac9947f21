package controller

import (
	"math"
	"sort"

	"github.com/ytflow/yt-flow/internal/watermark"
	"github.com/ytflow/yt-flow/ytstore"
)

// WatermarkTracker computes the pipeline SystemWatermark over scheduling
// cycles: a system timestamp (µs) such that no message of an internal stream
// with a smaller system timestamp is still held by a job or can be delivered
// again, so dedup rows below it are never consulted again. The zero value
// starts from 0; a new leader starts from the published @system_watermark.
//
// One observation gives a bound (watermarkBound); the bound of observation k
// is published only at a later observation in which every job has reported
// again (a newer updated_at), as the minimum of both bounds. The second look
// catches a retransmitted copy that reached a job after its status of
// observation k while its sender had already released the message. A copy
// that stays in the network longer than a whole round of statuses is not
// covered; the dedup GC margin (Config.DedupGCMargin) is for that and for
// clock skew between workers.
//
// Invariant: the watermark never passes a message a job still holds, and
// never decreases (TestSystemWatermarkSimulation, TestWatermarkTracker).
type WatermarkTracker struct {
	// MinSpan, when set, is how much newer (updated_at, µs) every job's status must be at the
	// second observation than at the first (0: newer at all). The second look then covers a
	// copy in the network for at least that long however often the jobs report; the driver
	// sets it for the SystemWatermark (systemWatermarkSpan), whose dedup GC relies on it.
	MinSpan uint64
	w       uint64
	pending *watermarkSnapshot // the bound waiting for fresher statuses
	// bound gives one observation's bound: watermarkBound (SystemWatermark) or
	// EventWatermarkBound.
	bound func(partitions []ytstore.Partition, jobs []ytstore.Job, statuses []ytstore.JobStatus) (uint64, bool)
}

type watermarkSnapshot struct {
	bound   uint64
	updated map[string]uint64 // job id -> updated_at of the status the bound used
}

// NewWatermarkTracker returns a tracker that continues from a published value.
func NewWatermarkTracker(published uint64) *WatermarkTracker {
	return &WatermarkTracker{w: published, bound: watermarkBound}
}

// NewEventWatermarkTracker returns a tracker of the pipeline EventWatermark that continues
// from a published value: the same two-observation rule over EventWatermarkBound, with the
// watermark_generator rules of the source computations of t.
func NewEventWatermarkTracker(published uint64, t Topology) *WatermarkTracker {
	tr := &WatermarkTracker{w: published}
	tr.SetTopology(t)
	return tr
}

// SetTopology makes an EventWatermark tracker follow the idle- and late-data-partition rules
// of t (a new spec version).
func (t *WatermarkTracker) SetTopology(top Topology) {
	rules := map[string]WatermarkRules{}
	for _, c := range top.Computations {
		if c.IdlePartitions != nil || c.LateDataPartitions != nil {
			rules[c.ID] = WatermarkRules{Idle: c.IdlePartitions, LateData: c.LateDataPartitions}
		}
	}
	t.bound = func(partitions []ytstore.Partition, jobs []ytstore.Job, statuses []ytstore.JobStatus) (uint64, bool) {
		return eventWatermarkBound(partitions, jobs, statuses, rules)
	}
}

// WatermarkRules are the watermark_generator rules of one source computation.
type WatermarkRules struct {
	Idle     *IdleRule
	LateData *LateDataRule
}

// Value returns the current watermark.
func (t *WatermarkTracker) Value() uint64 { return t.w }

// Observe folds one observation of the layout into the watermark and returns
// it; advanced reports whether it grew.
func (t *WatermarkTracker) Observe(partitions []ytstore.Partition, jobs []ytstore.Job, statuses []ytstore.JobStatus) (w uint64, advanced bool) {
	bounder := t.bound
	if bounder == nil { // the zero value tracks the SystemWatermark
		bounder = watermarkBound
	}
	bound, ok := bounder(partitions, jobs, statuses)
	if !ok {
		return t.w, false
	}
	snap := &watermarkSnapshot{bound: bound, updated: make(map[string]uint64, len(statuses))}
	for _, st := range statuses {
		snap.updated[st.JobID] = st.UpdatedAt
	}
	if t.pending == nil {
		t.pending = snap
		return t.w, false
	}
	for _, j := range jobs {
		if before, seen := t.pending.updated[j.JobID]; seen && snap.updated[j.JobID] < before+max(t.MinSpan, 1) {
			return t.w, false // wait until every job has reported again (MinSpan later)
		}
	}
	next := max(t.w, min(t.pending.bound, bound))
	t.pending = snap
	if next == t.w {
		return t.w, false
	}
	t.w = next
	return t.w, true
}

// watermarkBound is the bound one observation of the layout gives
// (docs/runtime-protocol.md, "SystemWatermark"); ok is false when it gives
// none:
//
//   - every partition must have a job, and every job a status whose state is
//     running or completed: a partition without a reporting job may hold
//     committed outputs nobody accounts for;
//   - a job's bound is its reported system_watermark, capped by the time of
//     its status (updated_at): a message it takes in or produces after
//     reporting has a system timestamp no smaller than that time (it is
//     produced by a later epoch, or it is still held, and reported, by its
//     sender); what a source job reads later gets the time of a later epoch;
//   - a status with in_flight > 0 but no system_watermark does not say what
//     the job holds;
//   - the bound is the minimum over the jobs.
func watermarkBound(partitions []ytstore.Partition, jobs []ytstore.Job, statuses []ytstore.JobStatus) (uint64, bool) {
	status, ok := reportingLayout(partitions, jobs, statuses)
	if !ok {
		return 0, false
	}
	w, found := uint64(0), false
	for _, j := range jobs {
		st := status[j.JobID]
		if st.InFlight > 0 && st.SystemWatermark == 0 {
			return 0, false
		}
		bound := st.UpdatedAt
		if st.SystemWatermark != 0 {
			bound = min(bound, st.SystemWatermark)
		}
		if !found || bound < w {
			w, found = bound, true
		}
	}
	return w, found
}

// EventWatermarkBound is the bound one observation gives the pipeline EventWatermark (a
// heuristic lower bound on the event timestamps still to come, docs/runtime-protocol.md
// "EventWatermark"); ok is false when it gives none. The preconditions are those of the
// SystemWatermark (every partition has a job, every job a running or completed status);
// the bound is the smallest event_watermark a job reports, and math.MaxUint64 when no job
// reports one: every source is exhausted and no job holds a message. This is the bound
// without the spec's idle- and late-data-partition rules; the tracker applies those
// (SetTopology).
//
// Invariant: event_time timers fire only once every source job's estimate and every held
// message's event timestamp have passed their trigger (TestEventWatermarkBound,
// TestEventTimeTimersFollowTheWatermark).
func EventWatermarkBound(partitions []ytstore.Partition, jobs []ytstore.Job, statuses []ytstore.JobStatus) (uint64, bool) {
	return eventWatermarkBound(partitions, jobs, statuses, nil)
}

// eventWatermarkBound is EventWatermarkBound with the rules of source computations (by
// computation id):
//   - idle_partitions: a job that reports itself idle (event_idle_since, sent only while it
//     holds no message) for at least the rule's duration, by its own clock (updated_at −
//     event_idle_since), is left out, the lowest bounds first, as long as at most max_ratio
//     of the computation's jobs are left out and at least one counts;
//   - late_data_partitions (after that): the computation's jobs bound the watermark together
//     by max(their smallest bound, their bounds' percentile − delay) instead of one by one.
//
// Invariant: only the estimate of a job that holds no message is left out as idle; what the
// late-data rule passes is what Flow calls late data, and jobs of other computations (the
// messages they hold) still bound the watermark one by one (TestEventWatermarkIdlePartitions,
// TestEventWatermarkLateDataPartitions, TestEventIdleSince).
func eventWatermarkBound(partitions []ytstore.Partition, jobs []ytstore.Job, statuses []ytstore.JobStatus, rules map[string]WatermarkRules) (uint64, bool) {
	status, ok := reportingLayout(partitions, jobs, statuses)
	if !ok {
		return 0, false
	}
	skip := map[string]bool{}
	late := map[string][]uint64{} // bounds of the jobs of computations with a late-data rule
	if len(rules) > 0 {
		idle := map[string][]ytstore.JobStatus{} // by computation
		count := map[string]int{}
		for _, j := range jobs {
			rule := rules[j.ComputationID].Idle
			if rule == nil {
				continue
			}
			count[j.ComputationID]++
			st := status[j.JobID]
			since := uint64(st.EventIdleSince)
			if since != 0 && st.EventWatermark != 0 && st.UpdatedAt >= since && st.UpdatedAt-since >= uint64(rule.Duration.Microseconds()) {
				idle[j.ComputationID] = append(idle[j.ComputationID], st)
			}
		}
		for comp, sts := range idle {
			allowed := min(int(rules[comp].Idle.MaxRatio*float64(count[comp])), count[comp]-1)
			sort.Slice(sts, func(a, b int) bool { return sts[a].EventWatermark < sts[b].EventWatermark })
			for _, st := range sts[:min(allowed, len(sts))] {
				skip[st.JobID] = true
			}
		}
	}
	w := uint64(math.MaxUint64)
	for _, j := range jobs {
		ew := uint64(status[j.JobID].EventWatermark)
		if ew == 0 || skip[j.JobID] {
			continue
		}
		if rules[j.ComputationID].LateData != nil {
			late[j.ComputationID] = append(late[j.ComputationID], ew)
			continue
		}
		w = min(w, ew)
	}
	for comp, bounds := range late {
		rule := rules[comp].LateData
		w = min(w, watermark.PercentileBound(bounds, rule.Percentile, uint64(rule.Delay.Microseconds())))
	}
	return w, true
}

// reportingLayout returns the statuses by job id when the observation can give a watermark
// bound: there are partitions, each has a job, and every job has a status whose state is
// running or completed; ok is false otherwise.
func reportingLayout(partitions []ytstore.Partition, jobs []ytstore.Job, statuses []ytstore.JobStatus) (status map[string]ytstore.JobStatus, ok bool) {
	if len(partitions) == 0 {
		return nil, false
	}
	status = make(map[string]ytstore.JobStatus, len(statuses))
	for _, st := range statuses {
		status[st.JobID] = st
	}
	jobsOf := make(map[string]int, len(partitions))
	for _, j := range jobs {
		jobsOf[j.PartitionID]++
	}
	for _, pt := range partitions {
		if jobsOf[pt.PartitionID] == 0 {
			return nil, false
		}
	}
	for _, j := range jobs {
		st, has := status[j.JobID]
		if !has || st.UpdatedAt == 0 || (st.State != ytstore.JobRunning && st.State != ytstore.JobCompleted) {
			return nil, false
		}
	}
	return status, true
}
