package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ytflow/yt-flow/ytlocal/ytlocaltest"
	"github.com/ytflow/yt-flow/ytstore"
)

// BenchmarkSchedulerStep measures one decision on a steady layout of 1064
// partitions (10 keyed computations x 100 ranges + a 64-tablet queue source)
// over 50 workers.
func BenchmarkSchedulerStep(b *testing.B) {
	w := &world{
		now: 1, target: ytstore.TargetWorking, workers: map[string]bool{}, partitions: map[string]ytstore.Partition{},
		jobs: map[string]ytstore.Job{}, statuses: map[string]ytstore.JobStatus{}, leases: map[string]bool{}, tablets: map[string]int{"//q": 64},
	}
	for i := range 10 {
		w.topology.Computations = append(w.topology.Computations, Computation{ID: fmt.Sprintf("c%d", i), PartitionCount: 100})
	}
	w.topology.Computations = append(w.topology.Computations, Computation{ID: "src", Sources: []Source{{ID: "s", ListKey: "//q"}}})
	for i := range 50 {
		w.workers[fmt.Sprintf("w%02d", i)] = true
	}
	var s Scheduler
	d := s.Step(w.input())
	for i := range d.Layout.PutJobs {
		d.Layout.PutJobs[i].LeaseID = fmt.Sprintf("l%d", i)
	}
	for _, pt := range d.Layout.PutPartitions {
		w.partitions[pt.PartitionID] = pt
	}
	for _, j := range d.Layout.PutJobs {
		w.jobs[j.JobID] = j
		w.leases[j.LeaseID] = true
	}
	in := w.input()
	b.ResetTimer()
	for b.Loop() {
		if d := s.Step(in); !d.Layout.Empty() {
			b.Fatalf("steady layout changed: %d puts", len(d.Layout.PutJobs))
		}
	}
	b.ReportMetric(float64(len(in.Jobs)), "jobs")
}

// steadyCycler returns the leading controller's cycler of a steady 3-job pipeline on
// in-process ytlocal (one worker, two cycles run: partitions and jobs created) and its store;
// everything is closed when b ends.
func steadyCycler(b *testing.B) (*cycler, *ytstore.Store) {
	b.Helper()
	ctx := context.Background()
	proxy := ytlocaltest.New(b)
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: proxy, Path: testPath})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(st.Close)
	if err := st.CreatePipeline(ctx); err != nil {
		b.Fatal(err)
	}
	if err := st.SetSpecs(ctx, ytstore.SpecUpdate{Spec: []byte(testSpec), SpecVersion: 1, DynamicSpec: []byte(testDynamicSpec), DynamicSpecVersion: 1, TargetState: ytstore.TargetWorking}); err != nil {
		b.Fatal(err)
	}
	ws, err := st.StartSession(ctx, "worker", 10*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ws.Close() })
	if err := st.PutWorker(ctx, ytstore.Worker{WorkerID: "w1", SessionTx: ws.ID()}); err != nil {
		b.Fatal(err)
	}
	sess, err := st.StartSession(ctx, "controller", 10*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sess.Close() })
	if err := st.LockLeader(ctx, sess); err != nil {
		b.Fatal(err)
	}
	c := &cycler{st: st, cfg: Config{LeaseTimeout: 30 * time.Second}.withDefaults(), sess: sess, sched: &Scheduler{}}
	c.lg = c.cfg.Logger
	for range 2 { // create partitions and jobs
		if _, err := c.cycle(ctx); err != nil {
			b.Fatal(err)
		}
	}
	return c, st
}

// BenchmarkCycleOnYtlocal measures one full scheduling cycle (observe: attributes,
// workers and their sessions, partitions, jobs, statuses, lease pings; decide;
// apply) of a steady 3-job pipeline against in-process ytlocal.
func BenchmarkCycleOnYtlocal(b *testing.B) {
	ctx := context.Background()
	c, _ := steadyCycler(b)
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.cycle(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
