package controller

import (
	"slices"
	"strings"
	"testing"

	"github.com/ytflow/yt-flow/ytstore"
)

// stepWith steps the world with the observation changed by mod.
func (w *world) stepWith(t *testing.T, s *Scheduler, mod func(*Input)) (*Decision, []ytstore.Job) {
	t.Helper()
	in := w.input()
	mod(in)
	d := s.Step(in)
	return d, w.apply(t, d)
}

// versions sets the workers' versions, the target and the controller's version.
func versions(target, controller string, workers map[string]string) func(*Input) {
	return func(in *Input) {
		in.FlowCoreTarget, in.ControllerVersion = target, controller
		for i := range in.Workers {
			in.Workers[i].FlowCoreVersion = workers[in.Workers[i].WorkerID]
		}
	}
}

func eventsWith(d *Decision, sub string) int {
	n := 0
	for _, e := range d.Events {
		if strings.Contains(e, sub) {
			n++
		}
	}
	return n
}

// TestWorkersOfAnotherVersionGetNoJobs: with a FlowCoreTarget, a worker of another version gets
// no job (the decision lists it and an event names both versions, once); when the target
// changes under running jobs, the jobs of the workers it excludes are removed, their leases
// aborted, and given to the workers of the target's version; an empty target lets every
// worker run jobs again.
func TestWorkersOfAnotherVersionGetNoJobs(t *testing.T) {
	w := newWorld("new1", "old", "new2")
	vers := map[string]string{"new1": "v2", "new2": "v2", "old": "v1"}
	var s Scheduler
	d, created := w.stepWith(t, &s, versions("v2", "v2", vers))
	if d.PipelineState != ytstore.StateWorking || len(created) != 5 {
		t.Fatalf("state %q, %d jobs created; want working and 5", d.PipelineState, len(created))
	}
	if l := w.load(); l["old"] != 0 || l["new1"]+l["new2"] != 5 {
		t.Errorf("load %v: the worker of version v1 has jobs under target v2", l)
	}
	if !slices.Equal(d.VersionMismatchWorkers, []string{"old"}) {
		t.Errorf("VersionMismatchWorkers %v, want [old]", d.VersionMismatchWorkers)
	}
	if n := eventsWith(d, "worker old runs version v1, not the flow core target v2: it gets no jobs"); n != 1 {
		t.Errorf("%d events naming the stale worker and both versions, want 1: %q", n, d.Events)
	}
	d, created = w.stepWith(t, &s, versions("v2", "v2", vers))
	if len(created) != 0 || eventsWith(d, "worker old") != 0 || !slices.Equal(d.VersionMismatchWorkers, []string{"old"}) {
		t.Errorf("second step: created %d, events %q, mismatched %v; want nothing new, old still listed", len(created), d.Events, d.VersionMismatchWorkers)
	}

	// Without a target every worker takes part.
	w2 := newWorld("new1", "old")
	var s2 Scheduler
	w2.stepWith(t, &s2, versions("", "v2", vers))
	if l := w2.load(); l["old"] == 0 || l["new1"] == 0 {
		t.Fatalf("no target: load %v, want jobs on both workers", l)
	}
	var oldLeases []string
	for _, j := range w2.jobs {
		if j.WorkerID == "old" {
			oldLeases = append(oldLeases, j.LeaseID)
		}
	}
	// The target is set: the stale worker's jobs move, their leases aborted first.
	d, created = w2.stepWith(t, &s2, versions("v2", "v2", vers))
	if l := w2.load(); l["old"] != 0 || l["new1"] != 5 {
		t.Errorf("target set: load %v, want all 5 jobs on new1", l)
	}
	if len(created) != len(oldLeases) {
		t.Errorf("target set: %d jobs created, want %d (the stale worker's)", len(created), len(oldLeases))
	}
	for _, l := range oldLeases {
		if w2.leases[l] || !slices.Contains(d.AbortLeases, l) {
			t.Errorf("lease %s of a job of the stale worker not aborted", l)
		}
	}
	if eventsWith(d, "the worker's version is not the flow core target v2") != len(oldLeases) {
		t.Errorf("events %q do not say why the stale worker's jobs were removed", d.Events)
	}
	// The target is reset: the old worker may run jobs again.
	w2.stepWith(t, &s2, versions("", "v2", vers))
	if l := w2.load(); l["old"] == 0 {
		t.Errorf("target reset: load %v, want jobs on old again", l)
	}
}

// TestControllerOfAnotherVersionPauses: a controller whose version is not the FlowCoreTarget
// moves a working pipeline to pausing (its jobs removed, leases aborted), then paused, and keeps
// it paused while the target state stays working, saying why once; a controller of the
// target's version resumes it. The spec's validate_binary_version and validate_binary_checksum
// pause the same way.
func TestControllerOfAnotherVersionPauses(t *testing.T) {
	w := newWorld("w1", "w2")
	vers := map[string]string{"w1": "v2", "w2": "v2"}
	var s Scheduler
	w.stepWith(t, &s, versions("v2", "v2", vers))
	if w.state != ytstore.StateWorking || len(w.jobs) != 5 {
		t.Fatalf("state %q, %d jobs; want working and 5", w.state, len(w.jobs))
	}
	var leases []string
	for _, j := range w.jobs {
		leases = append(leases, j.LeaseID)
	}
	var stale Scheduler // a new leader of version v1
	d, created := w.stepWith(t, &stale, versions("v2", "v1", vers))
	if d.PipelineState != ytstore.StatePausing || len(w.jobs) != 0 || len(created) != 0 {
		t.Fatalf("stale controller: state %q, %d jobs, %d created; want pausing, none, none", d.PipelineState, len(w.jobs), len(created))
	}
	for _, l := range leases {
		if w.leases[l] {
			t.Errorf("lease %s alive under a stale controller", l)
		}
	}
	want := "binary mismatch: the controller runs version v1, the flow core target is v2"
	if d.ControllerMismatch != want || eventsWith(d, want) != 1 {
		t.Errorf("mismatch %q, events %q; want %q once", d.ControllerMismatch, d.Events, want)
	}
	for range 3 {
		d, created = w.stepWith(t, &stale, versions("v2", "v1", vers))
		if d.PipelineState != ytstore.StatePaused || len(created) != 0 || eventsWith(d, "binary mismatch") != 0 {
			t.Fatalf("stale controller: state %q, %d created, events %q; want paused, none, no repeat", d.PipelineState, len(created), d.Events)
		}
	}
	var fresh Scheduler
	d, created = w.stepWith(t, &fresh, versions("v2", "v2", vers))
	if d.PipelineState != ytstore.StateWorking || len(created) != 5 || d.ControllerMismatch != "" {
		t.Errorf("controller of the target's version: state %q, %d created, mismatch %q", d.PipelineState, len(created), d.ControllerMismatch)
	}

	for _, tc := range []struct {
		name string
		topo func(*Topology)
		sum  string
		want string
	}{
		{"binary_version differs", func(tp *Topology) { tp.ValidateBinaryVersion, tp.BinaryVersion = true, "v3" }, "",
			"binary mismatch: the controller runs version v2, the spec's binary_version is v3"},
		{"binary_version equal", func(tp *Topology) { tp.ValidateBinaryVersion, tp.BinaryVersion = true, "v2" }, "", ""},
		{"binary_version not validated", func(tp *Topology) { tp.BinaryVersion = "v3" }, "", ""},
		{"binary_checksum differs", func(tp *Topology) { tp.ValidateBinaryChecksum, tp.BinaryChecksum = true, "abc" }, "def",
			"binary mismatch: the controller's binary has checksum def, the spec's binary_checksum is abc"},
		{"binary_checksum equal", func(tp *Topology) { tp.ValidateBinaryChecksum, tp.BinaryChecksum = true, "abc" }, "abc", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld("w1")
			tc.topo(&w.topology)
			var s Scheduler
			d, _ := w.stepWith(t, &s, func(in *Input) {
				versions("", "v2", nil)(in)
				in.ControllerChecksum = tc.sum
			})
			wantState := ytstore.StateWorking
			if tc.want != "" {
				wantState = ytstore.StatePaused
			}
			if d.ControllerMismatch != tc.want || d.PipelineState != wantState {
				t.Errorf("mismatch %q, state %q; want %q, %q", d.ControllerMismatch, d.PipelineState, tc.want, wantState)
			}
		})
	}
}

// TestStaleWorkerDoesNotDelayFirstAssignment: a worker of another version than the target
// appearing after the controller's first step does not hold the first assignment back (the
// settle window waits only for workers that could share it): the worker of the target's
// version, there from the first step, gets every job at once.
func TestStaleWorkerDoesNotDelayFirstAssignment(t *testing.T) {
	w := newWorld("new")
	vers := map[string]string{"new": "v2", "old": "v1"}
	s := Scheduler{Settle: 60_000_000} // a minute: the steps are 0.5s apart
	noSpec := func(in *Input) { versions("v2", "v2", vers)(in); in.HasSpec = false }
	if _, created := w.stepWith(t, &s, noSpec); len(created) != 0 {
		t.Fatalf("jobs without a spec: %v", created)
	}
	w.workers["old"] = true
	_, created := w.stepWith(t, &s, versions("v2", "v2", vers))
	if len(created) != 5 {
		t.Fatalf("first assignment created %d jobs, want 5 at once", len(created))
	}
	if l := w.load(); l["new"] != 5 || l["old"] != 0 {
		t.Errorf("load %v, want all 5 jobs on the worker of the target's version", l)
	}
}
