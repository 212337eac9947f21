// The driver's watermark steps: the event watermarks per stream and group, and the system watermark with the dedup GC it drives.

package controller

import (
	"context"
	"time"

	"go.ytsaurus.tech/library/go/core/log"

	"github.com/ytflow/yt-flow/ytstore"
)

// advanceEventWatermark folds the cycle's observation into the EventWatermark and publishes
// it when it grew (pipelines whose job_status has no event_watermark column get none: their
// event_time timers keep firing by the wall clock).
func (c *cycler) advanceEventWatermark(ctx context.Context, in *Input, attrs *ytstore.Attributes) error {
	if ok, err := c.st.EventWatermarks(ctx); err != nil || !ok {
		return err
	}
	var published uint64
	if attrs.EventWatermark != nil {
		published = *attrs.EventWatermark
	}
	if c.ew == nil {
		c.ew = NewEventWatermarkTracker(published, in.Topology)
	}
	w, _ := c.ew.Observe(in.Partitions, in.Jobs, in.Statuses)
	if w > published || (attrs.EventWatermark == nil && w > 0) {
		if err := c.st.SetEventWatermark(ctx, c.sess, w); err != nil {
			return err
		}
		attrs.EventWatermark = &w // a new value: a Snapshot handed out keeps the old one
		c.lg.Debug("event watermark advanced", log.UInt64("event_watermark", w))
	}
	if c.sw == nil {
		c.sw = NewStreamWatermarkTracker(attrs.EventWatermarks, in.Topology)
	}
	// Also retries a publication that failed in an earlier cycle.
	if sw, advanced := c.sw.Observe(in.Partitions, in.Jobs, in.Statuses); advanced || (attrs.EventWatermarks == nil && len(sw.Streams)+len(sw.Groups) > 0) || (attrs.EventWatermarks != nil && !sameWatermarks(*attrs.EventWatermarks, sw)) {
		if err := c.st.SetEventWatermarks(ctx, c.sess, sw); err != nil {
			return err
		}
		attrs.EventWatermarks = &sw // Observe returned a copy
	}
	return nil
}

// sameWatermarks reports whether a and b hold the same watermarks.
func sameWatermarks(a, b ytstore.EventWatermarks) bool {
	eq := func(x, y map[string]uint64) bool {
		if len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || w != v {
				return false
			}
		}
		return true
	}
	return eq(a.Streams, b.Streams) && eq(a.Groups, b.Groups)
}

// systemWatermarkSpan is the least time between the two status rounds the SystemWatermark's
// second look compares (WatermarkTracker.MinSpan) in a pipeline on the watermark's fast path:
// its jobs report every 200 ms, but the second look keeps covering a retransmitted copy in the
// network for about the 1 s status period it covers in other pipelines (the default status
// period less the time a worker takes to write a round of statuses), with the dedup GC margin
// on top. Other pipelines keep MinSpan 0 (their statuses come every second, or every 10 ms in
// a transition, as before).
const systemWatermarkSpan = 900 * time.Millisecond

// publishSystemWatermark folds the observation into the SystemWatermark and publishes it when
// it grew (attrs then holds the published value); it returns the watermark.
func (c *cycler) publishSystemWatermark(ctx context.Context, in *Input, attrs *ytstore.Attributes) (uint64, error) {
	if c.wm == nil {
		c.wm = NewWatermarkTracker(attrs.SystemWatermark)
	}
	c.wm.MinSpan = 0
	if in.Topology.AwaitsWatermarks {
		c.wm.MinSpan = uint64(systemWatermarkSpan.Microseconds())
	}
	w, _ := c.wm.Observe(in.Partitions, in.Jobs, in.Statuses)
	if w > attrs.SystemWatermark {
		// Also retries a publication that failed in an earlier cycle.
		if err := c.st.SetSystemWatermark(ctx, c.sess, w); err != nil {
			return w, err
		}
		attrs.SystemWatermark = w
		c.lg.Debug("system watermark advanced", log.UInt64("system_watermark", w))
	}
	return w, nil
}

// peekWatermarks folds statuses read between two cycles into the SystemWatermark and the
// EventWatermarks, with the partitions and jobs read now, and publishes those that grew, in a
// pipeline that awaits watermarks (Topology.AwaitsWatermarks): the trackers' rules are the
// cycle's (a bound is published only once every job has reported again), so this adds
// observations, not a weaker proof, and the watermark waits for the next status round rather
// than the next cycle. Dedup GC stays with the cycles. A failed read or write changes nothing;
// the next cycle observes again.
//
// Invariant: watermarks published between cycles obey the same rules as the cycle's
// (TestPeekPublishesWatermarks, TestWatermarkTracker, TestStreamWatermarkTracker).
func (c *cycler) peekWatermarks(ctx context.Context, statuses []ytstore.JobStatus) {
	if c.attrs == nil || c.specErr != nil || !c.topology.AwaitsWatermarks || c.wm == nil {
		return
	}
	var stamp uint64 // changes when any job writes a status
	for _, st := range statuses {
		stamp += st.UpdatedAt
	}
	if stamp == c.peekStamp {
		return // no job reported since the last peek: the trackers would not move
	}
	partitions, err := c.st.Partitions(ctx)
	if err != nil {
		return
	}
	jobs, err := c.st.Jobs(ctx)
	if err != nil {
		return
	}
	c.peekStamp = stamp
	in := &Input{Partitions: partitions, Jobs: jobs, Statuses: statuses, Topology: c.topology}
	if _, err := c.publishSystemWatermark(ctx, in, c.attrs); err != nil {
		c.lg.Debug("system watermark publication between cycles failed", log.Error(err))
		return
	}
	if err := c.advanceEventWatermark(ctx, in, c.attrs); err != nil {
		c.lg.Debug("event watermark publication between cycles failed", log.Error(err))
	}
}

// advanceWatermark folds the cycle's observation into the SystemWatermark,
// publishes it when it grew, and collects dedup rows below it minus the margin:
// it sets that bound as the dedup tables' watermark when their row merger drops
// such rows itself, else deletes them, at most DedupGCBatch per table and cycle.
func (c *cycler) advanceWatermark(ctx context.Context, in *Input, attrs *ytstore.Attributes) error {
	w, err := c.publishSystemWatermark(ctx, in, attrs)
	if err != nil {
		return err
	}
	margin := uint64(c.cfg.DedupGCMargin.Microseconds())
	if w <= margin {
		return nil
	}
	before := w - margin
	period := c.cfg.DedupGCPeriod
	if c.gcMerger > 0 {
		// Publishing costs two attribute writes, and each merge drops only what passed
		// since the last one: small steps keep the merges short (ytlocal runs them under its
		// state lock).
		period = min(period, dedupMergePeriod)
	}
	if !c.gcMore && (before <= c.gcDone || time.Since(c.gcLast) < period) {
		return nil
	}
	c.gcLast = time.Now()
	if c.gcMerger == 0 {
		merger, err := c.st.DedupMerger(ctx)
		if err != nil {
			c.lg.Warn("dedup gc: cannot read the dedup tables' row merger", log.Error(err))
			return nil
		}
		c.gcMerger = -1
		if merger {
			c.gcMerger = 1
		}
	}
	if c.gcMerger > 0 {
		// The tables drop their old rows themselves (watermark row merger): no scan, no
		// deletes (TestDedupTablesStayBounded).
		if err := c.st.SetDedupWatermark(ctx, before); err != nil {
			c.lg.Warn("dedup gc: setting the dedup watermark failed", log.UInt64("below", before), log.Error(err))
			return nil
		}
		c.gcDone, c.gcMore = before, false
		return nil
	}
	res, err := c.st.CollectDedup(ctx, before, c.cfg.DedupGCBatch)
	if err != nil {
		c.lg.Warn("dedup gc failed", log.UInt64("below", before), log.Error(err))
		return nil
	}
	c.gcDone, c.gcMore = before, res.More
	if n := res.InputMessages + res.CompactInputMessages; n > 0 {
		c.lg.Debug("dedup gc", log.UInt64("below", before), log.Int("input_messages", res.InputMessages), log.Int("compact_input_messages", res.CompactInputMessages))
	}
	return nil
}
