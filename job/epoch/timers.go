package epoch

import (
	"math"
	"sort"
	"time"
)

// TimerSet is the in-memory copy of a job's stored timers. It is owned by one goroutine.
type TimerSet struct {
	byID map[string]DueTimer
}

// NewTimerSet returns a set holding timers.
func NewTimerSet(timers []DueTimer) *TimerSet {
	s := &TimerSet{byID: map[string]DueTimer{}}
	for _, t := range timers {
		s.byID[t.Timer.MessageID] = t
	}
	return s
}

// Len is the number of stored timers.
func (s *TimerSet) Len() int { return len(s.byID) }

// Due returns up to limit timers with Trigger <= now, ordered by trigger then id, so that
// within one stream and key timers fire in trigger order.
func (s *TimerSet) Due(now uint64, limit int) []DueTimer {
	return s.DueBy(func(string) uint64 { return now }, limit)
}

// DueBy is Due with a time per timer stream: a timer is due when its Trigger is at most
// clock(its stream id) (the wall clock, or the system watermark for system_time streams).
func (s *TimerSet) DueBy(clock func(streamID string) uint64, limit int) []DueTimer {
	var due []DueTimer
	for _, t := range s.byID {
		if t.Timer.Trigger <= clock(t.Timer.StreamID) {
			due = append(due, t)
		}
	}
	sort.Slice(due, func(i, j int) bool {
		a, b := due[i].Timer, due[j].Timer
		if a.Trigger != b.Trigger {
			return a.Trigger < b.Trigger
		}
		return a.MessageID < b.MessageID
	})
	if limit > 0 && len(due) > limit {
		due = due[:limit]
	}
	return due
}

// Apply records a committed epoch: fired timers leave, new ones join. Call it only after
// the commit is durable.
func (s *TimerSet) Apply(c *Commit) {
	for _, t := range c.TimersFired {
		delete(s.byID, t.Timer.MessageID)
	}
	for _, t := range c.TimersSet {
		s.byID[t.Timer.MessageID] = t
	}
}

// EventClock is the time of an event_time timer stream at pipeline EventWatermark ew (µs), used
// while no per-stream watermarks are published (StreamEventClock otherwise): ew minus the
// largest positive delay of the stream's streams_with_delays (one watermark stands for every
// stream, so the stream with the largest delay governs), at least 0; +inf (MaxUint64) stays
// +inf.
func EventClock(ew uint64, delays map[string]time.Duration) uint64 {
	if ew == math.MaxUint64 {
		return ew
	}
	var delay uint64
	for _, d := range delays {
		if d > 0 {
			delay = max(delay, uint64(d.Microseconds()))
		}
	}
	return ew - min(ew, delay)
}

// StreamEventClock is the time of an event_time timer stream over the event watermarks of
// streams (µs, by stream id): the minimum over the streams it waits for of the stream's
// watermark — capped by held, the smallest event timestamp of the messages the job holds and
// has not processed (0: none) — minus the stream's delay from delays (streams_with_delays),
// at least 0. +inf (MaxUint64) stays +inf. A stream whose watermark is not known yet gives 0:
// nothing fires. With no stream to wait for the clock is +inf.
//
// Invariant: an event_time timer fires only once every stream it waits for has passed its
// trigger plus that stream's delay, and no message the job holds is behind it
// (TestStreamEventClock, TestEventTimersPerStream).
func StreamEventClock(watermarks map[string]uint64, streams []string, delays map[string]time.Duration, held uint64) uint64 {
	clock := uint64(math.MaxUint64)
	for _, s := range streams {
		w, ok := watermarks[s]
		if !ok {
			return 0
		}
		if held != 0 {
			w = min(w, held)
		}
		if w != math.MaxUint64 {
			if d := delays[s]; d > 0 {
				w -= min(w, uint64(d.Microseconds()))
			}
		}
		clock = min(clock, w)
	}
	return clock
}

// TimerStreams are the streams an event_time timer stream waits for: those it names in
// streams and streams_with_delays, or, when it names none, every input and source stream of
// its computation (inputs). Sorted, without duplicates.
func TimerStreams(named []string, delays map[string]time.Duration, inputs []string) []string {
	var out []string
	out = append(out, named...)
	for s := range delays {
		out = append(out, s)
	}
	if len(out) == 0 {
		out = append(out, inputs...)
	}
	sort.Strings(out)
	n := 0
	for i, s := range out {
		if i == 0 || s != out[n-1] {
			out[n] = s
			n++
		}
	}
	return out[:n]
}
