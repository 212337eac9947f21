package epoch

import (
	"testing"
	"time"
)

func TestPace(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name        string
		took        time.Duration
		factor      int
		limit, want time.Duration
	}{
		{"cheap epoch: factor times its cost", 3 * ms, 4, 50 * ms, 12 * ms},
		{"costly epoch: capped by the limit", 20 * ms, 4, 50 * ms, 50 * ms},
		{"exactly at the cap", 12500 * time.Microsecond, 4, 50 * ms, 50 * ms},
		{"fixed pace ignores the cost", 1 * ms, -1, 50 * ms, 50 * ms},
		{"no factor: no pacing", 3 * ms, 0, 50 * ms, 0},
		{"no cost measured: no pacing", 0, 4, 50 * ms, 0},
		{"no limit (batch_duration 0)", 3 * ms, 4, 0, 0},
	} {
		if got := Pace(c.took, c.factor, c.limit); got != c.want {
			t.Errorf("%s: Pace(%v, %d, %v) = %v, want %v", c.name, c.took, c.factor, c.limit, got, c.want)
		}
	}
}
