package autopart

import (
	"strings"
	"testing"
	"time"
)

// TestOptimalCount checks the count from load and Flow's default targets against hand-computed
// values: the largest total/target rounded up, bounded by min and max.
func TestOptimalCount(t *testing.T) {
	def := DefaultParams()
	max8 := def
	max8.Max = 8
	pinned := def
	pinned.Desired = 7
	for _, tc := range []struct {
		name   string
		p      Params
		load   Load
		n      int
		driver string
	}{
		{"idle", def, Load{}, 3, DriverMin},
		{"messages 35000/s", def, Load{Messages: 35000}, 4, DriverMessages},
		{"bytes beat messages", def, Load{Messages: 35000, Bytes: 9e6}, 5, DriverBytes},
		{"cpu 0.95 cores", def, Load{CPU: 0.95}, 10, DriverCPU},
		{"timers", def, Load{Timers: 1e6}, 20, DriverTimers},
		{"memory 1.2 GB", def, Load{Memory: 1.2e9}, 4, DriverMemory},
		{"exactly on target", def, Load{Messages: 40000}, 4, DriverMessages},
		{"max 20000", def, Load{Messages: 1e9}, 20000, DriverMax},
		{"max_partition_count 8", max8, Load{Messages: 1e5}, 8, DriverMax},
		{"pinned", pinned, Load{Messages: 1e6}, 7, DriverDesired},
	} {
		n, driver := tc.p.Optimal(tc.load)
		if n != tc.n || driver != tc.driver {
			t.Errorf("%s: Optimal = %d (%s), want %d (%s)", tc.name, n, driver, tc.n, tc.driver)
		}
	}
}

// TestCountDoubleAndHalfDelays drives Count with an injected clock: a load needing 12
// partitions grows the count from 3 at most ×2 per partition_count_double_delay (20m), and
// when the load falls to 4 partitions' worth the distance halves per
// partition_count_half_delay (200m); the count changes only outside the allowed deviation.
func TestCountDoubleAndHalfDelays(t *testing.T) {
	p := DefaultParams()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var c Count
	step := func(at time.Duration, current int, msgs float64, target int, repartition bool, smoothed float64) Decision {
		t.Helper()
		d := c.Step(t0.Add(at), current, Load{Messages: msgs}, p)
		if d.Target != target || d.Repartition != repartition || d.Smoothed < smoothed-1e-6 || d.Smoothed > smoothed+1e-6 {
			t.Fatalf("at %v from %d: target %d repartition %v smoothed %.4f, want %d %v %.4f (%s)",
				at, current, d.Target, d.Repartition, d.Smoothed, target, repartition, smoothed, d.Reason)
		}
		return d
	}
	step(0, 3, 120000, 3, false, 3)                       // optimal 12; no time has passed
	step(10*time.Minute, 3, 120000, 4, true, 4.242640687) // 3·2^(1/2) = 4.24 → 4; 4/3 > 1.1
	step(20*time.Minute, 4, 120000, 6, true, 6)           // 4.24·2^(1/2) = 6
	step(30*time.Minute, 6, 120000, 8, true, 8.485281374) // 6·√2
	d := step(40*time.Minute, 8, 120000, 12, true, 12)    // reaches the optimal count
	if d.Driver != DriverMessages || !strings.Contains(d.Reason, "messages_per_second needs 12") {
		t.Errorf("reason %q, driver %q", d.Reason, d.Driver)
	}
	step(50*time.Minute, 12, 120000, 12, false, 12) // stays
	step(40*time.Minute, 12, 120000, 12, false, 12) // the clock going back counts as no time
	step(240*time.Minute, 12, 40000, 8, true, 8)    // optimal 4: 4 + 8·2^-1 = 8
	step(440*time.Minute, 8, 40000, 6, true, 6)     // 4 + 4·2^-1
	step(640*time.Minute, 6, 40000, 5, true, 5)     // 4 + 2·2^-1 = 5; 6/5 > 1.1
	step(840*time.Minute, 5, 40000, 5, false, 4.5)  // 4.5 rounds to 5
	step(1040*time.Minute, 5, 40000, 4, true, 4.25) // 4.25 rounds to 4; 5/4 > 1.1
	step(2000*time.Minute, 4, 0, 3, true, 3.044871) // idle: optimal is min_partition_count 3: 3 + 1.25·2^-4.8
}

// TestCountDeviationBoundsAndPin: a count within allowed_partition_count_deviation of the
// smoothed optimal count stays; a count outside min/max moves into them at once; a pinned
// count moves to desired_partition_count at once.
func TestCountDeviationBoundsAndPin(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := DefaultParams()
	var c Count
	c.Step(t0, 10, Load{Messages: 110000}, p)
	if d := c.Step(t0.Add(time.Hour), 10, Load{Messages: 110000}, p); d.Repartition || d.Smoothed != 11 {
		t.Errorf("11 vs 10 is within deviation 1.1: %+v", d)
	}
	if d := c.Step(t0.Add(2*time.Hour), 10, Load{Messages: 120000}, p); !d.Repartition || d.Target != 12 {
		t.Errorf("12 vs 10 is outside deviation 1.1: %+v", d)
	}
	var b Count
	if d := b.Step(t0, 1, Load{}, p); !d.Repartition || d.Target != 3 || !strings.Contains(d.Reason, "min_partition_count 3") {
		t.Errorf("1 partition is below min_partition_count 3: %+v", d)
	}
	pin := p
	pin.Desired = 5
	var q Count
	if d := q.Step(t0, 3, Load{Messages: 1e6}, pin); !d.Repartition || d.Target != 5 || d.Driver != DriverDesired {
		t.Errorf("pinned to 5: %+v", d)
	}
	if d := q.Step(t0, 5, Load{Messages: 1e6}, pin); d.Repartition {
		t.Errorf("pinned count reached: %+v", d)
	}
	dev := p
	dev.Deviation = 2
	var r Count
	r.Step(t0, 4, Load{Messages: 70000}, dev)
	if d := r.Step(t0.Add(time.Hour), 4, Load{Messages: 70000}, dev); d.Repartition {
		t.Errorf("7 vs 4 is within deviation 2: %+v", d)
	}
	if d := r.Step(t0.Add(2*time.Hour), 4, Load{Messages: 90000}, dev); !d.Repartition || d.Target != 9 {
		t.Errorf("9 vs 4 is outside deviation 2: %+v", d)
	}
}
