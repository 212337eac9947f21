// input_ordering (docs/spec.md, Static spec): a computation with it takes its
// inputs from the inbox merged across input streams by stabilized event timestamp
// (internal/ordering), each released once the event watermark of every input stream with
// nothing buffered, plus that stream's delay, passed it.

package job

import (
	"slices"

	"github.com/ytflow/yt-flow/internal/ordering"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/spec"
)

// inputOrdering is the merge configuration of comp's input_ordering; nil without one.
func inputOrdering(comp *spec.Computation) *ordering.Config {
	o := comp.InputOrdering
	if o == nil || len(comp.InputStreamIDs) == 0 {
		return nil
	}
	c := &ordering.Config{Streams: slices.Sorted(slices.Values(comp.InputStreamIDs)), Delays: map[string]uint64{}}
	for s, d := range o.StreamDelays {
		c.Delays[s] = uint64(d.Microseconds())
	}
	return c
}

// takeInputs takes up to max inputs of the inbox for an epoch: in arrival order, or under
// input_ordering those the merge releases.
//
// Invariant: under input_ordering a job hands its function no message before every input
// stream with nothing buffered has an event watermark (plus delay) past it, except while
// draining or in a pipeline without event watermarks (an older version); restarts re-merge
// what the senders retransmit (e2e TestInputOrderingUnderKill).
func (r *runner) takeInputs(max int, maxBytes int64) []epoch.Input {
	if r.ordering == nil {
		return r.inbox.takeInto(r.inputs, max, maxBytes)
	}
	wm, all := r.orderingWatermarks()
	ins, held := r.inbox.takeOrdered(r.inputs, max, r.ordering, wm, all)
	if held > 0 && len(ins) < max {
		r.stats.orderingHolds.Add(1)
	}
	return ins
}

// orderingWatermarks are the event watermarks by stream the merge waits for, and whether it
// may release everything: the job is draining (a stop, pause or completion must empty the
// inbox; the sources read nothing more), or the pipeline (of an older version) publishes no
// event watermarks. Without per-stream watermarks (a controller of an older version) every
// stream counts at the pipeline's EventWatermark; before the pipeline's event time is known
// nothing is released.
func (r *runner) orderingWatermarks() (map[string]uint64, bool) {
	if r.draining.Load() {
		return nil, true
	}
	switch r.w.eventTime.Load() {
	case eventTimeWallClock:
		return nil, true
	case eventTimeWatermark:
		if ews := r.w.eventWatermarks.Load(); ews != nil {
			return ews.Streams, false
		}
		ew := r.w.eventWatermark.Load()
		wm := make(map[string]uint64, len(r.ordering.Streams))
		for _, s := range r.ordering.Streams {
			wm[s] = ew
		}
		return wm, false
	}
	return nil, false
}
