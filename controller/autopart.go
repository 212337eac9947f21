// Partitioning by load: the scheduler's driver around internal/autopart. It turns the load
// reports of the jobs (job_status) into rates, folds each auto-partitioned computation's total
// into its smoothed partition count and, when the count changes, cuts new ranges from the
// partitions' pivots. The new partition set then goes through the same repartitioning as a
// change of desired_partition_count (reconcilePartitions, blocked).

package controller

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"go.ytsaurus.tech/library/go/core/log"

	"github.com/ytflow/yt-flow/internal/autopart"
	"github.com/ytflow/yt-flow/ytstore"
)

// LoadWindow (µs) is the least span between two statuses of a job (by their updated_at) that a
// load rate is taken from.
const LoadWindow = 2_000_000

// JobSettle (µs): a job's rate counts only from windows that start at least this long after
// its first status: a new partition starts with the backlog that waited for the retiring ones,
// and its first seconds would overstate its share.
const JobSettle = 2 * LoadWindow

// MinRepartitionCooldown (µs) is the least time between two repartitionings by load, of any
// computation, and between a leader's first step and its first repartitioning; the cooldown is
// partition_count_double_delay / 20 (1m by default) when that is longer.
const MinRepartitionCooldown = 2 * LoadWindow

// PartitionCount is what the controller says of the partition count of one keyed computation
// (Decision.Partitioning, shown by yt-flow status and the metrics).
type PartitionCount struct {
	Computation string
	// ByLoad is false for a count pinned by desired_partition_count.
	ByLoad bool
	// Current is the number of active partitions; Optimal the count the measured load needs
	// (0 while not every partition is measured) and Driver what decides it (a target such
	// as messages_per_second, or min_partition_count …); Smoothed is Optimal after the double
	// and half delays.
	Current, Optimal int
	Smoothed         float64
	Driver           string
	// Load is the measured total of the computation's active partitions.
	Load autopart.Load
	// Reason says why the count is what it is or why it does not change now.
	Reason string
	// HeavyHitters are key hashes that alone carry more than one partition's share of the load.
	HeavyHitters []uint64
}

// jobRate turns one job's load reports into rates.
type jobRate struct {
	first    uint64            // updated_at of its first status
	base     ytstore.JobStatus // the status the next rate is measured from
	rate     autopart.Load
	measured bool
}

// partitioner is the Scheduler's memory for partitioning by load.
type partitioner struct {
	jobs   map[string]*jobRate        // by job id
	counts map[string]*autopart.Count // by computation
	// last is the time (µs) of the last repartitioning by load, or of the first step.
	last uint64
}

// observe folds the statuses into the job rates.
func (a *partitioner) observe(statuses []ytstore.JobStatus) {
	seen := map[string]bool{}
	for _, st := range statuses {
		if st.UpdatedAt == 0 || st.State != ytstore.JobRunning {
			continue
		}
		seen[st.JobID] = true
		j := a.jobs[st.JobID]
		if j == nil || st.Messages < j.base.Messages || st.Bytes < j.base.Bytes || st.BusyTime < j.base.BusyTime || st.UpdatedAt < j.base.UpdatedAt {
			a.jobs[st.JobID] = &jobRate{first: st.UpdatedAt, base: st} // new, or restarted under the same id
			continue
		}
		span := st.UpdatedAt - j.base.UpdatedAt
		if span < LoadWindow {
			j.rate.Timers = float64(st.Timers)
			continue
		}
		sec := float64(span) / 1e6
		j.rate = autopart.Load{
			Messages: float64(st.Messages-j.base.Messages) / sec,
			Bytes:    float64(st.Bytes-j.base.Bytes) / sec,
			CPU:      float64(st.BusyTime-j.base.BusyTime) / 1e6 / sec,
			Timers:   float64(st.Timers),
		}
		j.measured = j.measured || j.base.UpdatedAt >= j.first+JobSettle
		j.base = st
	}
	for id := range a.jobs {
		if !seen[id] {
			delete(a.jobs, id)
		}
	}
}

// step decides the auto-partitioned computations' ranges for this cycle: the new ranges of
// each computation to repartition (none for the others), and what it says of every keyed
// computation. working tells whether the pipeline is working (only then does load change a
// count).
func (a *partitioner) step(in *Input, working bool) (map[string][]autopart.Range, []PartitionCount) {
	if a.jobs == nil {
		a.jobs, a.counts, a.last = map[string]*jobRate{}, map[string]*autopart.Count{}, in.Now
	}
	a.observe(in.Statuses)
	jobOf := map[string]ytstore.Job{}
	for _, j := range in.Jobs {
		if !j.Retiring {
			jobOf[j.PartitionID] = j
		}
	}
	statusOf := map[string]ytstore.JobStatus{}
	for _, st := range in.Statuses {
		statusOf[st.JobID] = st
	}
	out := map[string][]autopart.Range{}
	var report []PartitionCount
	now := time.UnixMicro(int64(in.Now))
	for _, c := range in.Topology.Computations {
		if len(c.Sources) > 0 {
			continue
		}
		active, draining := keyedPartitions(in.Partitions, c.ID)
		pc := PartitionCount{Computation: c.ID, Current: len(active), ByLoad: c.Auto != nil}
		if c.Auto == nil {
			pc.Optimal, pc.Driver, pc.Reason = c.PartitionCount, autopart.DriverDesired, fmt.Sprintf("desired_partition_count is %d", c.PartitionCount)
			report = append(report, pc)
			continue
		}
		p := *c.Auto
		switch {
		case !autopart.Covers(rangesOf(active)):
			pc.Reason = "starting: the partitions do not cover the key space yet"
		case draining:
			pc.Reason = "repartitioning: retiring partitions are draining"
		case len(active) != p.Clamp(len(active)) && !working:
			pc.Reason = fmt.Sprintf("the pipeline is not working: %d partitions is outside min_partition_count %d .. max_partition_count %d", len(active), p.Min, p.Max)
		case len(active) != p.Clamp(len(active)):
			n := p.Clamp(len(active))
			out[c.ID] = autopart.Even(n)
			pc.Reason = fmt.Sprintf("%d partitions is outside min_partition_count %d .. max_partition_count %d: %d", len(active), p.Min, p.Max, n)
			a.last = in.Now
		default:
			parts, total, ok := a.measure(active, jobOf, statusOf)
			if !ok {
				pc.Reason = "measuring the load of every partition"
				break
			}
			d := a.count(c.ID).Step(now, len(active), total, p)
			pc.Optimal, pc.Smoothed, pc.Driver, pc.Load = d.Optimal, d.Smoothed, d.Driver, total
			for i := range parts {
				parts[i].Weight = weight(a.jobs[jobOf[active[i].PartitionID].JobID].rate, d.Driver)
			}
			pc.HeavyHitters = autopart.HeavyHitters(parts, max(d.Target, len(active)))
			cooldown := max(uint64(p.DoubleDelay.Microseconds()/20), MinRepartitionCooldown)
			switch {
			case !d.Repartition:
				pc.Reason = fmt.Sprintf("%s needs %d partitions (smoothed %.2f); %d is within allowed_partition_count_deviation %g", d.Driver, d.Optimal, d.Smoothed, len(active), p.Deviation)
			case !working:
				pc.Reason = "the pipeline is not working: " + d.Reason
			case in.Now < a.last+cooldown:
				pc.Reason = fmt.Sprintf("cooling down %v after the last repartitioning: %s", time.Duration(a.last+cooldown-in.Now)*time.Microsecond, d.Reason)
			default:
				// Invariant: a count changes by load only while the pipeline works, every
				// partition is measured and none retires (TestPartitioningByLoad,
				// TestAutoPartitioningByLoad).
				out[c.ID] = autopart.Split(parts, d.Target)
				pc.Reason = fmt.Sprintf("repartitioning %d -> %d: %s", len(active), d.Target, d.Reason)
				a.last = in.Now
			}
		}
		report = append(report, pc)
	}
	return out, report
}

func (a *partitioner) count(computation string) *autopart.Count {
	c := a.counts[computation]
	if c == nil {
		c = &autopart.Count{}
		a.counts[computation] = c
	}
	return c
}

// measure returns the active partitions with their pivots and the total load, when every one
// has a running job with a measured rate.
func (a *partitioner) measure(active []ytstore.Partition, jobOf map[string]ytstore.Job, statusOf map[string]ytstore.JobStatus) ([]autopart.Measured, autopart.Load, bool) {
	var total autopart.Load
	parts := make([]autopart.Measured, len(active))
	for i, pt := range active {
		j, ok := jobOf[pt.PartitionID]
		if !ok {
			return nil, total, false
		}
		r := a.jobs[j.JobID]
		if r == nil || !r.measured {
			return nil, total, false
		}
		total.CPU += r.rate.CPU
		total.Memory += r.rate.Memory
		total.Messages += r.rate.Messages
		total.Bytes += r.rate.Bytes
		total.Timers += r.rate.Timers
		parts[i] = autopart.Measured{Range: autopart.Range{Lower: pt.LowerKey, Upper: pt.UpperKey}, Pivots: statusOf[j.JobID].Pivots}
	}
	return parts, total, true
}

// weight is a partition's share of the load that decides the count: the driver's measure,
// or its message rate when a bound or nothing decides it (its bytes when it has no messages).
func weight(l autopart.Load, driver string) float64 {
	switch driver {
	case autopart.DriverCPU:
		return l.CPU
	case autopart.DriverBytes:
		return l.Bytes
	case autopart.DriverTimers:
		return l.Timers
	case autopart.DriverMemory:
		return l.Memory
	}
	if l.Messages > 0 {
		return l.Messages
	}
	return l.Bytes
}

// keyedPartitions returns the active partitions of a keyed computation sorted by key, and
// whether any of its partitions is retiring (draining).
func keyedPartitions(all []ytstore.Partition, computation string) (active []ytstore.Partition, draining bool) {
	for _, pt := range all {
		if pt.ComputationID != computation || pt.SourceID != "" {
			continue
		}
		switch pt.State {
		case ytstore.PartitionActive:
			active = append(active, pt)
		case ytstore.PartitionDraining:
			draining = true
		}
	}
	sort.Slice(active, func(i, j int) bool { return active[i].LowerKey < active[j].LowerKey })
	return active, draining
}

func rangesOf(ps []ytstore.Partition) []autopart.Range {
	out := make([]autopart.Range, len(ps))
	for i, p := range ps {
		out[i] = autopart.Range{Lower: p.LowerKey, Upper: p.UpperKey}
	}
	return out
}

// RangePartitionID names the partition of a computation over the key range [lower, upper)
// (upper 0: 2^64) cut by load; equal ranges keep KeyedPartitionID's names.
func RangePartitionID(computation string, lower, upper uint64) string {
	return fmt.Sprintf("%s/%016x-%016x", computation, lower, upper)
}

// rangePartitions returns the partitions of a keyed computation over rs (sorted, covering).
func rangePartitions(computation string, rs []autopart.Range) []ytstore.Partition {
	even := slices.Equal(rs, autopart.Even(len(rs)))
	out := make([]ytstore.Partition, len(rs))
	for i, r := range rs {
		id := RangePartitionID(computation, r.Lower, r.Upper)
		if even {
			id = KeyedPartitionID(computation, i, len(rs))
		}
		out[i] = ytstore.Partition{PartitionID: id, ComputationID: computation, LowerKey: r.Lower, UpperKey: r.Upper, SourcePartition: -1, State: ytstore.PartitionActive}
	}
	return out
}

// partitionByLoad decides the repartitionings by load of this step (plan.auto) and says why
// (Decision.Partitioning, and an event for each repartitioning).
func (p *plan) partitionByLoad(working bool) {
	p.auto, p.d.Partitioning = p.s.partitioner.step(p.in, working)
	for _, c := range p.d.Partitioning {
		if rs := p.auto[c.Computation]; rs != nil {
			p.d.Events = append(p.d.Events, fmt.Sprintf("computation %s: %s (ranges %s)", c.Computation, c.Reason, describeRanges(rs)))
		}
	}
}

// describeRanges writes ranges for a log line: their lower bounds in hex.
func describeRanges(rs []autopart.Range) string {
	s := ""
	for i, r := range rs {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%016x", r.Lower)
	}
	return "from " + s
}

// partitioningRepublish is how often @partitioning is written again while only its figures
// change.
const partitioningRepublish = 5 * time.Second

// publishPartitioning writes @partitioning when a count, an optimal count or a driver
// changed, and otherwise every partitioningRepublish; a failure is only logged.
func (c *cycler) publishPartitioning(ctx context.Context, pcs []PartitionCount) {
	if len(pcs) == 0 {
		return
	}
	key := ""
	attr := make(map[string]ytstore.PartitionCount, len(pcs))
	for _, pc := range pcs {
		key += fmt.Sprintf("%s:%d:%d:%s:%v:%v;", pc.Computation, pc.Current, pc.Optimal, pc.Driver, pc.ByLoad, pc.HeavyHitters)
		attr[pc.Computation] = ytstore.PartitionCount{
			Current: pc.Current, ByLoad: pc.ByLoad, Optimal: pc.Optimal, Driver: pc.Driver,
			MessagesPerSecond: pc.Load.Messages, BytesPerSecond: pc.Load.Bytes, CPULoad: pc.Load.CPU, Timers: pc.Load.Timers,
			Reason: pc.Reason, HeavyHitters: pc.HeavyHitters,
		}
	}
	if key == c.partitioningKey && time.Since(c.partitioningAt) < partitioningRepublish {
		return
	}
	if err := c.st.SetPartitioning(ctx, c.sess, attr); err != nil {
		c.lg.Warn("cannot publish @partitioning", log.Error(err))
		return
	}
	if key != c.partitioningKey {
		for _, pc := range pcs {
			if pc.ByLoad {
				c.lg.Info("partitioning", log.String("computation", pc.Computation), log.Int("partition_count", pc.Current),
					log.Int("optimal_partition_count", pc.Optimal), log.String("driver", pc.Driver), log.String("reason", pc.Reason))
			}
		}
	}
	c.partitioningKey, c.partitioningAt = key, time.Now()
}
