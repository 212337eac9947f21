// Package autopart is the pure core of automatic partitioning of keyed computations
// (flow-docs §2.4 "Auto-partitioning of keyed computations", §3.6): the partition count from
// measured load and Flow's per-partition targets, smoothed by the double and half delays and
// held within the allowed deviation (Count), and new key ranges cut from the observed key
// quantiles of the current partitions (Split, Pivots). It does no I/O and reads no clock:
// the controller passes the time and the measurements in.
package autopart

import (
	"fmt"
	"math"
	"time"
)

// Flow's partitioning defaults (flow-docs §2.4, §3.6).
const (
	DefaultMinCount    = 3
	DefaultMaxCount    = 20000
	DefaultDeviation   = 1.1
	DefaultDoubleDelay = 20 * time.Minute
	DefaultHalfDelay   = 200 * time.Minute
	// MinDeviation and MaxDeviation bound allowed_partition_count_deviation.
	MinDeviation = 1.01
	MaxDeviation = 100
)

// Load is the load of one partition or the sum over a computation's partitions. Rates are
// per second; CPU is in cores, Memory in bytes, Timers a count.
type Load struct {
	CPU, Memory, Messages, Bytes, Timers float64
}

// DefaultTargets are Flow's per-partition targets: 0.1 CPU core, 300 MB of memory, 10,000
// messages/s, 2 MB/s and 50,000 timers.
var DefaultTargets = Load{CPU: 0.1, Memory: 300e6, Messages: 10000, Bytes: 2e6, Timers: 50000}

// Driver names, in Params.Optimal's order of preference on a tie.
const (
	DriverCPU      = "cpu_load"
	DriverMemory   = "memory_used"
	DriverMessages = "messages_per_second"
	DriverBytes    = "bytes_per_second"
	DriverTimers   = "timer_count"
	DriverMin      = "min_partition_count"
	DriverMax      = "max_partition_count"
	DriverDesired  = "desired_partition_count"
)

// Params are one computation's partitioning parameters (its dynamic parameters with Flow's
// defaults; DefaultParams).
type Params struct {
	// Min and Max bound the count (min_partition_count 3, max_partition_count 20000).
	Min, Max int
	// Desired pins the count (desired_partition_count; 0: by load).
	Desired int
	// Targets are the per-partition targets (desired_average_partition_*); a target <= 0 is
	// not used.
	Targets Load
	// Deviation is allowed_partition_count_deviation: the count changes only when the
	// smoothed optimal count differs from it by more than this factor (1.01–100; 1.1).
	Deviation float64
	// DoubleDelay (partition_count_double_delay, 20m): a growing count at most doubles per
	// DoubleDelay. HalfDelay (partition_count_half_delay, 200m): a shrinking count halves its
	// distance to the optimal count per HalfDelay (peak hold).
	DoubleDelay, HalfDelay time.Duration
}

// DefaultParams returns Flow's defaults.
func DefaultParams() Params {
	return Params{Min: DefaultMinCount, Max: DefaultMaxCount, Targets: DefaultTargets, Deviation: DefaultDeviation,
		DoubleDelay: DefaultDoubleDelay, HalfDelay: DefaultHalfDelay}
}

// Clamp bounds n by Min and Max (and by 1).
func (p Params) Clamp(n int) int {
	if p.Max > 0 {
		n = min(n, p.Max)
	}
	return max(n, p.Min, 1)
}

// Initial is the count a computation starts with: Desired, else Min (3 by default).
func (p Params) Initial() int {
	if p.Desired > 0 {
		return p.Clamp(p.Desired)
	}
	return p.Clamp(p.Min)
}

// Optimal returns the partition count the total load of a computation needs: for each
// target, the total divided by the target rounded up; the largest of them, bounded by Min and
// Max. driver names the target that decided it, or the bound, or desired_partition_count
// when the count is pinned.
func (p Params) Optimal(total Load) (n int, driver string) {
	if p.Desired > 0 {
		return p.Clamp(p.Desired), DriverDesired
	}
	need, driver := 0.0, ""
	for _, t := range []struct {
		name           string
		total, perPart float64
	}{
		{DriverCPU, total.CPU, p.Targets.CPU}, {DriverMemory, total.Memory, p.Targets.Memory},
		{DriverMessages, total.Messages, p.Targets.Messages}, {DriverBytes, total.Bytes, p.Targets.Bytes},
		{DriverTimers, total.Timers, p.Targets.Timers},
	} {
		if t.perPart > 0 && t.total/t.perPart > need {
			need, driver = t.total/t.perPart, t.name
		}
	}
	n = int(math.Min(math.Ceil(need-1e-9), math.MaxInt32))
	switch c := p.Clamp(n); {
	case c > n:
		return c, DriverMin
	case c < n:
		return c, DriverMax
	}
	return n, driver
}

// Count smooths one computation's optimal partition count over time and decides when the
// count changes. The zero value starts at the first Step's current count.
type Count struct {
	value float64 // smoothed count
	at    time.Time
	set   bool
}

// Decision is what Count.Step decided.
type Decision struct {
	// Current is the count the computation runs with; Optimal the count its load needs now
	// (Params.Optimal) and Driver what decided Optimal; Smoothed the optimal count after the
	// double and half delays.
	Current, Optimal int
	Driver           string
	Smoothed         float64
	// Target is the count to run with: Current unless Repartition.
	Target      int
	Repartition bool
	// Reason says why in words.
	Reason string
}

// Step folds the optimal count for total into the smoothed count at now and decides the
// count: it changes when Current is outside Min..Max, when the count is pinned to another,
// or when the rounded smoothed count differs from Current by more than Deviation.
//
// Smoothing: towards a larger optimal count the smoothed count grows at most ×2 per
// DoubleDelay (it reaches the optimal count when that is nearer); towards a smaller one
// the distance halves every HalfDelay. Time going backwards counts as no time.
func (c *Count) Step(now time.Time, current int, total Load, p Params) Decision {
	opt, driver := p.Optimal(total)
	d := Decision{Current: current, Optimal: opt, Driver: driver, Target: current}
	if !c.set {
		c.value, c.at, c.set = float64(p.Clamp(current)), now, true
	}
	dt := max(now.Sub(c.at), 0)
	c.at = now
	o := float64(opt)
	switch {
	case o > c.value:
		grown := o
		if p.DoubleDelay > 0 {
			grown = c.value * math.Exp2(float64(dt)/float64(p.DoubleDelay))
		}
		c.value = math.Min(o, grown)
	case o < c.value:
		gap := c.value - o
		if p.HalfDelay > 0 {
			gap *= math.Exp2(-float64(dt) / float64(p.HalfDelay))
		} else {
			gap = 0
		}
		c.value = o + gap
	}
	d.Smoothed = c.value
	want := p.Clamp(int(math.Round(c.value)))
	switch {
	case p.Desired > 0:
		want = opt
		if want != current {
			d.Target, d.Repartition = want, true
			d.Reason = fmt.Sprintf("desired_partition_count is %d", want)
		}
	case current != p.Clamp(current):
		d.Target, d.Repartition = p.Clamp(current), true
		d.Reason = fmt.Sprintf("%d partitions is outside min_partition_count %d .. max_partition_count %d", current, p.Min, p.Max)
		c.value = float64(d.Target)
	case want != current && ratio(want, current) > deviation(p):
		d.Target, d.Repartition = want, true
		d.Reason = fmt.Sprintf("%s needs %d partitions (smoothed %.2f), %d differs from %d by more than allowed_partition_count_deviation %g",
			driver, opt, c.value, want, current, deviation(p))
	}
	return d
}

func deviation(p Params) float64 {
	if p.Deviation <= 0 {
		return DefaultDeviation
	}
	return p.Deviation
}

func ratio(a, b int) float64 {
	if a < b {
		a, b = b, a
	}
	return float64(a) / float64(max(b, 1))
}
