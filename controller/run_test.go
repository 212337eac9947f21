package controller

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ytflow/yt-flow/ytlocal/ytlocaltest"
	"github.com/ytflow/yt-flow/ytstore"
)

const testPath = "//home/test/pipe"

// env is a ytlocal server with a started pipeline (testSpec: 3 partitions).
type env struct {
	t     *testing.T
	proxy string
	st    *ytstore.Store
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	proxy := ytlocaltest.New(t)
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: proxy, Path: testPath, PingPeriod: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if err := st.CreatePipeline(ctx); err != nil {
		t.Fatal(err)
	}
	err = st.SetSpecs(ctx, ytstore.SpecUpdate{
		Spec: []byte(testSpec), SpecVersion: 1, DynamicSpec: []byte(testDynamicSpec), DynamicSpecVersion: 1,
		TargetState: ytstore.TargetWorking,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, proxy: proxy, st: st}
}

// controller runs a controller until the returned stop function is called
// (also at cleanup); stop waits for Run to return and checks it returned nil.
func (e *env) controller(address string) (stop func()) {
	return e.controllerOf(address, "")
}

// controllerOf is controller with the binary version the controller says it runs.
func (e *env) controllerOf(address, version string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var runErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		runErr = Run(ctx, Config{
			Proxy: e.proxy, Path: testPath, Address: address, FlowCoreVersion: version,
			Period: 50 * time.Millisecond, SessionTimeout: 2 * time.Second, LeaseTimeout: 10 * time.Second, RetryPeriod: 50 * time.Millisecond,
		})
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			if runErr != nil {
				e.t.Errorf("controller %s: Run returned %v", address, runErr)
			}
		})
	}
	e.t.Cleanup(stop)
	return stop
}

// worker registers a worker with a live session; closing the session kills it.
func (e *env) worker(id string) *ytstore.Session {
	e.t.Helper()
	ctx := context.Background()
	sess, err := e.st.StartSession(ctx, "worker "+id, 2*time.Second)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = sess.Close() })
	w := ytstore.Worker{WorkerID: id, Address: "127.0.0.1:0", SessionTx: sess.ID(), StartTime: ytstore.Now(), HeartbeatTime: ytstore.Now()}
	if err := e.st.PutWorker(ctx, w); err != nil {
		e.t.Fatal(err)
	}
	return sess
}

func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *env) attrs() *ytstore.Attributes {
	a, err := e.st.Attributes(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

func (e *env) jobs() []ytstore.Job {
	jobs, err := e.st.Jobs(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return jobs
}

func (e *env) alive(tx string) bool {
	ok, err := e.st.TxAlive(context.Background(), tx)
	if err != nil {
		e.t.Fatal(err)
	}
	return ok
}

// waitJobs waits until every partition of testSpec has a job with a live lease.
func (e *env) waitJobs() []ytstore.Job {
	var jobs []ytstore.Job
	e.waitFor("3 jobs with live leases", func() bool {
		jobs = e.jobs()
		if len(jobs) != 3 {
			return false
		}
		for _, j := range jobs {
			if !e.alive(j.LeaseID) {
				return false
			}
		}
		return true
	})
	return jobs
}

func TestLeaderElection(t *testing.T) {
	e := newEnv(t)
	e.worker("w1")
	stops := map[string]func(){"A": e.controller("A"), "B": e.controller("B")}
	var leader string
	e.waitFor("a leader working", func() bool {
		a := e.attrs()
		leader = a.LeaderControllerAddress
		return leader != "" && a.PipelineState == ytstore.StateWorking
	})
	jobs := e.waitJobs()
	standby := map[string]string{"A": "B", "B": "A"}[leader]

	killed := time.Now()
	stops[leader]() // the leader's context ends: its session is aborted, the lock freed
	e.waitFor("standby "+standby+" to lead", func() bool { return e.attrs().LeaderControllerAddress == standby })
	t.Logf("standby %s leads %v after the leader's context ended", standby, time.Since(killed).Round(time.Millisecond))

	// The new leader schedules (a new worker gets a job) and keeps the other
	// jobs with their leases: leases outlive a leader change.
	e.worker("w2")
	var now []ytstore.Job
	e.waitFor("a job moved to the new worker w2", func() bool {
		now = e.jobs()
		for _, j := range now {
			if j.WorkerID == "w2" && e.alive(j.LeaseID) {
				return true
			}
		}
		return false
	})
	before := map[string]ytstore.Job{}
	for _, j := range jobs {
		before[j.JobID] = j
	}
	kept := 0
	for _, j := range now {
		if old, ok := before[j.JobID]; ok {
			kept++
			if old.LeaseID != j.LeaseID || !e.alive(j.LeaseID) {
				t.Errorf("job %s: lease %s -> %s (alive %v)", j.JobID, old.LeaseID, j.LeaseID, e.alive(j.LeaseID))
			}
		}
	}
	if kept != 2 {
		t.Errorf("%d of 3 jobs kept across the leader change and one rebalance, want 2: %+v", kept, now)
	}
	recs, _ := e.st.ControllerLogs(context.Background(), 0)
	found := false
	for _, r := range recs {
		found = found || r.Data == fmt.Sprintf("controller %s became leader", standby)
	}
	if !found {
		t.Errorf("controller_logs does not record the takeover: %+v", recs)
	}
}

func TestLeaseAbortedWhenWorkerDies(t *testing.T) {
	e := newEnv(t)
	w1 := e.worker("w1")
	e.worker("w2")
	e.controller("A")
	jobs := e.waitJobs()
	var lost []ytstore.Job
	for _, j := range jobs {
		if j.WorkerID == "w1" {
			lost = append(lost, j)
		}
	}
	if len(lost) == 0 {
		t.Fatalf("no job on w1: %+v", jobs)
	}
	died := time.Now()
	if err := w1.Close(); err != nil { // the worker's session dies
		t.Fatal(err)
	}
	e.waitFor("leases of w1's jobs aborted", func() bool {
		for _, j := range lost {
			if e.alive(j.LeaseID) {
				return false
			}
		}
		return true
	})
	aborted := time.Since(died)
	now := e.waitJobs()
	t.Logf("leases of the dead worker's jobs aborted %v and jobs reassigned %v after its session ended",
		aborted.Round(time.Millisecond), time.Since(died).Round(time.Millisecond))
	for _, j := range now {
		if j.WorkerID != "w2" {
			t.Errorf("job %s still on %s after w1 died", j.JobID, j.WorkerID)
		}
		for _, old := range lost {
			if j.JobID == old.JobID || j.LeaseID == old.LeaseID {
				t.Errorf("job %s of the dead worker kept (lease %s)", j.JobID, j.LeaseID)
			}
		}
	}
	e.waitFor("w1's row removed", func() bool {
		ws, err := e.st.Workers(context.Background())
		return err == nil && len(ws) == 1 && ws[0].WorkerID == "w2"
	})
}

// reportDrained writes, for every job, a status saying it is drained, as a
// worker would while the pipeline drains, until ctx ends.
func (e *env) reportDrained(ctx context.Context) {
	for ctx.Err() == nil {
		jobs, err := e.st.Jobs(ctx)
		if err == nil {
			for _, j := range jobs {
				st := ytstore.JobStatus{JobID: j.JobID, WorkerID: j.WorkerID, State: ytstore.JobRunning, Epoch: 7,
					InFlight: 0, Draining: j.Draining, UpdatedAt: ytstore.Now()}
				_ = e.st.PutJobStatus(ctx, st, j.LeaseID)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(30 * time.Millisecond):
		}
	}
}

func TestTargetStateTransitions(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.worker("w1")
	e.controller("A")
	e.waitFor("working", func() bool { return e.attrs().PipelineState == ytstore.StateWorking })
	jobs := e.waitJobs()

	if err := e.st.SetTargetState(ctx, ytstore.TargetPaused); err != nil {
		t.Fatal(err)
	}
	e.waitFor("paused", func() bool { return e.attrs().PipelineState == ytstore.StatePaused })
	if j := e.jobs(); len(j) != 0 {
		t.Fatalf("jobs while paused: %+v", j)
	}
	for _, j := range jobs {
		if e.alive(j.LeaseID) {
			t.Errorf("lease %s of job %s alive while paused", j.LeaseID, j.JobID)
		}
	}

	if err := e.st.SetTargetState(ctx, ytstore.TargetWorking); err != nil {
		t.Fatal(err)
	}
	e.waitFor("working again", func() bool { return e.attrs().PipelineState == ytstore.StateWorking })
	jobs = e.waitJobs()

	if err := e.st.SetTargetState(ctx, ytstore.TargetStopped); err != nil {
		t.Fatal(err)
	}
	e.waitFor("draining with all jobs flagged", func() bool {
		if e.attrs().PipelineState != ytstore.StateDraining {
			return false
		}
		for _, j := range e.jobs() {
			if !j.Draining {
				return false
			}
		}
		return true
	})
	// Nobody reports drained: the pipeline keeps draining.
	for range 5 {
		if s := e.attrs().PipelineState; s != ytstore.StateDraining {
			t.Fatalf("state %s without drained job statuses", s)
		}
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); e.reportDrained(rctx) }()
	defer func() { cancel(); <-done }()
	e.waitFor("stopped", func() bool { return e.attrs().PipelineState == ytstore.StateStopped })
	if j := e.jobs(); len(j) != 0 {
		t.Fatalf("jobs while stopped: %+v", j)
	}
	for _, j := range jobs {
		if e.alive(j.LeaseID) {
			t.Errorf("lease %s alive after stop", j.LeaseID)
		}
	}
}

func TestFailedJobReplacedWithNewLease(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.worker("w1")
	e.controller("A")
	jobs := e.waitJobs()
	failed := jobs[0]
	st := ytstore.JobStatus{JobID: failed.JobID, WorkerID: failed.WorkerID, State: ytstore.JobFailed, Error: "agg: user function panicked", UpdatedAt: ytstore.Now()}
	if err := e.st.PutJobStatus(ctx, st, failed.LeaseID); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the failed job's lease aborted", func() bool { return !e.alive(failed.LeaseID) })
	now := e.waitJobs()
	for _, j := range now {
		if j.JobID == failed.JobID {
			t.Fatalf("failed job %s kept", j.JobID)
		}
		if j.PartitionID == failed.PartitionID && j.LeaseID == failed.LeaseID {
			t.Fatalf("replacement reuses the lease %s", j.LeaseID)
		}
	}
	e.waitFor("the job error in controller_logs", func() bool {
		recs, err := e.st.ControllerLogs(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if strings.Contains(r.Data, "agg: user function panicked") {
				return true
			}
		}
		return false
	})
}

// TestPeekStatusesSeesDrain: between cycles of a transition the leader's peek asks for a
// cycle as soon as every job of the last observed layout reports itself drained (in_flight 0
// and draining applied, or completed), and not before; a job status newly saying completed
// asks for one in any case.
func TestPeekStatusesSeesDrain(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	put := func(id string, st ytstore.JobStatus) {
		t.Helper()
		st.JobID, st.WorkerID, st.UpdatedAt = id, "w1", ytstore.Now()
		if err := e.st.PutJobStatus(ctx, st, ""); err != nil {
			t.Fatal(err)
		}
	}
	c := &cycler{st: e.st, layoutJobs: map[string]bool{"a": true, "b": true}, completedJobs: map[string]bool{}}
	put("a", ytstore.JobStatus{State: ytstore.JobRunning, Draining: true})
	put("b", ytstore.JobStatus{State: ytstore.JobRunning, Draining: true, InFlight: 3})
	if c.peekStatuses(ctx, true) {
		t.Fatal("a cycle asked for while job b holds 3 messages")
	}
	put("b", ytstore.JobStatus{State: ytstore.JobRunning, Draining: false})
	if c.peekStatuses(ctx, true) {
		t.Fatal("a cycle asked for while job b has not applied draining")
	}
	put("b", ytstore.JobStatus{State: ytstore.JobRunning, Draining: true})
	if !c.peekStatuses(ctx, true) {
		t.Fatal("every job drained: the peek should ask for a cycle")
	}
	if c.peekStatuses(ctx, false) {
		t.Fatal("outside a transition a drained status set asks for no cycle")
	}
	c.completedJobs["a"] = true
	put("b", ytstore.JobStatus{State: ytstore.JobCompleted})
	if !c.peekStatuses(ctx, false) {
		t.Fatal("a newly completed job asks for a cycle")
	}
}
