package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ytflow/yt-flow/ytstore"
)

// TestMismatchedControllerPausesPipeline runs the fence against ytlocal: with
// @flow_core_target v2, a leader of version v1 publishes its version, pauses the working
// pipeline (target state still working) and says why in controller_logs, naming both
// versions; a leader of version v2 then resumes it and gives every job to the worker of
// version v2, none to the worker of v1, which controller_logs names.
func TestMismatchedControllerPausesPipeline(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.st.ChangeFlowCoreTarget(ctx, func(*ytstore.Attributes) (string, error) { return "v2", nil }); err != nil {
		t.Fatal(err)
	}
	for id, v := range map[string]string{"w-new": "v2", "w-old": "v1"} {
		sess, err := e.st.StartSession(ctx, "worker "+id, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sess.Close() })
		if err := e.st.PutWorker(ctx, ytstore.Worker{WorkerID: id, SessionTx: sess.ID(), FlowCoreVersion: v, StartTime: ytstore.Now(), HeartbeatTime: ytstore.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := e.st.Workers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if want := map[string]string{"w-new": "v2", "w-old": "v1"}[w.WorkerID]; w.FlowCoreVersion != want {
			t.Errorf("worker %s stored version %q, want %q", w.WorkerID, w.FlowCoreVersion, want)
		}
	}

	stop := e.controllerOf("old-controller", "v1")
	e.waitFor("a paused pipeline under the v1 controller", func() bool {
		a := e.attrs()
		return a.PipelineState == ytstore.StatePaused && a.LeaderFlowCoreVersion == "v1"
	})
	if a := e.attrs(); a.TargetState != ytstore.TargetWorking || a.FlowCoreTarget != "v2" || a.FlowCoreTargetVersion != 1 {
		t.Errorf("target state %q, flow core target %q (version %d); want working, v2, 1", a.TargetState, a.FlowCoreTarget, a.FlowCoreTargetVersion)
	}
	if n := len(e.jobs()); n != 0 {
		t.Errorf("%d jobs under a controller of another version", n)
	}
	logsHave := func(sub string) bool {
		recs, err := e.st.ControllerLogs(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if strings.Contains(r.Data, sub) {
				return true
			}
		}
		return false
	}
	if !logsHave("binary mismatch: the controller runs version v1, the flow core target is v2") {
		t.Error("controller_logs do not say why the pipeline paused")
	}
	stop()

	e.controllerOf("new-controller", "v2")
	e.waitFor("a working pipeline with its 3 jobs under the v2 controller", func() bool {
		return e.attrs().PipelineState == ytstore.StateWorking && len(e.jobs()) == 3
	})
	for _, j := range e.jobs() {
		if j.WorkerID != "w-new" {
			t.Errorf("job %s on worker %s, want w-new (the worker of the target's version)", j.JobID, j.WorkerID)
		}
	}
	if !logsHave("worker w-old runs version v1, not the flow core target v2: it gets no jobs") {
		t.Error("controller_logs do not name the worker of another version")
	}
}
