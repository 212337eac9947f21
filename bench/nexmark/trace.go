package nexmark

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// The watermark's path of a windowed query, measured from outside the pipeline (Config.Trace):
// a tracer reads the source jobs' statuses and the published @event_watermarks every 10 ms,
// and for each window end tells when
//
//   - written: the input that moves every tablet's watermark past the end was written;
//   - reported: every source job's job_status reported an event_watermark at or past the end
//     (its updated_at: when the job wrote it);
//   - published: the controller's @event_watermarks gave the keyed stage's input stream a
//     watermark at or past the end (first seen);
//   - output: the benchmark's reader first saw a row of the window (after the worker read the
//     watermark, an epoch fired the timer and committed its output).

// tracePoll is how often the tracer reads the statuses and the watermarks.
const tracePoll = 10 * time.Millisecond

// traceSample is one read of the tracer.
type traceSample struct {
	at time.Time
	// reported is the smallest event_watermark the source jobs reported (µs; 0 while one has
	// none) and reportedAt the latest updated_at among those statuses.
	reported   uint64
	reportedAt time.Time
	// published is the @event_watermarks value of the timer stream (µs; 0 before the first).
	published uint64
}

// tracer samples the watermark's path of a running query.
type tracer struct {
	p      *pipeline
	stream string // the keyed stage's input stream (the one its timers wait for)
	source string // the source computation
	mu     sync.Mutex
	got    []traceSample
}

// run samples until ctx ends.
func (t *tracer) run(ctx context.Context) {
	tick := time.NewTicker(tracePoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		s, ok := t.sample(ctx)
		if ok {
			t.mu.Lock()
			t.got = append(t.got, s)
			t.mu.Unlock()
		}
	}
}

func (t *tracer) sample(ctx context.Context) (traceSample, bool) {
	s := traceSample{at: time.Now()}
	jobs, err := t.p.store.Jobs(ctx)
	if err != nil {
		return s, false
	}
	sts, err := t.p.store.JobStatuses(ctx)
	if err != nil {
		return s, false
	}
	attrs, err := t.p.store.Attributes(ctx)
	if err != nil {
		return s, false
	}
	if ew := attrs.EventWatermarks; ew != nil {
		s.published = ew.Streams[t.stream]
	}
	source := map[string]bool{}
	for _, j := range jobs {
		if j.ComputationID == t.source {
			source[j.JobID] = true
		}
	}
	n := 0
	for _, st := range sts {
		if !source[st.JobID] {
			continue
		}
		ew := uint64(st.EventWatermark)
		if ew == 0 {
			return s, true // a source job without a bound: nothing reported yet
		}
		if n == 0 || ew < s.reported {
			s.reported = ew
		}
		if at := time.UnixMicro(int64(st.UpdatedAt)); at.After(s.reportedAt) {
			s.reportedAt = at
		}
		n++
	}
	if n < len(source) {
		s.reported = 0
	}
	return s, true
}

// samples returns what the tracer read so far.
func (t *tracer) samples() []traceSample {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.got)
}

// WatermarkPath is the median, over a live run's windows, of each step of the watermark's path
// (see tracer): written → reported → published → output. Windows is how many windows had every
// step seen.
type WatermarkPath struct {
	Windows                      int
	Report, Publish, Fire, Total time.Duration
}

func (w WatermarkPath) String() string {
	if w.Windows == 0 {
		return "no window traced"
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
	return fmt.Sprintf("%d windows, medians: input written → sources reported it %s → controller published it %s → output read %s (total %s)",
		w.Windows, ms(w.Report), ms(w.Publish), ms(w.Fire), ms(w.Total))
}

// windowEnd is the event-time end (µs) of the window of an output row of q5 or q7; ok is false
// for other queries.
func windowEnd(q Query, r Row) (uint64, bool) {
	asInt := func(v any) int64 {
		switch x := v.(type) {
		case int64:
			return x
		case uint64:
			return int64(x)
		case int:
			return int64(x)
		}
		return 0
	}
	switch q {
	case Q5:
		return uint64(asInt(r["window_start"])+q5Size) * 1000, true
	case Q7:
		dt := asInt(r["date_time"])
		return uint64(dt-dt%q7Size+q7Size) * 1000, true
	}
	return 0, false
}

// watermarkPath matches the samples to the run's windows: for each window end, the write of its
// Dep input, the first report and publication at or past it, and the first read of one of its
// rows.
func watermarkPath(q Query, samples []traceSample, got []Row, seen []time.Time, want []Want, written []time.Time) WatermarkPath {
	type window struct {
		written, output time.Time
	}
	ends := map[uint64]*window{}
	for _, w := range want {
		end, ok := windowEnd(q, w.Row)
		if !ok || written[w.Dep].IsZero() {
			continue
		}
		if ends[end] == nil {
			ends[end] = &window{written: written[w.Dep]}
		}
	}
	for i, r := range got {
		end, ok := windowEnd(q, r)
		if w := ends[end]; ok && w != nil && (w.output.IsZero() || seen[i].Before(w.output)) {
			w.output = seen[i]
		}
	}
	var report, publish, fire, total []time.Duration
	for end, w := range ends {
		var reported, published time.Time
		for _, s := range samples {
			if reported.IsZero() && s.reported >= end {
				reported = s.reportedAt
			}
			if published.IsZero() && s.published >= end {
				published = s.at
			}
		}
		if w.output.IsZero() || reported.IsZero() || published.IsZero() {
			continue
		}
		report = append(report, reported.Sub(w.written))
		publish = append(publish, published.Sub(reported))
		fire = append(fire, w.output.Sub(published))
		total = append(total, w.output.Sub(w.written))
	}
	med := func(ds []time.Duration) time.Duration {
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	if len(total) == 0 {
		return WatermarkPath{}
	}
	return WatermarkPath{Windows: len(total), Report: med(report), Publish: med(publish), Fire: med(fire), Total: med(total)}
}
