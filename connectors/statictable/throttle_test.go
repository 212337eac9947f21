package statictable

import (
	"testing"
	"time"
)

// TestLimiter: rows are paced to the row rate with one period (here a second) of burst, a
// byte debt makes the next read wait, and a rate of 0 does not limit.
func TestLimiter(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	l := newLimiter(10, 0, time.Second, t0)
	type step struct {
		ms         int
		want, got  int64
		wait       time.Duration
		spentBytes int64
	}
	for i, s := range []step{
		{0, 100, 10, 0, 0},                     // a full bucket: one second's worth
		{0, 100, 0, 100 * time.Millisecond, 0}, // empty: one row in 100ms
		{100, 100, 1, 0, 0},
		{5000, 100, 10, 0, 0}, // the bucket holds at most one second
		{5050, 3, 0, 50 * time.Millisecond, 0},
	} {
		n, wait := l.allow(at(s.ms), s.want)
		if n != s.got || wait != s.wait {
			t.Fatalf("step %d: %d rows, wait %v; want %d, %v", i, n, wait, s.got, s.wait)
		}
		l.spend(n, s.spentBytes)
	}

	b := newLimiter(0, 1000, time.Second, t0)
	if n, wait := b.allow(t0, 500); n != 500 || wait != 0 {
		t.Fatalf("bytes: %d, %v", n, wait)
	}
	b.spend(500, 3000) // 2000 bytes of debt: two seconds
	if n, wait := b.allow(at(500), 500); n != 0 || wait != 1500*time.Millisecond {
		t.Fatalf("in debt: %d, %v", n, wait)
	}
	if n, _ := b.allow(at(2000), 500); n != 500 {
		t.Fatalf("debt repaid: %d", n)
	}

	free := newLimiter(0, 0, time.Second, t0)
	free.spend(1e9, 1e12)
	if n, wait := free.allow(t0, 7); n != 7 || wait != 0 {
		t.Fatalf("no limit: %d, %v", n, wait)
	}
}

// TestLimiterThrottlerPeriod: throttler_period is the bucket's window: at 10 rows a second a
// 10s period lets a reader that was idle take 100 rows at once (a 1s period: 10), then paces
// it at the rate; bytes likewise.
func TestLimiterThrottlerPeriod(t *testing.T) {
	t0 := time.Unix(1000, 0)
	l := newLimiter(10, 0, 10*time.Second, t0)
	if n, _ := l.allow(t0, 1000); n != 100 {
		t.Fatalf("a full 10s bucket: %d rows, want 100", n)
	}
	l.spend(100, 0)
	if n, wait := l.allow(t0, 1000); n != 0 || wait != 100*time.Millisecond {
		t.Fatalf("empty: %d rows, wait %v", n, wait)
	}
	if n, _ := l.allow(t0.Add(time.Hour), 1000); n != 100 {
		t.Fatalf("after an hour idle the bucket holds one period: %d rows, want 100", n)
	}
	one := newLimiter(10, 0, time.Second, t0)
	if n, _ := one.allow(t0.Add(time.Hour), 1000); n != 10 {
		t.Fatalf("a 1s period: %d rows, want 10", n)
	}
	b := newLimiter(0, 100, 5*time.Second, t0)
	b.spend(1, 600) // 500 of 100×5 bytes: 100 in debt, one second at 100 bytes/s
	if n, wait := b.allow(t0, 1); n != 0 || wait != time.Second {
		t.Fatalf("bytes: %d, %v", n, wait)
	}
}
