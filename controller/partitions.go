// The partition set: desired partitions of the topology, their ids and key ranges, and their reconciliation.

package controller

import (
	"fmt"
	"math/bits"
	"strconv"

	"github.com/ytflow/yt-flow/internal/autopart"
	"github.com/ytflow/yt-flow/ytstore"
)

// desiredPartitions returns the partitions the topology asks for, and the
// computations and sources whose partition set is unknown this cycle.
//
// A computation partitioned by load keeps its active partitions while they cover the key
// space, takes the ranges of a repartitioning (auto) when there is one, and starts with
// PartitionCount equal ranges.
func desiredPartitions(t Topology, listed map[string][]int64, current []ytstore.Partition, auto map[string][]autopart.Range) (map[string]ytstore.Partition, map[string]bool) {
	want := map[string]ytstore.Partition{}
	unknown := map[string]bool{} // "computation/src/source" prefixes
	for _, c := range t.Computations {
		if len(c.Sources) == 0 && c.Auto != nil {
			active, _ := keyedPartitions(current, c.ID)
			rs, ok := auto[c.ID]
			switch {
			case ok:
			case autopart.Covers(rangesOf(active)):
				for _, pt := range active {
					want[pt.PartitionID] = pt
				}
				continue
			default:
				rs = autopart.Even(max(c.PartitionCount, 1))
			}
			for _, pt := range rangePartitions(c.ID, rs) {
				want[pt.PartitionID] = pt
			}
			continue
		}
		if len(c.Sources) == 0 {
			n := max(c.PartitionCount, 1)
			for i := range n {
				lo, hi := HashRange(i, n)
				id := KeyedPartitionID(c.ID, i, n)
				want[id] = ytstore.Partition{PartitionID: id, ComputationID: c.ID, LowerKey: lo, UpperKey: hi, SourcePartition: -1, State: ytstore.PartitionActive}
			}
			continue
		}
		for _, src := range c.Sources {
			indexes := []int64{0}
			if src.ListKey != "" {
				ix, ok := listed[src.ListKey]
				if !ok {
					unknown[sourcePrefix(c.ID, src.ID)] = true
					continue
				}
				indexes = ix
			}
			for _, ix := range indexes {
				id := SourcePartitionID(c.ID, src.ID, ix)
				want[id] = ytstore.Partition{PartitionID: id, ComputationID: c.ID, SourcePartition: ix, SourceID: src.ID, State: ytstore.PartitionActive}
			}
		}
	}
	return want, unknown
}

func sourcePrefix(computation, source string) string { return computation + "/src/" + source + "/" }

// KeyedPartitionID names the i-th of n hash-range partitions of a computation.
func KeyedPartitionID(computation string, i, n int) string {
	return computation + "/" + strconv.Itoa(i) + "of" + strconv.Itoa(n)
}

// SourcePartitionID names the partition of a source computation reading one
// source partition (queue tablet).
func SourcePartitionID(computation, source string, index int64) string {
	return sourcePrefix(computation, source) + strconv.FormatInt(index, 10)
}

// HashRange returns the i-th of n equal ranges [lower, upper) of the uint64
// hash space; upper 0 stands for 2^64. 0 <= i < n.
func HashRange(i, n int) (lower, upper uint64) {
	at := func(k int) uint64 {
		if k >= n {
			return 0
		}
		q, _ := bits.Div64(uint64(k), 0, uint64(n)) // floor(k * 2^64 / n)
		return q
	}
	return at(i), at(i + 1)
}

// reconcilePartitions builds the partition set: creates missing ones, retires
// keyed partitions the topology no longer has (they stay until their job has
// delivered its outbox), deletes partitions of unknown computations and
// vanished source partitions, and deletes retired partitions whose job is done.
func (p *plan) reconcilePartitions(statuses map[string]ytstore.JobStatus) {
	want, unknown := desiredPartitions(p.in.Topology, p.in.SourcePartitions, p.in.Partitions, p.auto)
	keyed := map[string]bool{}
	known := map[string]bool{}
	for _, c := range p.in.Topology.Computations {
		known[c.ID] = true
		keyed[c.ID] = len(c.Sources) == 0
	}
	jobsOf := map[string][]ytstore.Job{}
	for _, j := range p.in.Jobs {
		jobsOf[j.PartitionID] = append(jobsOf[j.PartitionID], j)
	}
	// retired: every job of the partition applied retiring and holds nothing.
	retired := func(pid string) bool {
		for _, j := range jobsOf[pid] {
			st, ok := statuses[j.JobID]
			if !j.Retiring || !ok || !st.Draining || st.InFlight != 0 {
				return false
			}
		}
		return len(jobsOf[pid]) > 0
	}
	put := func(pt ytstore.Partition) {
		p.d.Layout.PutPartitions = append(p.d.Layout.PutPartitions, pt)
		p.changed = true
	}
	del := func(pt ytstore.Partition, reason string) {
		p.d.Layout.DeletePartitions = append(p.d.Layout.DeletePartitions, pt.PartitionID)
		p.d.Events = append(p.d.Events, fmt.Sprintf("partition %s removed: %s", pt.PartitionID, reason))
		p.changed = true
	}
	for _, pt := range p.in.Partitions {
		_, desired := want[pt.PartitionID]
		switch {
		case !known[pt.ComputationID]:
			del(pt, "computation not in the spec")
		case desired:
			if pt.State == ytstore.PartitionDraining {
				pt.State = ytstore.PartitionActive
				put(pt)
			}
			p.partitions[pt.PartitionID] = pt
		case unknownSource(pt, unknown):
			p.partitions[pt.PartitionID] = pt
		case !keyed[pt.ComputationID]:
			del(pt, "source partition no longer exists")
		case pt.State != ytstore.PartitionDraining:
			pt.State = ytstore.PartitionDraining
			put(pt)
			p.d.Events = append(p.d.Events, fmt.Sprintf("partition %s retiring: repartitioned", pt.PartitionID))
			p.partitions[pt.PartitionID] = pt
		default:
			if retired(pt.PartitionID) {
				del(pt, "retired partition delivered its outbox")
				continue
			}
			p.partitions[pt.PartitionID] = pt
		}
	}
	for _, id := range sortedKeys(want) {
		if _, ok := p.partitions[id]; !ok {
			p.partitions[id] = want[id]
			put(want[id])
			p.d.Events = append(p.d.Events, "partition "+id+" created")
		}
	}
}

// blocked reports whether an active hash-range partition must wait without a
// job because a retiring (draining) partition of the same computation with
// an overlapping key range still exists: the retiring job may still deliver
// outputs derived from keys of the range, and outputs of the new partition
// for the same keys must not overtake them (strict distribution ordering,
// docs/runtime-protocol.md). Meanwhile upstream jobs find no route for those
// keys and keep the messages in their outboxes.
// Invariant: a partition never has a job while a retiring partition with an
// overlapping range exists (TestRepartitionNewPartitionsWaitForOldRanges,
// TestSimulation).
func (p *plan) blocked(pid string) bool {
	pt := p.partitions[pid]
	if pt.SourceID != "" || pt.State != ytstore.PartitionActive || p.relaxed[pt.ComputationID] {
		return false
	}
	for _, q := range p.partitions {
		if q.ComputationID == pt.ComputationID && q.SourceID == "" && q.State == ytstore.PartitionDraining &&
			RangesOverlap(pt.LowerKey, pt.UpperKey, q.LowerKey, q.UpperKey) {
			return true
		}
	}
	return false
}

// RangesOverlap reports whether the hash ranges [lo1, up1) and [lo2, up2)
// intersect; an upper bound 0 stands for 2^64.
func RangesOverlap(lo1, up1, lo2, up2 uint64) bool {
	below := func(x, upper uint64) bool { return upper == 0 || x < upper }
	return below(lo1, up2) && below(lo2, up1)
}

func unknownSource(pt ytstore.Partition, unknown map[string]bool) bool {
	return pt.SourceID != "" && unknown[sourcePrefix(pt.ComputationID, pt.SourceID)]
}
