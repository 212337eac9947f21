package controller

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/ytflow/yt-flow/internal/autopart"
	"github.com/ytflow/yt-flow/ytstore"
)

// Input is one observation of the pipeline, taken by the driver at the start
// of a scheduling cycle.
type Input struct {
	// Now is the time of the observation, microseconds since the epoch.
	Now uint64
	// HasSpec is false while the pipeline has no spec (never started): no
	// jobs run and the pipeline state is left as it is.
	HasSpec bool
	// Topology is derived from the static and dynamic specs.
	Topology Topology
	// TargetState is @target_state (ytstore.Target*; "" = never started).
	TargetState string
	// PipelineState is the current @pipeline_state ("" = never published).
	PipelineState string
	// Workers are the rows of the workers table.
	Workers []ytstore.Worker
	// WorkerAlive tells, by worker id, whether the worker's session is alive;
	// a missing worker is dead.
	WorkerAlive map[string]bool
	// Partitions, Jobs and Statuses are the rows of the coordination tables.
	Partitions []ytstore.Partition
	Jobs       []ytstore.Job
	Statuses   []ytstore.JobStatus
	// LeaseAlive tells, by lease id, whether the lease answered this cycle's
	// ping; a missing lease is dead.
	LeaseAlive map[string]bool
	// SourcePartitions lists the partition indexes of each listed source, by its
	// Source.ListKey; a source missing here is unknown this cycle and its
	// partitions are left as they are.
	SourcePartitions map[string][]int64
	// FlowCoreTarget is @flow_core_target: only workers whose FlowCoreVersion equals it get
	// jobs, and a controller of another version pauses the pipeline ("": no check;
	// coretarget.go).
	FlowCoreTarget string
	// ControllerVersion is the FlowCoreVersion of this controller's binary, and
	// ControllerChecksum its SHA-256 (set only when the spec validates the checksum).
	ControllerVersion, ControllerChecksum string
}

// Decision is what the driver must apply, in this order: abort AbortLeases
// (all must succeed, otherwise nothing else is applied this cycle), start a
// lease for every job of Layout.PutJobs whose LeaseID is empty, apply Layout,
// publish PipelineState.
type Decision struct {
	// PipelineState is the state to publish.
	PipelineState string
	// AbortLeases are the leases of the jobs Layout removes.
	AbortLeases []string
	// Layout is the change of the coordination tables. PutJobs with an empty
	// LeaseID are new jobs; the others update flags of existing jobs.
	Layout ytstore.LayoutChange
	// Events describe what changed, for logs.
	Events []string
	// Transition says the pipeline is on its way to another state (completing, draining,
	// pausing): the next observation may finish it, so the controller looks again sooner.
	Transition bool
	// SourceCompleted says a source partition completed in this step: the others of a
	// finite pipeline are likely to follow, so the controller looks again sooner for a while.
	SourceCompleted bool
	// Partitioning says, per keyed computation, what its partition count is and why.
	Partitioning []PartitionCount
	// DrainObserved says this step saw every job drained once: the next step, once every
	// job has reported again, may finish the transition, so it comes sooner still.
	DrainObserved bool
	// ControllerMismatch says why this controller pauses the pipeline: its binary is not
	// the FlowCoreTarget's or the spec's (ControllerMismatch); "" when it is.
	ControllerMismatch string
	// VersionMismatchWorkers are the live workers that get no jobs because their version is
	// not the FlowCoreTarget (Flow's version_mismatch_worker_count).
	VersionMismatchWorkers []string
}

// Scheduler makes scheduling decisions. It keeps the little memory decisions
// need across cycles (the first observation of a drained pipeline). The zero
// value is ready; a new leader starts with a new Scheduler.
type Scheduler struct {
	drain map[string]statusMark // nil: no drained observation pending
	// failures holds, per partition, the restart backoff after failed jobs.
	failures map[string]backoff
	// seen maps each live worker to the time this scheduler first saw it (µs; 0 for the
	// workers of its first step); nil before the first step. See settling.
	seen map[string]uint64
	// partitioner keeps the load measurements of partitioning by load (autopart.go).
	partitioner partitioner
	// lastRebalance is the time (µs) of the last rebalancing by weight (rebalance.go).
	lastRebalance uint64
	// Settle is the settle window of the first assignment in µs (0: WorkerSettle; negative:
	// none); it lasts at most five times as long after the first new worker appeared.
	Settle int64
	// mismatch is the controller mismatch last reported, refused the workers of another
	// version than the FlowCoreTarget last reported (id -> version; coretarget.go).
	mismatch string
	refused  map[string]string
}

// WorkerSettle (µs) is the default settle window: a pipeline that has no job at all is not
// assigned while a worker that appeared after the scheduler's first step was first seen
// less than the window ago, for at most MaxSettleFactor windows after the first such worker
// appeared. Workers started together after the controller (by hand or a script) then share
// the first assignment instead of the first one taking every job and the others getting
// half of them a cycle later, each move restarting a job under a new lease. Workers that
// were there when the controller started (yt-flow run starts them first) are assigned at
// once.
const (
	WorkerSettle    = 1_000_000 // µs
	MaxSettleFactor = 5
)

// noteWorkers records when the live workers were first seen and forgets the workers that
// left the workers table.
func (s *Scheduler) noteWorkers(in *Input) {
	first := s.seen == nil
	if first {
		s.seen = map[string]uint64{}
	}
	present := make(map[string]bool, len(in.Workers))
	for _, w := range in.Workers {
		present[w.WorkerID] = true
	}
	for id := range s.seen {
		if !present[id] {
			delete(s.seen, id)
		}
	}
	for _, w := range in.Workers {
		if !in.WorkerAlive[w.WorkerID] {
			continue
		}
		if _, ok := s.seen[w.WorkerID]; !ok {
			if first {
				s.seen[w.WorkerID] = 0
			} else {
				s.seen[w.WorkerID] = in.Now
			}
		}
	}
}

// settling reports whether the first assignment of a pipeline waits for more workers (see
// WorkerSettle).
func (s *Scheduler) settling(in *Input) bool {
	window := uint64(WorkerSettle)
	switch {
	case s.Settle < 0:
		return false
	case s.Settle > 0:
		window = uint64(s.Settle)
	}
	newest, oldest := uint64(0), uint64(0)
	for _, w := range in.Workers {
		t := s.seen[w.WorkerID]
		if !in.WorkerAlive[w.WorkerID] || t == 0 || !workerEligible(in.FlowCoreTarget, w) {
			continue // a worker of another version gets no jobs: nothing waits for it
		}
		newest = max(newest, t)
		if oldest == 0 || t < oldest {
			oldest = t
		}
	}
	return newest != 0 && in.Now < newest+window && in.Now < oldest+MaxSettleFactor*window
}

type statusMark struct {
	updatedAt uint64
	epoch     int64
}

// NextState returns the pipeline state the controller moves to from cur
// given the target; the transitions that depend on progress (pausing →
// paused, draining → stopped, working → completed) are made by Step.
func NextState(cur, target string) string {
	if cur == ytstore.StateCompleted {
		return cur // terminal
	}
	switch target {
	case ytstore.TargetWorking:
		return ytstore.StateWorking
	case ytstore.TargetStopped:
		if cur == "" || cur == ytstore.StateStopped {
			return ytstore.StateStopped
		}
		return ytstore.StateDraining
	case ytstore.TargetPaused:
		switch cur {
		case "", ytstore.StatePaused:
			return ytstore.StatePaused
		case ytstore.StateStopped:
			return cur
		}
		return ytstore.StatePausing
	}
	return cur
}

// plan is the layout being built by one Step.
type plan struct {
	s          *Scheduler
	in         *Input
	d          *Decision
	partitions map[string]ytstore.Partition // the partition set after this step
	jobs       map[string]ytstore.Job       // partition id -> its job after this step
	isNew      map[string]bool              // partition id -> job is created by this step
	relaxed    map[string]bool              // computation id -> relaxed distribution ordering
	auto       map[string][]autopart.Range  // computation id -> new ranges (partitioning by load)
	eligible   map[string]bool              // worker id -> its version is the FlowCoreTarget's
	changed    bool                         // jobs or partitions were added or removed
	settling   bool                         // the first assignment waits for more workers
}

// Step decides one scheduling cycle.
func (s *Scheduler) Step(in *Input) *Decision {
	d := &Decision{}
	state := NextState(in.PipelineState, in.TargetState)
	if !in.HasSpec {
		state = in.PipelineState
	}
	// Invariant: a controller whose binary is not the FlowCoreTarget's runs no jobs and
	// pauses the pipeline (TestControllerOfAnotherVersionPauses, TestMismatchedControllerPausesPipeline).
	state = s.fenceController(in, d, state)
	s.noteMismatchedWorkers(in, d)
	if s.failures == nil {
		s.failures = map[string]backoff{}
	}
	p := &plan{s: s, in: in, d: d, partitions: map[string]ytstore.Partition{}, jobs: map[string]ytstore.Job{}, isNew: map[string]bool{}, relaxed: map[string]bool{}}
	for _, c := range in.Topology.Computations {
		p.relaxed[c.ID] = c.RelaxedOrdering
	}
	p.eligible = make(map[string]bool, len(in.Workers))
	for _, w := range in.Workers {
		p.eligible[w.WorkerID] = workerEligible(in.FlowCoreTarget, w)
	}
	s.noteWorkers(in)
	p.dropDeadWorkers()
	p.dropOrphanStatuses()

	running := in.HasSpec && (state == ytstore.StateWorking || state == ytstore.StateDraining)
	if !running {
		s.drain = nil
		for _, j := range in.Jobs {
			p.removeJob(j, "pipeline is "+stateName(state))
		}
		if state == ytstore.StatePausing && len(in.Jobs) == 0 {
			state = ytstore.StatePaused
		}
		d.PipelineState = state
		d.Transition = state == ytstore.StatePausing
		return d
	}

	statuses := map[string]ytstore.JobStatus{}
	for _, st := range in.Statuses {
		statuses[st.JobID] = st
	}
	p.partitionByLoad(state == ytstore.StateWorking)
	p.reconcilePartitions(statuses)
	p.keepJobs(statuses)
	allSourcesDone := p.completeSources(statuses)
	p.assign()

	finishing := state == ytstore.StateDraining || (state == ytstore.StateWorking && allSourcesDone)
	p.setFlags(state == ytstore.StateDraining || allSourcesDone)
	d.Transition = finishing || p.settling // a settling first assignment is looked at again soon
	if !finishing {
		s.drain = nil
	} else if s.drained(p, statuses) {
		d.Transition = false
		for _, pid := range sortedKeys(p.jobs) {
			p.removeJob(p.jobs[pid], "pipeline drained")
		}
		if state == ytstore.StateDraining {
			state = ytstore.StateStopped
		} else {
			state = ytstore.StateCompleted
		}
		d.Events = append(d.Events, "pipeline "+state)
	}
	d.DrainObserved = s.drain != nil
	d.PipelineState = state
	return d
}

func stateName(s string) string {
	if s == "" {
		return "not started"
	}
	return s
}

func (p *plan) dropDeadWorkers() {
	for _, w := range p.in.Workers {
		if !p.in.WorkerAlive[w.WorkerID] {
			p.d.Layout.DeleteWorkers = append(p.d.Layout.DeleteWorkers, w.WorkerID)
			p.d.Events = append(p.d.Events, fmt.Sprintf("worker %s lost (session %s ended)", w.WorkerID, w.SessionTx))
		}
	}
}

// dropOrphanStatuses deletes statuses of jobs that no longer exist (a job row
// deleted with its status, then a late status write without a lease).
func (p *plan) dropOrphanStatuses() {
	exists := map[string]bool{}
	for _, j := range p.in.Jobs {
		exists[j.JobID] = true
	}
	for _, st := range p.in.Statuses {
		if !exists[st.JobID] {
			p.d.Layout.DeleteJobs = append(p.d.Layout.DeleteJobs, st.JobID)
		}
	}
}

// removeJob deletes a job and aborts its lease.
// Invariant: every removed job's lease is aborted before a replacement is
// written (TestSimulation, TestReplaceJobOfLostWorker).
func (p *plan) removeJob(j ytstore.Job, reason string) {
	if j.LeaseID != "" {
		p.d.AbortLeases = append(p.d.AbortLeases, j.LeaseID)
	}
	p.d.Layout.DeleteJobs = append(p.d.Layout.DeleteJobs, j.JobID)
	p.d.Events = append(p.d.Events, fmt.Sprintf("job %s of partition %s on worker %s removed: %s", j.JobID, j.PartitionID, j.WorkerID, reason))
	p.changed = true
}

// keepJobs decides which existing jobs survive.
// Invariant: at most one job per partition (TestSimulation).
func (p *plan) keepJobs(statuses map[string]ytstore.JobStatus) {
	jobs := slices.Clone(p.in.Jobs)
	sort.Slice(jobs, func(a, b int) bool {
		if jobs[a].CreatedAt != jobs[b].CreatedAt {
			return jobs[a].CreatedAt < jobs[b].CreatedAt
		}
		return jobs[a].JobID < jobs[b].JobID
	})
	for _, j := range jobs {
		_, partitionExists := p.partitions[j.PartitionID]
		st, hasStatus := statuses[j.JobID]
		switch {
		case !partitionExists:
			p.removeJob(j, "partition removed")
		case p.blocked(j.PartitionID):
			p.removeJob(j, "partition waits until the retiring partitions with overlapping key ranges have drained")
		case !p.in.WorkerAlive[j.WorkerID]:
			p.removeJob(j, "worker lost")
		case !p.eligible[j.WorkerID]:
			p.removeJob(j, "the worker's version is not the flow core target "+p.in.FlowCoreTarget)
		case !p.in.LeaseAlive[j.LeaseID]:
			p.removeJob(j, "lease expired")
		case hasStatus && st.State == ytstore.JobFailed:
			b := p.s.failures[j.PartitionID]
			b.count++
			b.notBefore = p.in.Now + backoffDelay(b.count)
			p.s.failures[j.PartitionID] = b
			p.removeJob(j, fmt.Sprintf("failed (restart in %v): %s", time.Duration(backoffDelay(b.count))*time.Microsecond, st.Error))
		default:
			if hasStatus && st.Epoch > 0 || hasStatus && st.State == ytstore.JobCompleted {
				delete(p.s.failures, j.PartitionID) // it made progress
			}
			if _, dup := p.jobs[j.PartitionID]; dup {
				p.removeJob(j, "duplicate job of the partition")
				continue
			}
			p.jobs[j.PartitionID] = j
		}
	}
}

// completeSources marks source partitions whose job reported completion and
// reports whether every source partition is completed (and there is one).
func (p *plan) completeSources(statuses map[string]ytstore.JobStatus) bool {
	sources, done := 0, 0
	for _, id := range sortedKeys(p.partitions) {
		pt := p.partitions[id]
		if pt.SourceID == "" {
			continue
		}
		sources++
		if pt.State == ytstore.PartitionCompleted {
			done++
			continue
		}
		j, ok := p.jobs[id]
		if st, has := statuses[j.JobID]; ok && has && st.State == ytstore.JobCompleted {
			pt.State = ytstore.PartitionCompleted
			p.partitions[id] = pt
			p.d.Layout.PutPartitions = append(p.d.Layout.PutPartitions, pt)
			p.d.Events = append(p.d.Events, "source partition "+id+" completed")
			p.d.SourceCompleted = true
			done++
		}
	}
	return sources > 0 && done == sources
}

// assign gives every partition without a job a new job on the least loaded
// live worker, then evens out the load (max - min <= 1), moving as few jobs
// as possible and preferring jobs created by this step.
func (p *plan) assign() {
	var workers []string
	for _, w := range p.in.Workers {
		// Invariant: a worker whose version is not the FlowCoreTarget gets no jobs
		// (TestWorkersOfAnotherVersionGetNoJobs, e2e/TestFlowCoreTargetFencesStaleWorker).
		if p.in.WorkerAlive[w.WorkerID] && p.eligible[w.WorkerID] {
			workers = append(workers, w.WorkerID)
		}
	}
	sort.Strings(workers)
	workers = slices.Compact(workers)
	if len(workers) == 0 {
		return
	}
	if len(p.jobs) == 0 && p.s.settling(p.in) {
		// Invariant: workers that appear together after the controller share the first
		// assignment (TestWorkersArrivingTogetherShareFirstAssignment,
		// e2e/TestHandStartedControllerAssignsOnce).
		p.settling = true
		return
	}
	load := map[string]int{}
	weights := p.jobWeights()
	wload := map[string]float64{} // measured weight per worker (rebalance.go)
	for _, w := range workers {
		load[w] = 0
	}
	for pid, j := range p.jobs {
		load[j.WorkerID]++
		wload[j.WorkerID] += weights[pid]
	}
	least := func() string { // fewest jobs; of those, the least measured weight
		best := workers[0]
		for _, w := range workers[1:] {
			if load[w] < load[best] || load[w] == load[best] && wload[w] < wload[best] {
				best = w
			}
		}
		return best
	}
	most := func() string {
		best := workers[0]
		for _, w := range workers[1:] {
			if load[w] > load[best] {
				best = w
			}
		}
		return best
	}
	for id := range p.s.failures {
		if _, ok := p.partitions[id]; !ok {
			delete(p.s.failures, id)
		}
	}
	for _, id := range sortedKeys(p.partitions) {
		if _, ok := p.jobs[id]; ok {
			continue
		}
		if p.blocked(id) {
			continue // strict distribution ordering: wait for the old ranges
		}
		if b, ok := p.s.failures[id]; ok && p.in.Now < b.notBefore {
			continue // restart backoff after failures
		}
		w := least()
		p.jobs[id] = p.newJob(p.partitions[id], w)
		p.isNew[id] = true
		load[w]++
		wload[w] += weights[id]
	}
	for range len(p.jobs) {
		hi, lo := most(), least()
		if load[hi]-load[lo] <= 1 {
			break
		}
		pid, ok := p.pickMovable(hi)
		if !ok {
			break
		}
		if !p.isNew[pid] {
			p.removeJob(p.jobs[pid], "rebalanced to worker "+lo)
		}
		p.jobs[pid] = p.newJob(p.partitions[pid], lo)
		p.isNew[pid] = true
		load[hi]--
		load[lo]++
		wload[hi] -= weights[pid]
		wload[lo] += weights[pid]
	}
	p.rebalanceByWeight(workers, load, wload, weights)
	for _, pid := range sortedKeys(p.isNew) {
		j := p.jobs[pid]
		p.d.Events = append(p.d.Events, fmt.Sprintf("job %s of partition %s assigned to worker %s", j.JobID, pid, j.WorkerID))
		p.changed = true
	}
}

// pickMovable picks the job to move off worker w: a new one if any, else the
// most recently created non-retiring one.
func (p *plan) pickMovable(w string) (string, bool) {
	best, found := "", false
	for _, pid := range sortedKeys(p.jobs) {
		j := p.jobs[pid]
		if j.WorkerID != w || p.partitions[pid].State == ytstore.PartitionDraining {
			continue
		}
		if p.isNew[pid] {
			return pid, true
		}
		if !found || j.CreatedAt > p.jobs[best].CreatedAt {
			best, found = pid, true
		}
	}
	return best, found
}

func (p *plan) newJob(pt ytstore.Partition, worker string) ytstore.Job {
	id := pt.PartitionID + "#" + strconv.FormatUint(p.in.Now, 10)
	for _, j := range p.in.Jobs {
		if j.JobID == id {
			id += "'"
		}
	}
	source := int64(-1)
	if pt.SourceID != "" {
		source = pt.SourcePartition
	}
	return ytstore.Job{
		JobID: id, ComputationID: pt.ComputationID, PartitionID: pt.PartitionID, WorkerID: worker,
		LowerKey: pt.LowerKey, UpperKey: pt.UpperKey, SourcePartition: source, SourceID: pt.SourceID,
		CreatedAt: p.in.Now,
	}
}

// setFlags sets draining/retiring on every job and writes new jobs and jobs
// whose flags changed.
func (p *plan) setFlags(pipelineDraining bool) {
	compDraining := map[string]bool{}
	for _, c := range p.in.Topology.Computations {
		compDraining[c.ID] = c.Draining
	}
	for _, pid := range sortedKeys(p.jobs) {
		j := p.jobs[pid]
		retiring := p.partitions[pid].State == ytstore.PartitionDraining
		draining := retiring || pipelineDraining || compDraining[j.ComputationID]
		if retiring && !j.Retiring && !p.isNew[pid] {
			// A job's echo cannot tell draining from retiring, and a worker applies
			// row changes only when it polls: a job becoming retiring is restarted,
			// so that every retiring job has carried the flag since its creation
			// and its echo means "retiring applied".
			// Invariant: a retired partition is removed only after its job applied
			// retiring (TestRetiringAfterDrainingRestartsJob, TestSimulation).
			p.removeJob(j, "partition retiring: job restarted under the retiring flag")
			j = p.newJob(p.partitions[pid], j.WorkerID)
			p.isNew[pid] = true
			p.d.Events = append(p.d.Events, fmt.Sprintf("job %s of partition %s assigned to worker %s", j.JobID, pid, j.WorkerID))
		}
		if p.isNew[pid] || j.Draining != draining || j.Retiring != retiring {
			if !p.isNew[pid] {
				p.changed = true
			}
			j.Draining, j.Retiring = draining, retiring
			p.jobs[pid] = j
			p.d.Layout.PutJobs = append(p.d.Layout.PutJobs, j)
		}
	}
}
