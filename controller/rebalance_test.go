package controller

import (
	"strings"
	"testing"

	"github.com/ytflow/yt-flow/ytstore"
)

// reportBusy writes every job's status with busy time growing by cores[partition] over the
// last step (500ms).
func reportBusy(w *world, cores map[string]float64) {
	for id, j := range w.jobs {
		st := w.statuses[id]
		st.JobID, st.WorkerID, st.State, st.UpdatedAt = id, j.WorkerID, ytstore.JobRunning, w.now
		st.BusyTime += ytstore.OptionalUint64(cores[j.PartitionID] * 500_000)
		w.statuses[id] = st
	}
}

// TestRebalanceByWeight: two workers with two jobs each, one carrying both busy partitions
// (0.9 cores each) and the other both quiet ones (0.1): once measured, one busy job and one
// quiet job swap workers, and nothing moves after (1.0 and 1.0 cores). Below Flow's 1-core
// spread nothing moves at all.
func TestRebalanceByWeight(t *testing.T) {
	run := func(busy, quiet float64, steps int) (*world, int) {
		w := newWorld("w1", "w2")
		w.topology = Topology{Computations: []Computation{{ID: "counter", PartitionCount: 4}}}
		var s Scheduler
		w.step(t, &s)
		cores := map[string]float64{}
		for _, j := range w.jobs {
			cores[j.PartitionID] = quiet
			if j.WorkerID == "w1" {
				cores[j.PartitionID] = busy
			}
		}
		moves := 0
		for range steps {
			reportBusy(w, cores)
			d, _ := w.step(t, &s)
			for _, e := range d.Events {
				if strings.Contains(e, "rebalanced by weight") {
					moves++
				}
			}
			per := map[string]int{}
			for _, j := range w.jobs {
				per[j.WorkerID]++
			}
			if per["w1"] != 2 || per["w2"] != 2 {
				t.Fatalf("job counts %v, want 2 and 2", per)
			}
		}
		return w, moves
	}
	w, moves := run(0.9, 0.1, 80)
	if moves != 2 {
		t.Errorf("%d jobs moved by weight, want one swap (2)", moves)
	}
	busyOn := map[string]int{}
	for _, j := range w.jobs {
		if j.PartitionID == "counter/0of4" || j.PartitionID == "counter/2of4" {
			busyOn[j.WorkerID]++
		}
	}
	if busyOn["w1"] != 1 || busyOn["w2"] != 1 {
		t.Errorf("busy partitions by worker %v, want one each", busyOn)
	}
	if _, moves := run(0.3, 0.1, 80); moves != 0 {
		t.Errorf("%d jobs moved at a spread of 0.4 cores, below rebalance_min_cpu_spread", moves)
	}
}
