// Table tests of the timer clocks (EventClock).

package epoch

import (
	"math"
	"testing"
	"time"
)

func TestEventClock(t *testing.T) {
	two := map[string]time.Duration{"a": time.Second, "b": 3 * time.Second}
	for _, tc := range []struct {
		name   string
		ew     uint64
		delays map[string]time.Duration
		want   uint64
	}{
		{"no delays", 10_000_000, nil, 10_000_000},
		{"the largest delay governs", 10_000_000, two, 7_000_000},
		{"non-positive delays count as none", 10_000_000, map[string]time.Duration{"a": 0, "b": -time.Second}, 10_000_000},
		{"sub-microsecond delays round down", 10, map[string]time.Duration{"a": 999 * time.Nanosecond}, 10},
		{"+inf stays +inf", math.MaxUint64, two, math.MaxUint64},
		{"a delay above the watermark gives 0", 2_000_000, two, 0},
		{"a watermark of 0 stays 0", 0, two, 0},
	} {
		if got := EventClock(tc.ew, tc.delays); got != tc.want {
			t.Errorf("%s: EventClock(%d, %v) = %d, want %d", tc.name, tc.ew, tc.delays, got, tc.want)
		}
	}
}
