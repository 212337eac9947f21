package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/yt"
)

// TestDeployedOperationSurvivesLocalRestart deploys the word count as a vanilla operation on
// `yt-flow local`, kills the server with SIGKILL while the pipeline works (its job processes
// die with it) and starts it again on the same data folder and port: the server revives the
// operation with new jobs, as YTsaurus's scheduler does after a restart, and the pipeline
// completes with every word counted exactly once; the operation then completes.
func TestDeployedOperationSurvivesLocalRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e test")
	}
	c := NewCluster(t)
	if c.Real() {
		t.Skip("kills the embedded server")
	}
	wc := NewWordCount(t, c, "revive", WordCountOptions{Messages: 3000, Words: 40, Tablets: 2, CountPartitions: 2, Seed: 37, MaxRowsPerBatch: 20})
	deploy := Start(t, "deploy", "deploy", "--proxy", c.Proxy, "--spec", wc.SpecFile, "--workers", "2", "--lease-timeout", "10s", "--binary", Binary(t))
	if err, ok := deploy.Wait(3 * time.Minute); !ok || err != nil {
		t.Fatalf("yt-flow deploy: %v (exited %v)\n%s", err, ok, deploy.Log())
	}
	m := operationLine.FindStringSubmatch(deploy.Log())
	if m == nil || !strings.Contains(deploy.Log(), "pipeline "+wc.Path+": working") {
		t.Fatalf("deploy output lacks the operation id or the working state:\n%s", deploy.Log())
	}
	g, err := guid.ParseString(m[1])
	if err != nil {
		t.Fatal(err)
	}
	opID := yt.OperationID(g)
	yc := ytClient(t, c)
	before := jobsByState(t, yc, opID)
	if len(before["worker"]["running"]) != 2 {
		t.Fatalf("list_jobs before the restart: %v", before)
	}
	if s := wc.State(); s != "working" {
		t.Fatalf("pipeline %s before the restart: it would test nothing", s)
	}

	c.KillLocal()
	c.RestartLocal()
	yc = ytClient(t, c)
	t.Cleanup(func() {
		if t.Failed() {
			logJobStderrs(t, yc, opID)
		}
		_ = yc.AbortOperation(context.Background(), opID, nil)
	})
	Eventually(t, 4*time.Minute, func() (bool, string) {
		s := wc.State()
		return s == "completed", fmt.Sprintf("pipeline state %q", s)
	})
	wc.CheckExactlyOnce(t)
	Eventually(t, time.Minute, func() (bool, string) {
		st, err := yc.GetOperation(context.Background(), opID, nil)
		if err != nil {
			return false, err.Error()
		}
		return st.State == yt.StateCompleted, fmt.Sprintf("operation %s", st.State)
	})
	after := jobsByState(t, yc, opID)
	if w, ctl := len(after["worker"]["completed"]), len(after["controller"]["completed"]); w != 2 || ctl != 1 {
		t.Errorf("jobs after the restart: %v; want 2 workers and 1 controller completed", after)
	}
	for _, id := range after["worker"]["completed"] {
		for _, old := range before["worker"]["running"] {
			if id == old {
				t.Errorf("job %s ran before the restart and completed after it: the revived operation must run new jobs", id)
			}
		}
	}
}
