package statictable

import (
	"testing"
	"time"
)

// TestLimiter: rows are paced to the row rate with one second of burst, a byte debt makes
// the next read wait, and a rate of 0 does not limit.
func TestLimiter(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	l := newLimiter(10, 0, t0)
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

	b := newLimiter(0, 1000, t0)
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

	free := newLimiter(0, 0, t0)
	free.spend(1e9, 1e12)
	if n, wait := free.allow(t0, 7); n != 7 || wait != 0 {
		t.Fatalf("no limit: %d, %v", n, wait)
	}
}
