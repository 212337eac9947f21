package spec

// AwaitsWatermarks reports whether something in the pipeline waits for a watermark to pass:
// an event_time or system_time timer stream, input_ordering, or a source's
// watermark_alignment. Such a pipeline's watermarks travel on the fast path (job statuses and
// watermark reads at every layout poll, publication between the controller's cycles); in
// others they serve only lag figures and dedup GC, and keep the status period.
func (p *Pipeline) AwaitsWatermarks() bool {
	if p == nil {
		return false
	}
	for _, c := range p.Computations {
		if c.InputOrdering != nil || (c.Watermark != nil && c.Watermark.Alignment != nil) {
			return true
		}
		for _, t := range c.Timers {
			if t != nil && t.TimeType != "current_time" {
				return true
			}
		}
	}
	return false
}
