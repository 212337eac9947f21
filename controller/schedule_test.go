package controller

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/ytflow/yt-flow/ytstore"
)

func TestNextState(t *testing.T) {
	const (
		W, D, S, Pg, P, C = ytstore.StateWorking, ytstore.StateDraining, ytstore.StateStopped, ytstore.StatePausing, ytstore.StatePaused, ytstore.StateCompleted
	)
	for _, tc := range []struct{ cur, target, want string }{
		{"", "", ""},
		{"", ytstore.TargetWorking, W},
		{"", ytstore.TargetStopped, S},
		{"", ytstore.TargetPaused, P},
		{W, ytstore.TargetWorking, W},
		{W, ytstore.TargetStopped, D},
		{W, ytstore.TargetPaused, Pg},
		{D, ytstore.TargetStopped, D},
		{D, ytstore.TargetWorking, W},
		{D, ytstore.TargetPaused, Pg},
		{S, ytstore.TargetStopped, S},
		{S, ytstore.TargetWorking, W},
		{S, ytstore.TargetPaused, S},
		{Pg, ytstore.TargetPaused, Pg},
		{P, ytstore.TargetPaused, P},
		{P, ytstore.TargetWorking, W},
		{P, ytstore.TargetStopped, D},
		{C, ytstore.TargetWorking, C},
		{C, ytstore.TargetStopped, C},
		{C, ytstore.TargetPaused, C},
	} {
		if got := NextState(tc.cur, tc.target); got != tc.want {
			t.Errorf("NextState(%q, %q) = %q, want %q", tc.cur, tc.target, got, tc.want)
		}
	}
}

func TestHashRangeCoversSpace(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 16, 1000} {
		var next uint64
		for i := range n {
			lo, hi := HashRange(i, n)
			if lo != next {
				t.Fatalf("n=%d: range %d starts at %#x, want %#x", n, i, lo, next)
			}
			if i == n-1 {
				if hi != 0 {
					t.Fatalf("n=%d: last range ends at %#x, want 0 (2^64)", n, hi)
				}
			} else if hi <= lo {
				t.Fatalf("n=%d: range %d is [%#x, %#x)", n, i, lo, hi)
			}
			next = hi
		}
	}
	if lo, hi := HashRange(1, 2); lo != 1<<63 || hi != 0 {
		t.Errorf("HashRange(1, 2) = [%#x, %#x), want [2^63, 2^64)", lo, hi)
	}
}

// world is a tiny model of the coordination tables for scenario tests.
type world struct {
	now        uint64
	topology   Topology
	target     string
	state      string
	workers    map[string]bool // worker id -> alive
	partitions map[string]ytstore.Partition
	jobs       map[string]ytstore.Job
	statuses   map[string]ytstore.JobStatus
	leases     map[string]bool // lease id -> alive
	tablets    map[string]int
	nextLease  int
}

func newWorld(workers ...string) *world {
	w := &world{
		now: 1_000_000, target: ytstore.TargetWorking,
		workers: map[string]bool{}, partitions: map[string]ytstore.Partition{}, jobs: map[string]ytstore.Job{},
		statuses: map[string]ytstore.JobStatus{}, leases: map[string]bool{}, tablets: map[string]int{"//q": 3},
		topology: Topology{Computations: []Computation{
			{ID: "counter", PartitionCount: 2},
			{ID: "reader", Sources: []Source{{ID: "words", ListKey: "//q"}}},
		}},
	}
	for _, id := range workers {
		w.workers[id] = true
	}
	return w
}

func (w *world) input() *Input {
	in := &Input{
		Now: w.now, HasSpec: true, Topology: w.topology, TargetState: w.target, PipelineState: w.state,
		WorkerAlive: map[string]bool{}, LeaseAlive: map[string]bool{}, SourcePartitions: map[string][]int64{},
	}
	for key, n := range w.tablets {
		for i := range int64(n) {
			in.SourcePartitions[key] = append(in.SourcePartitions[key], i)
		}
	}
	for _, id := range sortedKeys(w.workers) {
		in.Workers = append(in.Workers, ytstore.Worker{WorkerID: id, SessionTx: "s-" + id})
		in.WorkerAlive[id] = w.workers[id]
	}
	for _, id := range sortedKeys(w.partitions) {
		in.Partitions = append(in.Partitions, w.partitions[id])
	}
	for _, id := range sortedKeys(w.jobs) {
		in.Jobs = append(in.Jobs, w.jobs[id])
	}
	for _, id := range sortedKeys(w.statuses) {
		in.Statuses = append(in.Statuses, w.statuses[id])
	}
	for id, alive := range w.leases {
		if alive {
			in.LeaseAlive[id] = true
		}
	}
	return in
}

// apply applies a decision as the driver does and returns the new jobs.
func (w *world) apply(t *testing.T, d *Decision) []ytstore.Job {
	t.Helper()
	for _, l := range d.AbortLeases {
		w.leases[l] = false
	}
	var created []ytstore.Job
	for _, id := range d.Layout.DeleteWorkers {
		delete(w.workers, id)
	}
	for _, id := range d.Layout.DeletePartitions {
		delete(w.partitions, id)
	}
	for _, pt := range d.Layout.PutPartitions {
		w.partitions[pt.PartitionID] = pt
	}
	for _, id := range d.Layout.DeleteJobs {
		delete(w.jobs, id)
		delete(w.statuses, id)
	}
	for _, j := range d.Layout.PutJobs {
		if j.LeaseID == "" {
			w.nextLease++
			j.LeaseID = "lease-" + itoa(w.nextLease)
			w.leases[j.LeaseID] = true
			created = append(created, j)
		}
		w.jobs[j.JobID] = j
	}
	w.state = d.PipelineState
	w.now += 500_000
	return created
}

func itoa(i int) string {
	const digits = "0123456789"
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{digits[i%10]}, b...)
	}
	return string(b)
}

func (w *world) step(t *testing.T, s *Scheduler) (*Decision, []ytstore.Job) {
	t.Helper()
	d := s.Step(w.input())
	return d, w.apply(t, d)
}

func (w *world) load() map[string]int {
	load := map[string]int{}
	for _, j := range w.jobs {
		load[j.WorkerID]++
	}
	return load
}

// report writes a status for every job as a worker would.
func (w *world) report(inFlight int64, epochBump bool, state string) {
	for id, j := range w.jobs {
		st := w.statuses[id]
		st.JobID, st.WorkerID, st.State = id, j.WorkerID, state
		st.InFlight = inFlight
		st.Draining = j.Draining || j.Retiring
		st.UpdatedAt = w.now
		if epochBump {
			st.Epoch++
		}
		w.statuses[id] = st
	}
}

func TestFreshPipelineGetsPartitionsAndBalancedJobs(t *testing.T) {
	w := newWorld("w1", "w2")
	var s Scheduler
	d, created := w.step(t, &s)
	if d.PipelineState != ytstore.StateWorking {
		t.Fatalf("state %q, want working", d.PipelineState)
	}
	wantParts := []string{"counter/0of2", "counter/1of2", "reader/src/words/0", "reader/src/words/1", "reader/src/words/2"}
	if got := sortedKeys(w.partitions); !slices.Equal(got, wantParts) {
		t.Fatalf("partitions %v, want %v", got, wantParts)
	}
	if len(created) != 5 || len(w.jobs) != 5 {
		t.Fatalf("created %d jobs, have %d, want 5", len(created), len(w.jobs))
	}
	if l := w.load(); l["w1"]+l["w2"] != 5 || l["w1"]-l["w2"] > 1 || l["w2"]-l["w1"] > 1 {
		t.Errorf("unbalanced load %v", l)
	}
	for _, j := range w.jobs {
		pt := w.partitions[j.PartitionID]
		if j.LowerKey != pt.LowerKey || j.UpperKey != pt.UpperKey || j.SourceID != pt.SourceID {
			t.Errorf("job %+v does not match its partition %+v", j, pt)
		}
		if (pt.SourceID == "") != (j.SourcePartition == -1) {
			t.Errorf("job %s: source_partition %d for partition %+v", j.JobID, j.SourcePartition, pt)
		}
	}
	// A second step with nothing new changes nothing: assignment is sticky.
	d, created = w.step(t, &s)
	if len(created) != 0 || len(d.AbortLeases) != 0 || !d.Layout.Empty() {
		t.Errorf("stable pipeline changed: %+v", d)
	}
}

func TestReplaceJobOfLostWorker(t *testing.T) {
	w := newWorld("w1", "w2")
	var s Scheduler
	w.step(t, &s)
	w.workers["w2"] = false
	var lost []ytstore.Job
	for _, j := range w.jobs {
		if j.WorkerID == "w2" {
			lost = append(lost, j)
		}
	}
	d, created := w.step(t, &s)
	if len(lost) == 0 || len(created) != len(lost) {
		t.Fatalf("lost %d jobs, created %d", len(lost), len(created))
	}
	for _, j := range lost {
		if !slices.Contains(d.AbortLeases, j.LeaseID) {
			t.Errorf("lease %s of lost job %s not aborted", j.LeaseID, j.JobID)
		}
		if _, ok := w.jobs[j.JobID]; ok {
			t.Errorf("lost job %s still in the layout", j.JobID)
		}
	}
	for _, j := range w.jobs {
		if j.WorkerID != "w1" {
			t.Errorf("job %s on %s, want w1", j.JobID, j.WorkerID)
		}
	}
	if !slices.Contains(d.Layout.DeleteWorkers, "w2") {
		t.Errorf("dead worker row not deleted: %v", d.Layout.DeleteWorkers)
	}
}

func TestFailedJobAndExpiredLeaseReplaced(t *testing.T) {
	w := newWorld("w1")
	var s Scheduler
	w.step(t, &s)
	ids := sortedKeys(w.jobs)
	failed, expired := w.jobs[ids[0]], w.jobs[ids[1]]
	w.statuses[failed.JobID] = ytstore.JobStatus{JobID: failed.JobID, State: ytstore.JobFailed, Error: "boom at counter"}
	w.leases[expired.LeaseID] = false
	d, created := w.step(t, &s)
	if len(created) != 1 || created[0].PartitionID != expired.PartitionID {
		t.Fatalf("created %+v, want only the replacement of %s (the failed partition backs off)", created, expired.PartitionID)
	}
	if !slices.Contains(d.AbortLeases, failed.LeaseID) {
		t.Errorf("failed job's lease not aborted: %v", d.AbortLeases)
	}
	if !strings.Contains(strings.Join(d.Events, "\n"), "boom at counter") {
		t.Errorf("events do not carry the job error: %v", d.Events)
	}
	w.now += FailureBackoffBase // the apply above advanced time too: the backoff has passed
	_, created = w.step(t, &s)
	if len(created) != 1 || created[0].PartitionID != failed.PartitionID {
		t.Fatalf("after the backoff created %+v, want the replacement of %s", created, failed.PartitionID)
	}
	if _, ok := w.statuses[failed.JobID]; ok {
		t.Error("status of the removed job left behind")
	}
}

func TestRebalanceOnNewWorker(t *testing.T) {
	w := newWorld("w1")
	var s Scheduler
	w.step(t, &s)
	w.workers["w2"], w.workers["w3"] = true, true
	d, created := w.step(t, &s)
	l := w.load()
	if l["w1"] != 2 || l["w2"]+l["w3"] != 3 {
		t.Errorf("load after arrivals %v, want w1=2 and 3 on the others", l)
	}
	if len(created) != 3 || len(d.AbortLeases) != 3 {
		t.Errorf("moved %d jobs with %d aborted leases, want 3 and 3", len(created), len(d.AbortLeases))
	}
}

func TestPauseRemovesAllJobs(t *testing.T) {
	w := newWorld("w1", "w2")
	var s Scheduler
	w.step(t, &s)
	leases := []string{}
	for _, j := range w.jobs {
		leases = append(leases, j.LeaseID)
	}
	w.target = ytstore.TargetPaused
	d, _ := w.step(t, &s)
	if d.PipelineState != ytstore.StatePausing || len(w.jobs) != 0 {
		t.Fatalf("state %q with %d jobs, want pausing with none", d.PipelineState, len(w.jobs))
	}
	for _, l := range leases {
		if w.leases[l] {
			t.Errorf("lease %s still alive after pause", l)
		}
	}
	d, _ = w.step(t, &s)
	if d.PipelineState != ytstore.StatePaused {
		t.Fatalf("state %q, want paused", d.PipelineState)
	}
	w.target = ytstore.TargetWorking
	_, created := w.step(t, &s)
	if w.state != ytstore.StateWorking || len(created) != 5 {
		t.Errorf("resume: state %q, %d jobs created", w.state, len(created))
	}
}

func TestDrainNeedsTwoObservations(t *testing.T) {
	w := newWorld("w1", "w2")
	var s Scheduler
	if d, _ := w.step(t, &s); d.Transition {
		t.Errorf("working is not a transition")
	}
	w.target = ytstore.TargetStopped
	d, _ := w.step(t, &s)
	if d.PipelineState != ytstore.StateDraining || !d.Transition {
		t.Fatalf("state %q (transition %v), want draining, a transition", d.PipelineState, d.Transition)
	}
	for _, j := range w.jobs {
		if !j.Draining {
			t.Errorf("job %s not flagged draining", j.JobID)
		}
	}
	// Statuses still in flight: no progress.
	w.report(3, true, ytstore.JobRunning)
	if d, _ = w.step(t, &s); d.PipelineState != ytstore.StateDraining {
		t.Fatalf("stopped with messages in flight")
	}
	if d.DrainObserved {
		t.Errorf("drain observed with messages in flight")
	}
	// First all-zero observation is not enough.
	w.report(0, true, ytstore.JobRunning)
	if d, _ = w.step(t, &s); d.PipelineState != ytstore.StateDraining {
		t.Fatalf("stopped after a single drained observation")
	}
	if !d.DrainObserved {
		t.Errorf("the first drained observation is not reported (the controller looks again sooner)")
	}
	// Statuses not refreshed: still not enough.
	if d, _ = w.step(t, &s); d.PipelineState != ytstore.StateDraining {
		t.Fatalf("stopped without newer statuses")
	}
	if !d.DrainObserved {
		t.Errorf("the pending observation is kept while the statuses are not newer")
	}
	// Newer statuses but a commit happened in between: start over.
	w.report(0, true, ytstore.JobRunning)
	if d, _ = w.step(t, &s); d.PipelineState != ytstore.StateDraining {
		t.Fatalf("stopped although an epoch was committed between observations")
	}
	// Newer statuses, same epochs: drained.
	w.report(0, false, ytstore.JobRunning)
	d, _ = w.step(t, &s)
	if d.PipelineState != ytstore.StateStopped || len(w.jobs) != 0 {
		t.Fatalf("state %q with %d jobs, want stopped with none", d.PipelineState, len(w.jobs))
	}
	if d.DrainObserved {
		t.Errorf("drain observation still pending once stopped")
	}
	if len(d.AbortLeases) != 5 {
		t.Errorf("aborted %d leases on stop, want 5", len(d.AbortLeases))
	}
}

func TestFiniteSourcesComplete(t *testing.T) {
	w := newWorld("w1")
	var s Scheduler
	w.step(t, &s)
	for id, j := range w.jobs {
		state := ytstore.JobRunning
		if j.SourceID != "" {
			state = ytstore.JobCompleted
		}
		w.statuses[id] = ytstore.JobStatus{JobID: id, State: state, InFlight: 0, UpdatedAt: w.now, Epoch: 1}
	}
	d, _ := w.step(t, &s)
	for _, pt := range w.partitions {
		if pt.SourceID != "" && pt.State != ytstore.PartitionCompleted {
			t.Errorf("source partition %s is %s, want completed", pt.PartitionID, pt.State)
		}
	}
	if d.PipelineState != ytstore.StateWorking {
		t.Fatalf("state %q, want working until drained", d.PipelineState)
	}
	if !d.Transition {
		t.Errorf("completing is a transition: the controller should look again sooner")
	}
	for _, j := range w.jobs {
		if !j.Draining {
			t.Errorf("job %s not draining once all sources completed", j.JobID)
		}
	}
	for i := 0; i < 3 && w.state != ytstore.StateCompleted; i++ {
		w.report(0, false, ytstore.JobRunning)
		for id, j := range w.jobs {
			if j.SourceID != "" {
				st := w.statuses[id]
				st.State = ytstore.JobCompleted
				w.statuses[id] = st
			}
		}
		d, _ = w.step(t, &s)
	}
	if w.state != ytstore.StateCompleted || len(w.jobs) != 0 {
		t.Fatalf("state %q with %d jobs, want completed with none", w.state, len(w.jobs))
	}
	if d.Transition {
		t.Errorf("completed is not a transition")
	}
	w.target = ytstore.TargetStopped
	if d, _ := w.step(t, &s); d.PipelineState != ytstore.StateCompleted {
		t.Errorf("completed is not terminal: %q", d.PipelineState)
	}
}

func TestRepartitionRetiresOldPartitions(t *testing.T) {
	w := newWorld("w1")
	var s Scheduler
	w.step(t, &s)
	w.topology.Computations[0].PartitionCount = 3
	w.step(t, &s)
	var retiring []string
	for id, pt := range w.partitions {
		if pt.ComputationID == "counter" && pt.State == ytstore.PartitionDraining {
			retiring = append(retiring, id)
		}
	}
	sort.Strings(retiring)
	if !slices.Equal(retiring, []string{"counter/0of2", "counter/1of2"}) {
		t.Fatalf("retiring %v", retiring)
	}
	for _, id := range []string{"counter/0of3", "counter/1of3", "counter/2of3"} {
		if w.partitions[id].State != ytstore.PartitionActive {
			t.Errorf("new partition %s: %+v", id, w.partitions[id])
		}
	}
	for _, j := range w.jobs {
		if j.Retiring != slices.Contains(retiring, j.PartitionID) {
			t.Errorf("job %s of %s retiring=%v", j.JobID, j.PartitionID, j.Retiring)
		}
	}
	w.report(0, false, ytstore.JobRunning)
	w.step(t, &s)
	for _, id := range retiring {
		if _, ok := w.partitions[id]; ok {
			t.Errorf("retired partition %s not removed after delivering its outbox", id)
		}
	}
	for _, j := range w.jobs {
		if slices.Contains(retiring, j.PartitionID) {
			t.Errorf("job %s of retired partition left", j.JobID)
		}
	}
}

// TestRepartitionNewPartitionsWaitForOldRanges changes the partition count
// while jobs hold messages: the new partitions get no job while a retiring
// partition with an overlapping range exists, and get jobs once the old ones
// have delivered their outboxes. A partition wanted again while overlapping
// retiring partitions exist loses its job until they are gone.
func TestRepartitionNewPartitionsWaitForOldRanges(t *testing.T) {
	w := newWorld("w1", "w2")
	var s Scheduler
	w.step(t, &s)
	w.topology.Computations[0].PartitionCount = 3
	w.report(5, true, ytstore.JobRunning) // jobs hold outputs
	w.step(t, &s)
	for range 3 {
		w.report(5, true, ytstore.JobRunning) // retiring jobs still deliver
		w.step(t, &s)
		for _, j := range w.jobs {
			if strings.HasSuffix(j.PartitionID, "of3") {
				t.Fatalf("new partition %s got job %s while the old ranges still drain", j.PartitionID, j.JobID)
			}
		}
	}
	w.report(0, true, ytstore.JobRunning) // outboxes delivered
	w.step(t, &s)
	w.step(t, &s)
	got := []string{}
	for _, j := range w.jobs {
		if j.ComputationID == "counter" {
			got = append(got, j.PartitionID)
		}
	}
	sort.Strings(got)
	if !slices.Equal(got, []string{"counter/0of3", "counter/1of3", "counter/2of3"}) {
		t.Fatalf("counter jobs after the old ranges drained: %v", got)
	}

	// Back to 2 while the 3 new ones still hold messages: 0of2 and 1of2 wait.
	w.topology.Computations[0].PartitionCount = 2
	w.report(5, true, ytstore.JobRunning)
	w.step(t, &s)
	w.report(5, true, ytstore.JobRunning)
	w.step(t, &s)
	for _, j := range w.jobs {
		if strings.HasSuffix(j.PartitionID, "of2") {
			t.Fatalf("partition %s got job %s while the 3-way ranges still drain", j.PartitionID, j.JobID)
		}
	}
	w.report(0, true, ytstore.JobRunning)
	w.step(t, &s)
	w.step(t, &s)
	got = got[:0]
	for _, j := range w.jobs {
		if j.ComputationID == "counter" {
			got = append(got, j.PartitionID)
		}
	}
	sort.Strings(got)
	if !slices.Equal(got, []string{"counter/0of2", "counter/1of2"}) {
		t.Fatalf("counter jobs after shrinking: %v", got)
	}
}

// TestRelaxedOrderingStartsNewPartitionsAtOnce: with distribution_ordering
// "relaxed" the new partitions get jobs in the same step that retires the old ones.
func TestRelaxedOrderingStartsNewPartitionsAtOnce(t *testing.T) {
	w := newWorld("w1")
	w.topology.Computations[0].RelaxedOrdering = true
	var s Scheduler
	w.step(t, &s)
	w.topology.Computations[0].PartitionCount = 3
	w.report(5, true, ytstore.JobRunning)
	w.step(t, &s)
	n := 0
	for _, j := range w.jobs {
		if strings.HasSuffix(j.PartitionID, "of3") {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("%d of 3 new partitions have jobs under relaxed ordering; jobs %v", n, w.jobs)
	}
}

func TestRangesOverlap(t *testing.T) {
	const half = 1 << 63
	cases := []struct {
		lo1, up1, lo2, up2 uint64
		want               bool
	}{
		{0, half, half, 0, false},
		{0, 0, half, 0, true},
		{0, half + 1, half, 0, true},
		{10, 20, 20, 30, false},
		{10, 21, 20, 30, true},
		{25, 26, 20, 30, true},
		{half, 0, 0, half, false},
	}
	for _, c := range cases {
		if got := RangesOverlap(c.lo1, c.up1, c.lo2, c.up2); got != c.want {
			t.Errorf("RangesOverlap(%#x, %#x, %#x, %#x) = %v, want %v", c.lo1, c.up1, c.lo2, c.up2, got, c.want)
		}
		if got := RangesOverlap(c.lo2, c.up2, c.lo1, c.up1); got != c.want {
			t.Errorf("RangesOverlap is not symmetric on %+v", c)
		}
	}
}

func TestNoSpecRunsNothing(t *testing.T) {
	w := newWorld("w1")
	in := w.input()
	in.HasSpec = false
	var s Scheduler
	d := s.Step(in)
	if len(d.Layout.PutJobs) != 0 || len(d.Layout.PutPartitions) != 0 || d.PipelineState != "" {
		t.Errorf("pipeline without spec scheduled: %+v", d)
	}
}

func TestNoWorkersNoJobs(t *testing.T) {
	w := newWorld()
	var s Scheduler
	d, created := w.step(t, &s)
	if len(created) != 0 || len(w.partitions) != 5 || d.PipelineState != ytstore.StateWorking {
		t.Errorf("without workers: %d jobs, %d partitions, state %q", len(created), len(w.partitions), d.PipelineState)
	}
}

func TestUnknownTabletCountKeepsSourcePartitions(t *testing.T) {
	w := newWorld("w1")
	var s Scheduler
	w.step(t, &s)
	jobs := maps(w.jobs)
	delete(w.tablets, "//q") // the queue's tablet count could not be read this cycle
	d, created := w.step(t, &s)
	if len(created) != 0 || len(d.AbortLeases) != 0 || len(d.Layout.DeletePartitions) != 0 {
		t.Fatalf("unknown tablet count changed the layout: %+v", d)
	}
	if len(w.jobs) != len(jobs) {
		t.Fatalf("jobs %d -> %d", len(jobs), len(w.jobs))
	}
	w.tablets["//q"] = 2 // the queue shrank: tablet 2's partition goes away
	d, _ = w.step(t, &s)
	if !slices.Equal(d.Layout.DeletePartitions, []string{"reader/src/words/2"}) {
		t.Errorf("deleted partitions %v, want reader/src/words/2", d.Layout.DeletePartitions)
	}
	for _, j := range w.jobs {
		if j.PartitionID == "reader/src/words/2" {
			t.Errorf("job %s of the vanished tablet kept", j.JobID)
		}
	}
}

func TestComputationRemovedFromSpec(t *testing.T) {
	w := newWorld("w1")
	var s Scheduler
	w.step(t, &s)
	w.topology.Computations = w.topology.Computations[1:] // only "reader" is left
	d, _ := w.step(t, &s)
	for id := range w.partitions {
		if strings.HasPrefix(id, "counter/") {
			t.Errorf("partition %s of a removed computation kept", id)
		}
	}
	for _, j := range w.jobs {
		if j.ComputationID == "counter" {
			t.Errorf("job %s of a removed computation kept", j.JobID)
		}
	}
	if len(d.AbortLeases) != 2 {
		t.Errorf("aborted %d leases, want the 2 of counter's jobs", len(d.AbortLeases))
	}
}

func TestDrainingClearedWhenRestarted(t *testing.T) {
	w := newWorld("w1")
	var s Scheduler
	w.step(t, &s)
	w.target = ytstore.TargetStopped
	w.step(t, &s)
	w.target = ytstore.TargetWorking
	d, created := w.step(t, &s)
	if d.PipelineState != ytstore.StateWorking || len(created) != 0 {
		t.Fatalf("state %q, %d jobs created", d.PipelineState, len(created))
	}
	for _, j := range w.jobs {
		if j.Draining {
			t.Errorf("job %s still draining after the pipeline was started again", j.JobID)
		}
	}
}

func TestFailingPartitionBacksOff(t *testing.T) {
	w := newWorld("w1")
	var s Scheduler
	w.step(t, &s)
	pid := sortedKeys(w.partitions)[0]
	jobOf := func() (ytstore.Job, bool) {
		for _, j := range w.jobs {
			if j.PartitionID == pid {
				return j, true
			}
		}
		return ytstore.Job{}, false
	}
	var gaps []uint64
	for range 4 {
		j, ok := jobOf()
		if !ok {
			t.Fatalf("partition %s has no job", pid)
		}
		w.statuses[j.JobID] = ytstore.JobStatus{JobID: j.JobID, State: ytstore.JobFailed, Error: "poison"}
		w.step(t, &s)
		failedAt := w.now
		for {
			if _, ok := jobOf(); ok {
				break
			}
			w.step(t, &s)
		}
		gaps = append(gaps, w.now-failedAt)
	}
	for i := 1; i < len(gaps); i++ {
		if gaps[i] <= gaps[i-1] {
			t.Errorf("restart delays %v do not grow", gaps)
		}
	}
	// Progress (a committed epoch) resets the backoff.
	j, _ := jobOf()
	w.statuses[j.JobID] = ytstore.JobStatus{JobID: j.JobID, State: ytstore.JobRunning, Epoch: 3}
	w.step(t, &s)
	if _, ok := s.failures[pid]; ok {
		t.Errorf("backoff kept after progress: %+v", s.failures[pid])
	}
	if backoffDelay(100) != FailureBackoffMax || backoffDelay(1) != FailureBackoffBase {
		t.Errorf("backoffDelay bounds: %d, %d", backoffDelay(1), backoffDelay(100))
	}
}

func TestRetiringAfterDrainingRestartsJob(t *testing.T) {
	w := newWorld("w1")
	var s Scheduler
	w.step(t, &s)
	w.target = ytstore.TargetStopped
	w.step(t, &s)
	w.report(0, false, ytstore.JobRunning) // every job echoes draining
	old := maps(w.jobs)
	// Started again with another partition count before the drain finished.
	w.target = ytstore.TargetWorking
	w.topology.Computations[0].PartitionCount = 3
	d, _ := w.step(t, &s)
	for id, j := range old {
		if j.ComputationID != "counter" {
			continue
		}
		if _, ok := w.jobs[id]; ok {
			t.Errorf("job %s kept: its draining echo would pass for retiring", id)
		}
		if !slices.Contains(d.AbortLeases, j.LeaseID) {
			t.Errorf("lease of restarted job %s not aborted", id)
		}
	}
	for _, j := range w.jobs {
		if slices.Contains([]string{"counter/0of2", "counter/1of2"}, j.PartitionID) && !j.Retiring {
			t.Errorf("job %s of a retiring partition without the flag", j.JobID)
		}
	}
	// The stale echo is gone with the old job: the partitions are not removed yet.
	w.step(t, &s)
	if _, ok := w.partitions["counter/0of2"]; !ok {
		t.Fatal("retiring partition removed before its new job reported")
	}
	w.report(0, false, ytstore.JobRunning)
	w.step(t, &s)
	if _, ok := w.partitions["counter/0of2"]; ok {
		t.Error("retiring partition not removed after its job applied retiring with nothing in flight")
	}
}

func TestWorkersArrivingTogetherShareFirstAssignment(t *testing.T) {
	w := newWorld() // the controller starts before any worker
	var s Scheduler
	if _, created := w.step(t, &s); len(created) != 0 {
		t.Fatalf("jobs without workers: %v", created)
	}
	w.workers["w1"] = true
	d, created := w.step(t, &s) // w1 first seen: wait for others
	if len(created) != 0 || !d.Transition {
		t.Fatalf("first worker alone: created %d jobs, transition %v; want none and a quick next look", len(created), d.Transition)
	}
	w.workers["w2"] = true
	for i := 0; ; i++ {
		d, created = w.step(t, &s)
		if len(created) > 0 {
			break
		}
		if i > 10 {
			t.Fatal("never assigned")
		}
	}
	if len(created) != 5 || len(d.AbortLeases) != 0 {
		t.Fatalf("first assignment created %d jobs and aborted %d leases, want 5 and 0", len(created), len(d.AbortLeases))
	}
	if l := w.load(); l["w1"] == 0 || l["w2"] == 0 {
		t.Errorf("first assignment %v: both workers should hold jobs", l)
	}
	// A worker arriving once jobs exist is rebalanced to at once, as before.
	w.workers["w3"] = true
	if _, created = w.step(t, &s); len(created) == 0 {
		t.Error("a new worker of a running pipeline got no job")
	}
}

func TestWorkerSettleIsBounded(t *testing.T) {
	w := newWorld()
	var s Scheduler
	w.step(t, &s)
	// A worker appears at every step (every 0.5 s): the first assignment still comes within
	// MaxSettleFactor windows of the first one.
	start := w.now
	for i := 0; ; i++ {
		w.workers["w"+itoa(i)] = true
		if _, created := w.step(t, &s); len(created) > 0 {
			break
		}
		if w.now-start > MaxSettleFactor*WorkerSettle+1_000_000 {
			t.Fatalf("no assignment %d µs after the first worker appeared", w.now-start)
		}
	}
}
