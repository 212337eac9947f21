// Event time (docs/runtime-protocol.md, "EventWatermark"). A source job estimates the event
// time its sources are at: the largest event timestamp of what it read and committed (swift
// sources: read), minus the out-of-orderness bound of its watermark generator; every job
// holds the estimate back to the smallest event timestamp of the messages it holds. The
// controller publishes the minimum over the jobs as @event_watermark, and event_time timers
// fire once it passes their trigger.

package job

import (
	"fmt"
	"math"
	"time"

	"github.com/ytflow/yt-flow/internal/watermark"
	"github.com/ytflow/yt-flow/job/epoch"
)

// assignEventTimes applies the computation's event_timestamp_assigner to its outputs: the
// event timestamp of an output becomes its payload column (seconds or milliseconds, turned
// into microseconds), capped at its system timestamp with limit_by_system_timestamp. An
// output without the column (or with null) keeps the timestamp it inherited.
func (r *runner) assignEventTimes(outs []epoch.Out) error {
	ws := r.comp.Watermark
	if ws == nil || ws.AssignerColumn == "" {
		return nil
	}
	scale := uint64(1_000_000)
	if ws.AssignerFormat == "milliseconds" {
		scale = 1_000
	}
	for i := range outs {
		m := &outs[i].Message
		v, ok := m.Payload[ws.AssignerColumn]
		if !ok || v == nil {
			continue
		}
		var ts uint64
		switch x := v.(type) {
		case int64:
			if x < 0 {
				return fmt.Errorf("job %s: computation %s: output %s on stream %s: event_timestamp_assigner column %q: negative event time %d",
					r.job.JobID, r.comp.ID, m.MessageID, m.StreamID, ws.AssignerColumn, x)
			}
			ts = uint64(x)
		case uint64:
			ts = x
		case int:
			if x < 0 {
				return fmt.Errorf("job %s: computation %s: output %s on stream %s: event_timestamp_assigner column %q: negative event time %d",
					r.job.JobID, r.comp.ID, m.MessageID, m.StreamID, ws.AssignerColumn, x)
			}
			ts = uint64(x)
		default:
			return fmt.Errorf("job %s: computation %s: output %s on stream %s: event_timestamp_assigner column %q: want an integer (%s), got %T",
				r.job.JobID, r.comp.ID, m.MessageID, m.StreamID, ws.AssignerColumn, ws.AssignerFormat, v)
		}
		if ts > math.MaxUint64/scale {
			return fmt.Errorf("job %s: computation %s: output %s on stream %s: event_timestamp_assigner column %q: event time %d %s is out of range",
				r.job.JobID, r.comp.ID, m.MessageID, m.StreamID, ws.AssignerColumn, ts, ws.AssignerFormat)
		}
		ts *= scale
		if ws.LimitBySystemTimestamp && m.SystemTimestamp != 0 {
			ts = min(ts, m.SystemTimestamp)
		}
		m.EventTimestamp = ts
	}
	return nil
}

// noteEventTimes advances the source job's largest event timestamp seen with what an epoch
// read: its outputs' event timestamps when an assigner sets them, else its source rows'.
func (r *runner) noteEventTimes(b *epoch.Batch, outs []epoch.Out) {
	var most uint64
	if ws := r.comp.Watermark; ws != nil && ws.AssignerColumn != "" {
		for _, o := range outs {
			most = max(most, o.Message.EventTimestamp)
		}
	} else {
		for _, s := range b.Sources {
			most = max(most, s.EventTimestamp)
		}
	}
	for {
		seen := r.eventSeen.Load()
		if most <= seen || r.eventSeen.CompareAndSwap(seen, most) {
			return
		}
	}
}

// eventWatermark is the job's bound on event time for its status (ytstore.JobStatus
// .EventWatermark): the smallest event timestamp of what it holds and, for a source job
// whose sources are not all exhausted, its estimate; 0 when nothing bounds it.
func (r *runner) eventWatermark() uint64 {
	var least uint64
	consider := func(ts uint64) {
		if ts != 0 && (least == 0 || ts < least) {
			least = ts
		}
	}
	consider(r.inbox.minEventTS())
	if wp := r.comp.Watermark; wp != nil && wp.Percentile != nil && r.sourcesOpen() {
		consider(watermark.PercentileBound(r.outbox.eventTimestamps(), wp.Percentile.Value, uint64(wp.Percentile.Delay.Microseconds())))
	} else {
		consider(r.outbox.minEventTS())
	}
	if r.sourcesOpen() {
		consider(r.sourceEstimate())
	}
	return least
}

// sourceEstimate is a source job's estimate of event time: the largest event timestamp it
// read minus the generator's out-of-orderness bound, at least 1 (nothing seen yet: the
// beginning of time).
func (r *runner) sourceEstimate() uint64 {
	seen := r.eventSeen.Load()
	var oob uint64
	if ws := r.comp.Watermark; ws != nil && ws.Generator {
		oob = uint64(ws.OutOfOrderness.Microseconds())
	}
	if seen > oob+1 {
		return seen - oob
	}
	return 1
}

// sourcesOpen reports whether the job reads a source that may still give rows (a source
// job not yet completed).
func (r *runner) sourcesOpen() bool {
	return len(r.sources)+len(r.swiftSrc) > 0 && !r.completed.Load()
}

// noteSourceRead records what an epoch's reads of the job's sources gave (rows, over all of
// them) at now (µs): the sources are idle from the first read that found nothing after the
// last one that found rows.
func (r *runner) noteSourceRead(rows int, now uint64) {
	if rows > 0 {
		r.sourceIdleSince.Store(0)
		return
	}
	r.sourceIdleSince.CompareAndSwap(0, now)
}

// eventIdleSince is the job's job_status.event_idle_since: since when its sources have given
// no row, for a source job whose sources are open and that holds no message (its bound is then
// only its estimate, which the controller may leave out under the idle_partitions rule); 0
// otherwise.
//
// Invariant: a job that holds a message never reports itself idle, so leaving idle jobs out of
// the EventWatermark never passes a message still in the pipeline (TestEventIdleSince).
func (r *runner) eventIdleSince() uint64 {
	since := r.sourceIdleSince.Load()
	if since == 0 || !r.sourcesOpen() || r.inbox.minEventTS() != 0 || r.outbox.minEventTS() != 0 {
		return 0
	}
	return since
}

// alignmentHold reports whether watermark_alignment holds the source job's reads back this
// epoch: its estimate (the largest event timestamp read, minus the generator's
// out-of-orderness bound) is more than drift_bound ahead of the EventWatermark of its
// alignment group (group_name) the worker last read — the group's slowest source — or, when
// the controller publishes no per-group watermarks (an older version), of the pipeline.
//
// Until the worker has read a watermark of the group, the job reads nothing: the group's
// watermark is published once every source of the group reports (an estimate at the
// beginning of time before its first read), so a source cannot run ahead of one that has not
// started (the race TestAlignmentGroupHoldsAhead once lost). A pipeline of an older version,
// without event watermarks, is never held.
//
// Invariant: a held job still delivers and commits what it holds, so the watermark it waits
// for can pass (TestAlignmentHold); a source reads nothing past drift_bound before its group's
// first watermark (TestAlignmentWaitsForFirstWatermark); groups are independent of each other
// (TestAlignmentGroups).
func (r *runner) alignmentHold() bool {
	held := r.alignmentHolds()
	r.alignmentHeld.Store(held)
	if held {
		r.stats.alignmentHolds.Add(1)
	}
	return held
}

// alignmentHolds is the decision of alignmentHold, without its bookkeeping.
func (r *runner) alignmentHolds() bool {
	ws := r.comp.Watermark
	if ws == nil || ws.Alignment == nil {
		return false
	}
	if r.w.eventTime.Load() == eventTimeWallClock {
		return false
	}
	ew := r.w.eventWatermark.Load()
	if ews := r.w.eventWatermarks.Load(); ews != nil {
		ew = ews.Groups[ws.Alignment.GroupName] // 0 while the group has none
	}
	if ew == 0 {
		return true // no watermark of the group yet: wait for the first
	}
	// read_delays: a delayed source is held that much earlier (the group counts its watermark
	// that much ahead).
	est := r.sourceEstimate() + r.readDelay()
	if est <= ew || est-ew <= uint64(ws.Alignment.DriftBound.Microseconds()) {
		return false
	}
	return true
}

// readDelay is the largest watermark_alignment.read_delays entry (µs) of the job's sources.
func (r *runner) readDelay() uint64 {
	a := r.comp.Watermark.Alignment
	var d time.Duration
	for _, s := range r.sources {
		d = max(d, a.ReadDelays[s.id])
	}
	for _, s := range r.swiftSrc {
		d = max(d, a.ReadDelays[s.src.id])
	}
	return uint64(d.Microseconds())
}
