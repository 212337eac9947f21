package controller

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/ytflow/yt-flow/ytstore"
)

// TestSimulation drives the scheduler through random worker deaths and
// arrivals, expiring leases, failing jobs, target changes, repartitioning and
// driver failures, applying decisions as the driver does, and checks the
// exactly-once invariants after every cycle. A failing seed prints itself; rerun
// one with -run 'TestSimulation/seed=N'.
func TestSimulation(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 50
	}
	for seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { simulate(t, uint64(seed)) })
	}
}

type simulation struct {
	t       *testing.T
	seed    uint64
	rng     *rand.Rand
	w       *world
	s       *Scheduler
	history map[string][]string // partition id -> leases of all its jobs, in order
	// applied holds, per job, the flags its worker has applied (it polls the
	// job row only now and then), as the worker echoes them.
	applied map[string][2]bool // job id -> {draining, retiring}
	nextW   int
	step    int
}

func simulate(t *testing.T, seed uint64) {
	sim := &simulation{
		t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 0x5eed)),
		w: newWorld("w0", "w1"), s: &Scheduler{}, history: map[string][]string{}, applied: map[string][2]bool{}, nextW: 2,
	}
	for sim.step = 0; sim.step < 200; sim.step++ {
		sim.faults()
		sim.reportStatuses()
		sim.cycle()
	}
	// Quiet period: the pipeline must converge to one job per partition.
	sim.w.target = ytstore.TargetWorking
	if len(sim.liveWorkers()) == 0 {
		sim.w.workers["w-final"] = true
	}
	for range 2*FailureBackoffMax/500_000 + 10 { // longer than the longest restart backoff
		sim.reportStatuses()
		sim.cycle()
		sim.step++
	}
	if sim.w.state != ytstore.StateWorking && sim.w.state != ytstore.StateCompleted {
		sim.fail("did not return to working: %s", sim.w.state)
	}
	for id, pt := range sim.w.partitions {
		if pt.State == ytstore.PartitionDraining {
			sim.fail("retiring partition %s never removed", id)
		}
		if !slices.ContainsFunc(mapValues(sim.w.jobs), func(j ytstore.Job) bool { return j.PartitionID == id }) {
			sim.fail("partition %s has no job after a quiet period", id)
		}
	}
}

func (sim *simulation) fail(format string, args ...any) {
	sim.t.Helper()
	sim.t.Fatalf("seed %d step %d: %s (rerun: go test ./controller -run 'TestSimulation/seed=%d$')", sim.seed, sim.step, fmt.Sprintf(format, args...), sim.seed)
}

func (sim *simulation) chance(p float64) bool { return sim.rng.Float64() < p }

func (sim *simulation) liveWorkers() []string {
	var ws []string
	for id, alive := range sim.w.workers {
		if alive {
			ws = append(ws, id)
		}
	}
	sort.Strings(ws)
	return ws
}

func (sim *simulation) faults() {
	w := sim.w
	if live := sim.liveWorkers(); len(live) > 0 && sim.chance(0.06) {
		w.workers[live[sim.rng.IntN(len(live))]] = false
	}
	if sim.chance(0.06) {
		w.workers[fmt.Sprintf("w%d", sim.nextW)] = true
		sim.nextW++
	}
	jobs := sortedKeys(w.jobs)
	if len(jobs) > 0 && sim.chance(0.04) {
		w.leases[w.jobs[jobs[sim.rng.IntN(len(jobs))]].LeaseID] = false // expired
	}
	if len(jobs) > 0 && sim.chance(0.04) {
		id := jobs[sim.rng.IntN(len(jobs))]
		w.statuses[id] = ytstore.JobStatus{JobID: id, State: ytstore.JobFailed, Error: "injected", UpdatedAt: w.now}
	}
	if len(jobs) > 0 && sim.chance(0.02) {
		// A deposed leader's late write: a second job for a partition.
		j := w.jobs[jobs[sim.rng.IntN(len(jobs))]]
		w.nextLease++
		j.JobID += "-stale"
		j.LeaseID = fmt.Sprintf("stale-lease-%d", w.nextLease)
		j.CreatedAt = w.now
		w.leases[j.LeaseID] = true
		w.jobs[j.JobID] = j
	}
	if sim.chance(0.04) {
		w.target = []string{ytstore.TargetWorking, ytstore.TargetStopped, ytstore.TargetPaused}[sim.rng.IntN(3)]
	}
	if sim.chance(0.03) {
		w.topology.Computations[0].PartitionCount = 1 + sim.rng.IntN(4)
	}
	if sim.chance(0.02) {
		w.tablets["//q"] = 1 + sim.rng.IntN(4)
	}
	if sim.chance(0.02) {
		delete(w.tablets, "//q") // tablet count unknown this cycle
	} else if _, ok := w.tablets["//q"]; !ok {
		w.tablets["//q"] = 2
	}
}

// reportStatuses makes jobs on live workers write statuses: messages in
// flight come and go, flags are echoed, epochs advance.
func (sim *simulation) reportStatuses() {
	w := sim.w
	for _, id := range sortedKeys(w.jobs) { // sorted: a seed must replay exactly
		j := w.jobs[id]
		if !w.workers[j.WorkerID] || !w.leases[j.LeaseID] || !sim.chance(0.8) {
			continue
		}
		st := w.statuses[id]
		if st.State == ytstore.JobFailed {
			continue
		}
		if sim.chance(0.6) { // the worker polled its job row
			sim.applied[id] = [2]bool{j.Draining || j.Retiring, j.Retiring}
		}
		applied := sim.applied[id]
		st.JobID, st.WorkerID, st.State = id, j.WorkerID, ytstore.JobRunning
		st.Draining = applied[0]
		st.InFlight = 0
		if !applied[1] && sim.chance(0.5) { // only a retiring job takes no input
			st.InFlight = int64(sim.rng.IntN(3))
		}
		if !st.Draining || sim.chance(0.2) {
			st.Epoch++
		}
		st.UpdatedAt = w.now
		w.statuses[id] = st
	}
}

// cycle runs one scheduling step, applies it like the driver (aborting leases
// first; a failed abort skips the rest) and checks the invariants.
func (sim *simulation) cycle() {
	w := sim.w
	in := w.input()
	before := maps(w.jobs)
	d := sim.s.Step(in)

	// Every removed job's lease is aborted.
	for _, id := range d.Layout.DeleteJobs {
		if j, ok := before[id]; ok && !slices.Contains(d.AbortLeases, j.LeaseID) {
			sim.fail("job %s removed without aborting lease %s", id, j.LeaseID)
		}
	}
	// A retired partition goes only once its job applied retiring.
	for _, pid := range d.Layout.DeletePartitions {
		if w.partitions[pid].State != ytstore.PartitionDraining {
			continue
		}
		for id, j := range before {
			if j.PartitionID == pid && !sim.applied[id][1] {
				sim.fail("retired partition %s removed while its job %s has not applied retiring", pid, id)
			}
		}
	}
	// Stopped or completed only once every job applied draining.
	if (d.PipelineState == ytstore.StateStopped || d.PipelineState == ytstore.StateCompleted) && in.PipelineState != d.PipelineState {
		for id := range before {
			if !sim.applied[id][0] {
				sim.fail("pipeline %s while job %s has not applied draining", d.PipelineState, id)
			}
		}
	}
	// New jobs go to workers alive at the decision.
	for _, j := range d.Layout.PutJobs {
		if j.LeaseID == "" && !in.WorkerAlive[j.WorkerID] {
			sim.fail("job %s assigned to dead worker %s", j.JobID, j.WorkerID)
		}
	}
	// The driver: abort leases; a failing abort skips the rest of the cycle.
	for _, l := range d.AbortLeases {
		if sim.chance(0.02) {
			return
		}
		w.leases[l] = false
	}
	if sim.chance(0.02) { // the layout write fails: new leases would be aborted as strays
		return
	}
	d.AbortLeases = nil
	created := w.apply(sim.t, d)
	for _, j := range created {
		for _, old := range sim.history[j.PartitionID] {
			if w.leases[old] {
				sim.fail("job %s of %s created while an older lease %s is alive", j.JobID, j.PartitionID, old)
			}
		}
		sim.history[j.PartitionID] = append(sim.history[j.PartitionID], j.LeaseID)
	}
	sim.checkLayout()
}

// checkLayout checks the layout after a cycle: at most one job per
// partition, every job holds a live lease and has a partition, no jobs while
// paused/stopped/completed, active hash ranges tile the key space.
func (sim *simulation) checkLayout() {
	w := sim.w
	owner := map[string]string{}
	for id, j := range w.jobs {
		if other, dup := owner[j.PartitionID]; dup {
			sim.fail("partition %s has two jobs: %s and %s", j.PartitionID, other, id)
		}
		owner[j.PartitionID] = id
		if !w.leases[j.LeaseID] {
			sim.fail("job %s has no live lease (%s)", id, j.LeaseID)
		}
		if _, ok := w.partitions[j.PartitionID]; !ok {
			sim.fail("job %s of missing partition %s", id, j.PartitionID)
		}
	}
	// Strict distribution ordering: no job for a range a retiring partition
	// still overlaps.
	for id, j := range w.jobs {
		pt := w.partitions[j.PartitionID]
		if pt.State != ytstore.PartitionActive || pt.SourceID != "" {
			continue
		}
		for _, q := range w.partitions {
			if q.ComputationID == pt.ComputationID && q.State == ytstore.PartitionDraining && RangesOverlap(pt.LowerKey, pt.UpperKey, q.LowerKey, q.UpperKey) {
				sim.fail("job %s of %s runs while retiring partition %s overlaps its range", id, pt.PartitionID, q.PartitionID)
			}
		}
	}
	switch w.state {
	case ytstore.StatePaused, ytstore.StateStopped, ytstore.StateCompleted:
		if len(w.jobs) != 0 {
			sim.fail("%d jobs while %s", len(w.jobs), w.state)
		}
	}
	// Active hash-range partitions cover the key space exactly.
	var ranges [][2]uint64
	for _, pt := range w.partitions {
		if pt.ComputationID == "counter" && pt.State == ytstore.PartitionActive {
			ranges = append(ranges, [2]uint64{pt.LowerKey, pt.UpperKey})
		}
	}
	if len(ranges) == 0 {
		return
	}
	sort.Slice(ranges, func(i, j int) bool { return ranges[i][0] < ranges[j][0] })
	next := uint64(0)
	for i, r := range ranges {
		if r[0] != next || (i < len(ranges)-1 && r[1] == 0) {
			sim.fail("active ranges %x do not tile the hash space", ranges)
		}
		next = r[1]
	}
	if next != 0 {
		sim.fail("active ranges %x end at %#x, not 2^64", ranges, next)
	}
}

func maps(m map[string]ytstore.Job) map[string]ytstore.Job {
	out := make(map[string]ytstore.Job, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func mapValues(m map[string]ytstore.Job) []ytstore.Job {
	out := make([]ytstore.Job, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// FuzzSimulation explores more seeds of TestSimulation: go test ./controller -fuzz FuzzSimulation.
func FuzzSimulation(f *testing.F) {
	for _, seed := range []uint64{0, 1, 42, 1 << 40} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) { simulate(t, seed) })
}
