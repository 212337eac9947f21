// Rebalancing jobs over workers by measured weight: a job weighs its measured busy cores
// (partitioner, autopart.go) times its computation's weight_multiplier
// (interrupting_weight_multiplier while its partition retires). The job counts stay even
// (assign); between workers whose weights differ by Flow's thresholds the scheduler swaps
// (or, when the heavy worker has more jobs, moves) one job per sync period.

package controller

import (
	"fmt"
	"math"

	"github.com/ytflow/yt-flow/ytstore"
)

// Flow's rebalancing thresholds (job_manager rebalance_min_cpu_spread, rebalance_min_cpu_ratio,
// rebalance_target_deviation, rebalance_sync_period): workers are rebalanced by weight when the
// heaviest carries at least RebalanceMinSpread cores more and RebalanceMinRatio times as much
// as the lightest; an action must cut the spread by RebalanceTargetDeviation of it at least;
// at most one action per RebalanceSyncPeriod (µs).
const (
	RebalanceMinSpread       = 1.0
	RebalanceMinRatio        = 1.2
	RebalanceTargetDeviation = 0.1
	RebalanceSyncPeriod      = 10_000_000
)

// jobWeights returns the measured weight of each partition's current job (none: 0).
func (p *plan) jobWeights() map[string]float64 {
	mult := map[string]float64{}
	interrupting := map[string]float64{}
	for _, c := range p.in.Topology.Computations {
		mult[c.ID], interrupting[c.ID] = c.WeightMultiplier, c.InterruptingWeightMultiplier
	}
	out := map[string]float64{}
	for _, j := range p.in.Jobs {
		r := p.s.partitioner.jobs[j.JobID]
		if r == nil || !r.measured || r.rate.CPU <= 0 {
			continue
		}
		m := mult[j.ComputationID]
		if m <= 0 {
			m = 1
		}
		if p.partitions[j.PartitionID].State == ytstore.PartitionDraining {
			m *= interrupting[j.ComputationID]
		}
		out[j.PartitionID] = r.rate.CPU * m
	}
	return out
}

// rebalanceByWeight swaps one job of the heaviest worker with a lighter one of the lightest
// worker (or moves it there when the heaviest has more jobs), when Flow's thresholds say the
// workers are uneven and the action cuts the spread enough. Job counts stay within one.
// Invariant: a rebalancing by weight keeps at most one job per partition and aborts the moved
// jobs' leases first, as every move (TestRebalanceByWeight, TestSimulation).
func (p *plan) rebalanceByWeight(workers []string, load map[string]int, wload map[string]float64, weights map[string]float64) {
	if len(workers) < 2 || p.in.Now < p.s.lastRebalance+RebalanceSyncPeriod {
		return
	}
	hi, lo := workers[0], workers[0]
	for _, w := range workers[1:] {
		if wload[w] > wload[hi] {
			hi = w
		}
		if wload[w] < wload[lo] {
			lo = w
		}
	}
	spread := wload[hi] - wload[lo]
	if spread < RebalanceMinSpread || wload[hi] < RebalanceMinRatio*wload[lo] {
		return
	}
	movable := func(w string) []string {
		var out []string
		for _, pid := range sortedKeys(p.jobs) {
			if p.jobs[pid].WorkerID == w && !p.isNew[pid] && p.partitions[pid].State != ytstore.PartitionDraining {
				out = append(out, pid)
			}
		}
		return out
	}
	best, bestA, bestB := spread*(1-RebalanceTargetDeviation), "", ""
	for _, a := range movable(hi) {
		if load[hi] > load[lo] {
			if s := math.Abs(spread - 2*weights[a]); s < best {
				best, bestA, bestB = s, a, ""
			}
		}
		for _, b := range movable(lo) {
			if s := math.Abs(spread - 2*(weights[a]-weights[b])); s < best {
				best, bestA, bestB = s, a, b
			}
		}
	}
	if bestA == "" {
		return
	}
	move := func(pid, from, to string) {
		p.removeJob(p.jobs[pid], fmt.Sprintf("rebalanced by weight to worker %s (%.2f vs %.2f cores)", to, wload[from], wload[to]))
		p.jobs[pid] = p.newJob(p.partitions[pid], to)
		p.isNew[pid] = true
	}
	move(bestA, hi, lo)
	if bestB != "" {
		move(bestB, lo, hi)
	}
	p.s.lastRebalance = p.in.Now
}
