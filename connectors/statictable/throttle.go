package statictable

import (
	"math"
	"time"
)

// limiter paces one reader to a rate of rows and of bytes per second: a token bucket of at
// most one period's worth of each (throttler_period; it starts full) that may go into debt (a
// read's bytes are known only after it). It is pure: time is an argument. A rate <= 0 does
// not limit.
type limiter struct {
	rowsRate, bytesRate float64
	// period is the bucket's window: it holds at most rate × period.
	period      float64
	rows, bytes float64
	last        time.Time
}

// newLimiter makes a limiter whose bucket holds period's worth (a period <= 0: one second).
func newLimiter(rowsRate, bytesRate float64, period time.Duration, now time.Time) *limiter {
	p := period.Seconds()
	if p <= 0 {
		p = 1
	}
	return &limiter{rowsRate: rowsRate, bytesRate: bytesRate, period: p, rows: rowsRate * p, bytes: bytesRate * p, last: now}
}

func (l *limiter) refill(now time.Time) {
	dt := now.Sub(l.last).Seconds()
	if dt <= 0 {
		return
	}
	l.last = now
	if l.rowsRate > 0 {
		l.rows = math.Min(l.rowsRate*l.period, l.rows+dt*l.rowsRate)
	}
	if l.bytesRate > 0 {
		l.bytes = math.Min(l.bytesRate*l.period, l.bytes+dt*l.bytesRate)
	}
}

// allow returns how many of want rows may be read at now — at least one, or none and how
// long to wait before asking again.
func (l *limiter) allow(now time.Time, want int64) (int64, time.Duration) {
	l.refill(now)
	var wait float64
	if l.rowsRate > 0 && l.rows < 1 {
		wait = (1 - l.rows) / l.rowsRate
	}
	if l.bytesRate > 0 && l.bytes < 0 {
		wait = math.Max(wait, -l.bytes/l.bytesRate)
	}
	if wait > 0 {
		return 0, time.Duration(math.Ceil(wait * float64(time.Second)))
	}
	if l.rowsRate > 0 {
		want = min(want, int64(l.rows))
	}
	return want, 0
}

// spend takes what a read returned from the buckets.
func (l *limiter) spend(rows, bytes int64) {
	if l.rowsRate > 0 {
		l.rows -= float64(rows)
	}
	if l.bytesRate > 0 {
		l.bytes -= float64(bytes)
	}
}

// rowBytes estimates a row's size: string and byte columns by length, others 8 bytes.
func rowBytes(cols map[string]any) int64 {
	var n int64
	for k, v := range cols {
		n += int64(len(k))
		switch x := v.(type) {
		case string:
			n += int64(len(x))
		case []byte:
			n += int64(len(x))
		default:
			n += 8
		}
	}
	return n
}
