package controller

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ytflow/yt-flow/internal/autopart"
	"github.com/ytflow/yt-flow/ytstore"
)

// loadWorld drives a world whose keyed computation "counter" is partitioned by load: every
// step each job reports the messages of its range at the given total rate (keys drawn with
// skew: four in five in the lowest eighth of the hash space) and the pivots of its keys.
type loadWorld struct {
	*world
	keys []uint64
}

func newLoadWorld(t *testing.T) *loadWorld {
	w := newWorld("w1", "w2")
	w.topology.Computations[0] = Computation{ID: "counter", Auto: &autopart.Params{Min: 3, Max: 64,
		Targets: autopart.Load{Messages: 100}, Deviation: 1.1, DoubleDelay: time.Second, HalfDelay: time.Hour}, PartitionCount: 3}
	rng := rand.New(rand.NewPCG(3, 4))
	keys := make([]uint64, 8000)
	for i := range keys {
		keys[i] = rng.Uint64()
		if i%5 != 0 {
			keys[i] >>= 3
		}
	}
	return &loadWorld{world: w, keys: keys}
}

func (w *loadWorld) share(lo, hi uint64) (float64, []uint64) {
	var in []uint64
	for _, k := range w.keys {
		if k >= lo && (hi == 0 || k < hi) {
			in = append(in, k)
		}
	}
	return float64(len(in)) / float64(len(w.keys)), autopart.Pivots(in, 16)
}

// reportLoad writes every job's status with its share of rate messages/s over the last step.
func (w *loadWorld) reportLoad(rate float64) {
	for id, j := range w.jobs {
		st := w.statuses[id]
		st.JobID, st.WorkerID, st.State, st.UpdatedAt = id, j.WorkerID, ytstore.JobRunning, w.now
		st.Draining = j.Draining || j.Retiring
		if j.SourceID == "" {
			share, pivots := w.share(j.LowerKey, j.UpperKey)
			st.Messages += ytstore.OptionalUint64(rate * share / 2) // a step is 500ms
			st.Pivots = pivots
		}
		w.statuses[id] = st
	}
}

func (w *loadWorld) active() []ytstore.Partition {
	var out []ytstore.Partition
	for _, id := range sortedKeys(w.partitions) {
		if pt := w.partitions[id]; pt.ComputationID == "counter" && pt.State == ytstore.PartitionActive {
			out = append(out, pt)
		}
	}
	return out
}

// TestPartitioningByLoad: a keyed computation without desired_partition_count starts on 3
// partitions and stays there while its load needs fewer; when the load rises to 9 partitions'
// worth it grows, at most doubling per partition_count_double_delay, through repartitionings
// whose new partitions wait for the retiring ones, to 9 ranges cut at the observed key
// quantiles: narrow where the keys are dense, and each carrying about a ninth of the load.
func TestPartitioningByLoad(t *testing.T) {
	w := newLoadWorld(t)
	var s Scheduler
	var d *Decision
	for range 20 {
		w.reportLoad(150) // 1.5 partitions' worth
		d, _ = w.step(t, &s)
	}
	if n := len(w.active()); n != 3 {
		t.Fatalf("%d partitions at a low load, want min_partition_count 3", n)
	}
	pc := d.Partitioning[0]
	if pc.Computation != "counter" || !pc.ByLoad || pc.Optimal != 3 || pc.Driver != autopart.DriverMin || !strings.Contains(pc.Reason, "within allowed_partition_count_deviation") {
		t.Errorf("partitioning at a low load: %+v", pc)
	}
	var counts []int
	for step := 0; step < 200 && len(w.active()) != 9; step++ {
		w.reportLoad(900)
		d, _ = w.step(t, &s)
		for _, e := range d.Events {
			if strings.Contains(e, "repartitioning") {
				counts = append(counts, len(w.active()))
				t.Log(e)
				if !strings.Contains(e, "messages_per_second needs") {
					t.Errorf("event %q does not name the driver", e)
				}
			}
		}
		// Invariant: new partitions get no job while a retiring one overlaps them.
		for _, j := range w.jobs {
			pt := w.partitions[j.PartitionID]
			if pt.State != ytstore.PartitionActive || pt.ComputationID != "counter" {
				continue
			}
			for _, q := range w.partitions {
				if q.ComputationID == "counter" && q.State == ytstore.PartitionDraining && RangesOverlap(pt.LowerKey, pt.UpperKey, q.LowerKey, q.UpperKey) {
					t.Fatalf("job %s of %s runs while %s retires", j.JobID, pt.PartitionID, q.PartitionID)
				}
			}
		}
	}
	if len(w.active()) != 9 || len(counts) < 2 || counts[0] > 6 {
		t.Fatalf("grew through %v to %d partitions; want a first step to at most 6 (×2 of 3), then 9", counts, len(w.active()))
	}
	for range 20 { // let every job report and stay
		w.reportLoad(900)
		w.step(t, &s)
	}
	active := w.active()
	if len(active) != 9 {
		t.Fatalf("%d partitions after a steady load, want 9", len(active))
	}
	rs := rangesOf(active)
	if !autopart.Covers(rs) {
		t.Fatalf("ranges %v do not cover the key space", rs)
	}
	narrow, wide := 0, 0
	for _, pt := range active {
		share, _ := w.share(pt.LowerKey, pt.UpperKey)
		if share < 0.7/9 || share > 1.3/9 {
			t.Errorf("partition %s carries %.3f of the load, want about 1/9", pt.PartitionID, share)
		}
		width := pt.UpperKey - pt.LowerKey
		switch {
		case width < 1<<60:
			narrow++
		case width > 1<<61:
			wide++
		}
	}
	if narrow < 6 || wide < 1 {
		t.Errorf("ranges are not cut by load: %d narrow, %d wide: %v", narrow, wide, rs)
	}
	if !slices.ContainsFunc(active, func(p ytstore.Partition) bool { return strings.Contains(p.PartitionID, "-") }) {
		t.Errorf("uneven ranges should be named by range: %v", active)
	}
}

// TestPartitioningByLoadKeepsLayoutAndBounds: a pipeline that ran its keyed computation on one
// partition (the default before partitioning by load) moves to min_partition_count 3 at once,
// retiring the old partition; a new leader (a new Scheduler) keeps uneven ranges cut by an
// earlier one instead of starting again from equal ranges.
func TestPartitioningByLoadKeepsLayoutAndBounds(t *testing.T) {
	w := newLoadWorld(t)
	w.partitions["counter/0of1"] = ytstore.Partition{PartitionID: "counter/0of1", ComputationID: "counter", SourcePartition: -1, State: ytstore.PartitionActive}
	var s Scheduler
	d, _ := w.step(t, &s)
	if got := partitionIDsOf(w.active()); !slices.Equal(got, []string{"counter/0of3", "counter/1of3", "counter/2of3"}) {
		t.Fatalf("active after the first step: %v", got)
	}
	if w.partitions["counter/0of1"].State != ytstore.PartitionDraining {
		t.Errorf("the old partition is not retiring: %+v", w.partitions["counter/0of1"])
	}
	if pc := d.Partitioning[0]; !strings.Contains(pc.Reason, "outside min_partition_count 3") {
		t.Errorf("reason %q", pc.Reason)
	}

	uneven := newLoadWorld(t)
	for _, pt := range rangePartitions("counter", []autopart.Range{{Lower: 0, Upper: 1 << 40}, {Lower: 1 << 40, Upper: 1 << 62}, {Lower: 1 << 62}}) {
		uneven.partitions[pt.PartitionID] = pt
	}
	before := partitionIDsOf(uneven.active())
	var fresh Scheduler
	for range 30 {
		uneven.reportLoad(150)
		d, _ := uneven.step(t, &fresh)
		for _, pt := range d.Layout.PutPartitions {
			if pt.ComputationID == "counter" {
				t.Fatalf("a new leader changed partition %+v", pt)
			}
		}
		if len(d.Layout.DeletePartitions) != 0 {
			t.Fatalf("a new leader deleted partitions %v", d.Layout.DeletePartitions)
		}
	}
	if got := partitionIDsOf(uneven.active()); !slices.Equal(got, before) {
		t.Errorf("partitions %v, want the earlier ranges %v", got, before)
	}
}

func partitionIDsOf(ps []ytstore.Partition) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.PartitionID
	}
	slices.Sort(out)
	return out
}
