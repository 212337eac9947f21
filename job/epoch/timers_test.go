// Table tests of the timer clocks (EventClock).

package epoch

import (
	"math"
	"slices"
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

func TestStreamEventClock(t *testing.T) {
	ws := map[string]uint64{"clicks": 10_000_000, "views": 4_000_000, "done": math.MaxUint64}
	delays := map[string]time.Duration{"clicks": 2 * time.Second}
	for _, tc := range []struct {
		name    string
		streams []string
		delays  map[string]time.Duration
		held    uint64
		want    uint64
	}{
		{"one stream", []string{"clicks"}, nil, 0, 10_000_000},
		{"shifted by its delay", []string{"clicks"}, delays, 0, 8_000_000},
		{"the slowest stream governs", []string{"clicks", "views"}, delays, 0, 4_000_000},
		{"a delay applies to its own stream only", []string{"clicks", "views"}, map[string]time.Duration{"views": time.Second}, 0, 3_000_000},
		{"a held message caps it", []string{"clicks"}, delays, 5_000_000, 3_000_000},
		{"a held message ahead does not", []string{"views"}, nil, 5_000_000, 4_000_000},
		{"an unknown stream: nothing fires", []string{"clicks", "missing"}, nil, 0, 0},
		{"+inf stays +inf", []string{"done"}, map[string]time.Duration{"done": time.Hour}, 0, math.MaxUint64},
		{"no stream: +inf", nil, nil, 0, math.MaxUint64},
	} {
		if got := StreamEventClock(ws, tc.streams, tc.delays, tc.held); got != tc.want {
			t.Errorf("%s: StreamEventClock = %d, want %d", tc.name, got, tc.want)
		}
	}
	got := TimerStreams([]string{"b", "a"}, map[string]time.Duration{"a": 1, "c": 2}, []string{"x"})
	if want := []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("TimerStreams = %v, want %v", got, want)
	}
	if got := TimerStreams(nil, nil, []string{"y", "x"}); !slices.Equal(got, []string{"x", "y"}) {
		t.Errorf("TimerStreams without names = %v, want the inputs [x y]", got)
	}
}
