package ytstore

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/ytflow/yt-flow/ytlocal/ytlocaltest"
)

// openTestStore starts ytlocal and opens a store on a pipeline path in it.
func openTestStore(t *testing.T, path string) *Store {
	t.Helper()
	ctx := context.Background()
	st, err := Open(ctx, Config{Proxy: ytlocaltest.New(t), Path: path, PingPeriod: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(st.Close)
	return st
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCreatePipelineIdempotent(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t, "//home/p/pipe")
	if ok, err := st.Exists(ctx); err != nil || ok {
		t.Fatalf("Exists before create = %v, %v", ok, err)
	}
	if _, err := st.Attributes(ctx); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Attributes of a missing pipeline: %v, want ErrNotFound", err)
	}
	for i := range 2 {
		if err := st.CreatePipeline(ctx); err != nil {
			t.Fatalf("CreatePipeline #%d: %v", i+1, err)
		}
	}
	a, err := st.Attributes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a.FormatVersion != PipelineFormatVersion || a.TargetState != "" || a.SpecVersion != 0 {
		t.Errorf("fresh attributes %+v", a)
	}
	for _, td := range tables() {
		var state string
		if err := st.yc.GetNode(ctx, st.child(td.name).Attr("tablet_state"), &state, nil); err != nil || state != "mounted" {
			t.Errorf("table %s: tablet_state %q, %v", td.name, state, err)
		}
	}
	if err := st.SetSpecs(ctx, SpecUpdate{Spec: []byte("{a=1}"), SpecVersion: 1, DynamicSpec: []byte("{}"), DynamicSpecVersion: 1, TargetState: TargetWorking}); err != nil {
		t.Fatal(err)
	}
	if err := st.SetTargetState(ctx, "bogus"); err == nil {
		t.Error("SetTargetState accepted an unknown state")
	}
	a, err = st.Attributes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a.SpecVersion != 1 || a.DynamicSpecVersion != 1 || a.TargetState != TargetWorking || len(a.Spec) == 0 {
		t.Errorf("attributes after SetSpecs %+v", a)
	}
	// A non-empty node that is not a pipeline is refused.
	parent, err := Open(ctx, Config{Proxy: st.proxy, Path: "//home/p"})
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	if err := parent.CreatePipeline(ctx); err == nil {
		t.Error("CreatePipeline turned a non-empty map node into a pipeline")
	}
}

func TestLeaseLifecycle(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t, "//home/p/pipe")
	if err := st.CreatePipeline(ctx); err != nil {
		t.Fatal(err)
	}
	lease, err := st.StartLease(ctx, "job-1", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := st.TxAlive(ctx, lease); err != nil || !ok {
		t.Fatalf("TxAlive(new lease) = %v, %v", ok, err)
	}
	if err := st.PingLease(ctx, lease); err != nil {
		t.Fatalf("PingLease: %v", err)
	}
	if err := st.PutJobStatus(ctx, JobStatus{JobID: "job-1", WorkerID: "w", State: JobRunning}, lease); err != nil {
		t.Fatalf("PutJobStatus under a live lease: %v", err)
	}
	if got, err := st.JobStatuses(ctx); err != nil || len(got) != 1 || got[0].Pivots != nil || got[0].Messages != 0 {
		t.Fatalf("an empty load report does not read back: %+v, %v", got, err)
	}
	status := JobStatus{JobID: "job-1", WorkerID: "w", State: JobRunning, Epoch: 1,
		Load: Load{Messages: 7, Bytes: 300, BusyTime: 5000, Timers: 2, Pivots: []uint64{1, 1 << 63, 1<<64 - 1}}}
	if err := st.PutJobStatus(ctx, status, lease); err != nil {
		t.Fatalf("PutJobStatus under a live lease: %v", err)
	}
	if got, err := st.JobStatuses(ctx); err != nil || len(got) != 1 || !slices.Equal(got[0].Pivots, status.Pivots) ||
		got[0].Messages != 7 || got[0].Bytes != 300 || got[0].BusyTime != 5000 || got[0].Timers != 2 {
		t.Fatalf("the load report does not read back: %+v, %v", got, err)
	}
	if err := st.AbortLease(ctx, lease); err != nil {
		t.Fatalf("AbortLease: %v", err)
	}
	if ok, err := st.TxAlive(ctx, lease); err != nil || ok {
		t.Fatalf("TxAlive(aborted lease) = %v, %v", ok, err)
	}
	if err := st.PingLease(ctx, lease); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("PingLease(aborted) = %v, want ErrLeaseLost", err)
	}
	status.Epoch = 2
	if err := st.PutJobStatus(ctx, status, lease); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("PutJobStatus under an aborted lease = %v, want ErrLeaseLost", err)
	}
	got, err := st.JobStatuses(ctx)
	if err != nil || len(got) != 1 || got[0].Epoch != 1 {
		t.Fatalf("statuses after a fenced write: %+v, %v", got, err)
	}
	if err := st.AbortLease(ctx, lease); err != nil {
		t.Errorf("second AbortLease: %v", err)
	}
	if ok, _ := st.TxAlive(ctx, "not-a-guid"); ok {
		t.Error("malformed id reported alive")
	}
}

func TestLeaderLockIsExclusive(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t, "//home/p/pipe")
	if err := st.CreatePipeline(ctx); err != nil {
		t.Fatal(err)
	}
	a, err := st.StartSession(ctx, "a", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.StartSession(ctx, "b", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := st.LockLeader(ctx, a); err != nil {
		t.Fatalf("first lock: %v", err)
	}
	if err := st.LockLeader(ctx, b); !errors.Is(err, ErrConflict) {
		t.Fatalf("second lock = %v, want ErrConflict", err)
	}
	// Layout writes are fenced by the leader's session.
	change := LayoutChange{PutPartitions: []Partition{{PartitionID: "c/0of1", ComputationID: "c", SourcePartition: -1, State: PartitionActive}}}
	if err := st.ApplyLayout(ctx, a, change); err != nil {
		t.Fatalf("ApplyLayout by the leader: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	<-a.Done()
	change.PutPartitions[0].State = PartitionCompleted
	if err := st.ApplyLayout(ctx, a, change); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("ApplyLayout by a deposed leader = %v, want ErrLeaseLost", err)
	}
	if err := st.SetControllerAttributes(ctx, a, StateWorking, ""); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("SetControllerAttributes by a deposed leader = %v, want ErrLeaseLost", err)
	}
	parts, err := st.Partitions(ctx)
	if err != nil || len(parts) != 1 || parts[0].State != PartitionActive {
		t.Fatalf("partitions %+v, %v", parts, err)
	}
	waitFor(t, "b to take the lock", func() bool { return st.LockLeader(ctx, b) == nil })
}

func TestCoordinationRows(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t, "//home/p/pipe")
	if err := st.CreatePipeline(ctx); err != nil {
		t.Fatal(err)
	}
	sess, err := st.StartSession(ctx, "worker w1", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	w := Worker{WorkerID: "w1", Address: "127.0.0.1:1", SessionTx: sess.ID(), StartTime: Now(), HeartbeatTime: Now()}
	if err := st.PutWorker(ctx, w); err != nil {
		t.Fatal(err)
	}
	leader, err := st.StartSession(ctx, "leader", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer leader.Close()
	jobs := []Job{
		{JobID: "j1", ComputationID: "c", PartitionID: "c/0of2", WorkerID: "w1", LeaseID: "x", LowerKey: 0, UpperKey: 1 << 63, SourcePartition: -1},
		{JobID: "j2", ComputationID: "c", PartitionID: "c/1of2", WorkerID: "w2", LeaseID: "y", LowerKey: 1 << 63, SourcePartition: -1, Draining: true},
	}
	if err := st.ApplyLayout(ctx, leader, LayoutChange{PutJobs: jobs}); err != nil {
		t.Fatal(err)
	}
	mine, err := st.JobsOfWorker(ctx, "w1")
	if err != nil || len(mine) != 1 || mine[0] != jobs[0] {
		t.Fatalf("JobsOfWorker(w1) = %+v, %v", mine, err)
	}
	all, err := st.Jobs(ctx)
	if err != nil || !slices.Equal(all, jobs) {
		t.Fatalf("Jobs() = %+v, %v", all, err)
	}
	ws, err := st.Workers(ctx)
	if err != nil || len(ws) != 1 || ws[0] != w {
		t.Fatalf("Workers() = %+v, %v", ws, err)
	}
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	if ok, err := st.TxAlive(ctx, w.SessionTx); err != nil || ok {
		t.Fatalf("TxAlive(closed session) = %v, %v", ok, err)
	}
	w.HeartbeatTime++
	if err := st.PutWorker(ctx, w); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("PutWorker after its session ended = %v, want ErrLeaseLost", err)
	}
	if err := st.ApplyLayout(ctx, leader, LayoutChange{DeleteJobs: []string{"j1", "j2"}, DeleteWorkers: []string{"w1"}}); err != nil {
		t.Fatal(err)
	}
	if all, _ := st.Jobs(ctx); len(all) != 0 {
		t.Errorf("jobs left: %+v", all)
	}
	if err := st.AppendControllerLog(ctx, LogRecord{Time: 1, Host: "h", Data: "one"}, LogRecord{Time: 2, Host: "h", Data: "two"}); err != nil {
		t.Fatal(err)
	}
	recs, err := st.ControllerLogs(ctx, 1)
	if err != nil || len(recs) != 1 || recs[0].Data != "two" {
		t.Fatalf("ControllerLogs(1) = %+v, %v", recs, err)
	}
}

// TestAbortSession aborts a worker's session from another client, as the leader does with a
// worker whose endpoint refuses connections: the session ends (its owner sees Done), a write
// conditional on it is refused with ErrLeaseLost, and aborting it again is not an error.
func TestAbortSession(t *testing.T) {
	ctx := context.Background()
	proxy := ytlocaltest.New(t)
	open := func() *Store {
		st, err := Open(ctx, Config{Proxy: proxy, Path: "//home/p/pipe", PingPeriod: 200 * time.Millisecond})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		t.Cleanup(st.Close)
		return st
	}
	st, owner := open(), open()
	if err := st.CreatePipeline(ctx); err != nil {
		t.Fatal(err)
	}
	sess, err := owner.StartSession(ctx, "worker w", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	w := Worker{WorkerID: "w", Address: "127.0.0.1:1", SessionTx: sess.ID()}
	if err := owner.PutWorker(ctx, w); err != nil {
		t.Fatalf("PutWorker under a live session: %v", err)
	}
	if err := st.AbortSession(ctx, sess.ID()); err != nil {
		t.Fatalf("AbortSession: %v", err)
	}
	if ok, err := st.TxAlive(ctx, sess.ID()); err != nil || ok {
		t.Fatalf("TxAlive(aborted session) = %v, %v", ok, err)
	}
	select {
	case <-sess.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the session's owner never saw it end")
	}
	if err := owner.PutWorker(ctx, w); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("PutWorker under the aborted session: %v, want ErrLeaseLost", err)
	}
	if err := st.AbortSession(ctx, sess.ID()); err != nil {
		t.Fatalf("AbortSession of an aborted session: %v", err)
	}
}
