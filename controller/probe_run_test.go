package controller

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ytflow/yt-flow/ytstore"
)

// endpoint is a worker's transport endpoint as the controller's probes see it: a real
// listener that accepts connections until it is closed (then the port refuses, as the port
// of a killed process does). It counts the probes: connections closed by the other side
// without a byte sent (a layout notification sends a request).
type endpoint struct {
	ln     net.Listener
	probes atomic.Int64
}

func newEndpoint(t *testing.T) *endpoint {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ep := &endpoint{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var b [1]byte
				if n, err := c.Read(b[:]); n == 0 && errors.Is(err, io.EOF) {
					ep.probes.Add(1)
				}
			}()
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	return ep
}

// workerAt registers a worker whose row publishes addr; its session is pinged by the client
// until the test ends, so it never times out: only an abort ends it.
func (e *env) workerAt(id, addr string) *ytstore.Session {
	e.t.Helper()
	ctx := context.Background()
	sess, err := e.st.StartSession(ctx, "worker "+id, 2*time.Second)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = sess.Close() })
	w := ytstore.Worker{WorkerID: id, Address: addr, SessionTx: sess.ID(), StartTime: ytstore.Now(), HeartbeatTime: ytstore.Now()}
	if err := e.st.PutWorker(ctx, w); err != nil {
		e.t.Fatal(err)
	}
	return sess
}

// TestRefusingWorkerLosesLeases kills a worker's endpoint (its port refuses connections)
// while its session stays alive (pinged, it never times out): the leader finds the worker
// dead by its probes, aborts its session, aborts the leases of its jobs and reassigns their
// partitions to the other worker under new leases, and a commit under an old lease (the
// zombie's) is rejected while one under the new lease applies.
func TestRefusingWorkerLosesLeases(t *testing.T) {
	e := newEnv(t)
	ep1, ep2 := newEndpoint(t), newEndpoint(t)
	w1 := e.workerAt("w1", ep1.ln.Addr().String())
	e.workerAt("w2", ep2.ln.Addr().String())
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
	// The probes must have reached w1 once: a worker never reached is never declared dead.
	e.waitFor("a probe accepted by w1", func() bool { return ep1.probes.Load() > 0 })
	if !e.alive(w1.ID()) {
		t.Fatal("w1's session ended before its endpoint closed")
	}
	_ = ep1.ln.Close() // the process is gone; its session lives on (pinged)

	e.waitFor("w1's session aborted", func() bool { return !e.alive(w1.ID()) })
	select {
	case <-w1.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("w1's session ended but its client did not see it")
	}
	now := e.waitJobs()
	for _, j := range now {
		if j.WorkerID != "w2" {
			t.Errorf("job %s still on %s after w1's endpoint closed", j.JobID, j.WorkerID)
		}
	}
	newLease := map[string]string{}
	for _, j := range now {
		newLease[j.PartitionID] = j.LeaseID
	}
	for _, old := range lost {
		if e.alive(old.LeaseID) {
			t.Errorf("lease %s of w1's job %s alive after its partition was reassigned", old.LeaseID, old.JobID)
		}
		if newLease[old.PartitionID] == "" || newLease[old.PartitionID] == old.LeaseID {
			t.Errorf("partition %s: lease %q after reassignment, old %s", old.PartitionID, newLease[old.PartitionID], old.LeaseID)
		}
	}

	// The zombie: a commit under the old lease writes nothing; the replacement's applies.
	ctx := context.Background()
	old := lost[0]
	err := e.st.CommitEpoch(ctx, &ytstore.EpochWrite{PartitionID: old.PartitionID, Lease: old.LeaseID, Token: 11,
		PartitionStates: map[string][]byte{"zombie": []byte("1")}})
	if !errors.Is(err, ytstore.ErrLeaseLost) {
		t.Fatalf("commit under w1's aborted lease: %v, want ErrLeaseLost", err)
	}
	if tok, found, err := e.st.PartitionToken(ctx, old.PartitionID); err != nil || found {
		t.Fatalf("partition token after the zombie's commit: %d, found %v, %v; want none", tok, found, err)
	}
	err = e.st.CommitEpoch(ctx, &ytstore.EpochWrite{PartitionID: old.PartitionID, Lease: newLease[old.PartitionID], Token: 12,
		PartitionStates: map[string][]byte{"replacement": []byte("1")}})
	if err != nil {
		t.Fatalf("commit under the replacement's lease: %v", err)
	}
	if tok, found, err := e.st.PartitionToken(ctx, old.PartitionID); err != nil || !found || tok != 12 {
		t.Fatalf("partition token after the replacement's commit: %d, found %v, %v; want 12", tok, found, err)
	}

	recs, err := e.st.ControllerLogs(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var refused, removed int
	for _, r := range recs {
		if strings.HasPrefix(r.Data, "worker w1 refuses connections at "+ep1.ln.Addr().String()) {
			refused++
		}
		if strings.Contains(r.Data, "on worker w1 removed: worker lost") {
			if refused == 0 {
				t.Errorf("w1's job removed before its refusals were logged: %q", r.Data)
			}
			removed++
		}
	}
	if refused != 1 || removed != len(lost) {
		t.Errorf("controller_logs: %d refusal records of w1 (want 1), %d removals of its jobs (want %d): %+v", refused, removed, len(lost), recs)
	}
	if ep2.probes.Load() == 0 {
		t.Error("w2 was never probed")
	}
}
