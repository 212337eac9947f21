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

// EventClock is the time of an event_time timer stream at pipeline EventWatermark ew (µs): ew
// minus the largest positive delay of the stream's streams_with_delays (one watermark covers
// every stream, so the stream with the largest delay governs), at least 0; +inf (MaxUint64)
// stays +inf.
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
