package watermark

import (
	"slices"
	"testing"
)

func TestPercentileBound(t *testing.T) {
	ts := []uint64{500, 100, 520, 510}
	for _, c := range []struct {
		name        string
		pct         float64
		delay, want uint64
	}{
		{"value 100: the straggler at 100 is passed", 100, 60, 460},
		{"a delay covering the spread keeps the smallest", 100, 1000, 100},
		{"a delay larger than every value keeps the smallest", 100, 10_000, 100},
		{"50th of four: the second (500)", 50, 10, 490},
		{"a tiny percentile: the smallest", 1, 0, 100},
	} {
		if got := PercentileBound(slices.Clone(ts), c.pct, c.delay); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	if got := PercentileBound(nil, 100, 10); got != 0 {
		t.Errorf("no timestamps: %d, want 0", got)
	}
}
