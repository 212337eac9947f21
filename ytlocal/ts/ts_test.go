package ts

import (
	"testing"
	"time"
)

func TestOracleIsStrictlyMonotonic(t *testing.T) {
	wall := time.Unix(1_700_000_000, 0)
	o := &Oracle{Now: func() time.Time { return wall }}
	prev := o.Next()
	if got := Time(prev); !got.Equal(wall) {
		t.Fatalf("first timestamp encodes %v, want %v", got, wall)
	}
	for i := 0; i < 1000; i++ {
		next := o.Next()
		if next <= prev {
			t.Fatalf("timestamp %d not greater than %d", next, prev)
		}
		prev = next
	}
	// A clock going backwards never produces a smaller timestamp.
	wall = wall.Add(-time.Hour)
	if next := o.Next(); next <= prev {
		t.Fatalf("after clock step back: %d <= %d", next, prev)
	}
}

func TestObserveAdvancesPastReplayedTimestamps(t *testing.T) {
	o := &Oracle{Now: func() time.Time { return time.Unix(100, 0) }}
	seen := uint64(200) << counterBits
	o.Observe(seen)
	o.Observe(SyncLastCommitted) // sentinels are ignored
	if next := o.Next(); next <= seen || next >= Max {
		t.Fatalf("Next after Observe(%d) = %d", seen, next)
	}
	if o.Last() <= seen {
		t.Fatalf("Last = %d", o.Last())
	}
}
