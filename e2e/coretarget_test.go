package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/yt"

	"github.com/ytflow/yt-flow/internal/corever"
)

var (
	staleOnce    sync.Once
	staleBinPath string
	staleErr     error
)

// StaleBinary builds ./cmd/yt-flow a second time, without VCS metadata and with another
// app.Version: a binary of another flow core version (its SHA-256) than Binary's. Only the
// link step runs again.
func StaleBinary(t testing.TB) string {
	t.Helper()
	staleOnce.Do(func() {
		dir, err := os.MkdirTemp("", "yt-flow-e2e-stale-")
		if err != nil {
			staleErr = err
			return
		}
		staleBinPath = filepath.Join(dir, "yt-flow")
		_, file, _, _ := runtime.Caller(0)
		cmd := exec.Command("go", "build", "-buildvcs=false", "-ldflags", "-X github.com/ytflow/yt-flow/app.Version=0.0.0-stale", "-o", staleBinPath, "./cmd/yt-flow")
		cmd.Dir = filepath.Dir(filepath.Dir(file))
		if out, err := cmd.CombinedOutput(); err != nil {
			staleErr = fmt.Errorf("go build (stale) ./cmd/yt-flow: %v\n%s", err, out)
		}
	})
	if staleErr != nil {
		t.Fatal(staleErr)
	}
	return staleBinPath
}

var coreVersionLine = regexp.MustCompile(`(?m)^flow core version (\S+)$`)

// coreVersionOf runs `bin version` and returns the flow core version it prints.
func coreVersionOf(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command(bin, "version").CombinedOutput()
	m := coreVersionLine.FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("%s version: %v\n%s", bin, err, out)
	}
	return string(m[1])
}

// TestFlowCoreTargetFencesStaleWorker runs two builds of yt-flow against one pipeline. The
// flow core target is set to the current build's version; a controller and a worker of the
// stale build (another version) start first: the stale controller leads and pauses the
// pipeline, saying so with both versions. The word count is then deployed with the current
// build (a vanilla operation, which sets the target again); its controller stands by until
// the stale controller is killed (SIGKILL), then leads and runs the pipeline to completion on
// the operation's two workers. The stale worker, alive all along, is never assigned a job
// (no assignment to it in controller_logs, which says why), and every word is counted
// exactly once.
func TestFlowCoreTargetFencesStaleWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e test")
	}
	c := NewCluster(t)
	if c.Real() {
		t.Skip("kills a controller process on this host")
	}
	cur, stale := coreVersionOf(t, Binary(t)), coreVersionOf(t, StaleBinary(t))
	if sum, err := corever.ChecksumFile(StaleBinary(t)); err != nil || stale != sum {
		t.Fatalf("the stale build's version %s is not its SHA-256 %s (%v)", stale, sum, err)
	}
	if cur == stale {
		t.Fatalf("both builds have version %s", cur)
	}
	wc := NewWordCount(t, c, "coretarget", WordCountOptions{Messages: 2000, Words: 40, Tablets: 2, CountPartitions: 2, Seed: 36, MaxRowsPerBatch: 50})
	wc.StartPipeline(t)
	set := Start(t, "set-target", "set-flow-core-target", "--proxy", c.Proxy, "--flow-core-target", cur, wc.Path)
	if err, ok := set.Wait(time.Minute); !ok || err != nil {
		t.Fatalf("set-flow-core-target: %v (exited %v)\n%s", err, ok, set.Log())
	}

	staleController := StartBinary(t, StaleBinary(t), "stale-controller", "controller", "--proxy", c.Proxy, "--path", wc.Path,
		"--lease-timeout", "10s", "--session-timeout", "3s")
	staleWorker := StartBinary(t, StaleBinary(t), "stale-worker", "worker", "--proxy", c.Proxy, "--path", wc.Path, "--id", "stale-worker")
	Eventually(t, time.Minute, func() (bool, string) {
		a, err := wc.Store.Attributes(context.Background())
		if err != nil {
			return false, err.Error()
		}
		return a.PipelineState == "paused" && a.LeaderFlowCoreVersion == stale, fmt.Sprintf("state %q, leader version %q", a.PipelineState, a.LeaderFlowCoreVersion)
	})

	deploy := Start(t, "deploy", "deploy", "--proxy", c.Proxy, "--spec", wc.SpecFile, "--workers", "2", "--lease-timeout", "10s", "--binary", Binary(t), "--wait", "none")
	if err, ok := deploy.Wait(3 * time.Minute); !ok || err != nil {
		t.Fatalf("yt-flow deploy: %v (exited %v)\n%s", err, ok, deploy.Log())
	}
	m := operationLine.FindStringSubmatch(deploy.Log())
	if m == nil || !strings.Contains(deploy.Log(), "flow core target "+cur+" (version 2)") {
		t.Fatalf("deploy output lacks the operation or the flow core target %s (version 2):\n%s", cur, deploy.Log())
	}
	g, err := guid.ParseString(m[1])
	if err != nil {
		t.Fatal(err)
	}
	opID := yt.OperationID(g)
	yc := ytClient(t, c)
	t.Cleanup(func() { _ = yc.AbortOperation(context.Background(), opID, nil) })
	// The operation's jobs are up; the stale controller still leads and keeps the pipeline
	// paused, and status says why.
	Eventually(t, time.Minute, func() (bool, string) {
		jobs := jobsByState(t, yc, opID)
		return len(jobs["worker"]["running"]) == 2 && len(jobs["controller"]["running"]) == 1, fmt.Sprintf("jobs %v", jobs)
	})
	status := Start(t, "status", "status", "--proxy", c.Proxy, "--path", wc.Path)
	if err, ok := status.Wait(time.Minute); !ok || err != nil {
		t.Fatalf("yt-flow status: %v (exited %v)\n%s", err, ok, status.Log())
	}
	if !regexp.MustCompile(`(?m)^state +paused \(target working\)$`).MatchString(status.Log()) {
		t.Errorf("yt-flow status does not show the pipeline paused:\n%s", status.Log())
	}
	for _, want := range []string{"binary mismatch: the leading controller runs version " + stale + ", not " + cur,
		"worker stale-worker runs version " + stale + ", not the flow core target " + cur + ": it gets no jobs"} {
		if !strings.Contains(status.Log(), want) {
			t.Errorf("yt-flow status lacks %q:\n%s", want, status.Log())
		}
	}

	Eventually(t, time.Minute, func() (bool, string) {
		ws, err := wc.Store.Workers(context.Background())
		return err == nil && len(ws) == 3, fmt.Sprintf("%d workers registered (%v)", len(ws), err)
	})
	describe := Start(t, "describe-workers", "describe-workers", "--proxy", c.Proxy, "--format", "json", wc.Path)
	if err, ok := describe.Wait(time.Minute); !ok || err != nil {
		t.Fatalf("yt-flow describe-workers: %v (exited %v)\n%s", err, ok, describe.Log())
	}
	var described []struct {
		ID      string `json:"worker_id"`
		Version string `json:"flow_core_version"`
		Jobs    int    `json:"job_count"`
	}
	if err := json.Unmarshal([]byte(describe.Log()), &described); err != nil {
		t.Fatalf("describe-workers output: %v\n%s", err, describe.Log())
	}
	versions := map[string]int{}
	for _, w := range described {
		versions[w.Version]++
		if w.ID == "stale-worker" && (w.Version != stale || w.Jobs != 0) {
			t.Errorf("describe-workers: the stale worker has version %s and %d jobs; want %s and none", w.Version, w.Jobs, stale)
		}
	}
	if versions[stale] != 1 || versions[cur] != 2 {
		t.Errorf("describe-workers: versions %v; want the stale worker's once and the deployed workers' twice", versions)
	}

	staleController.Kill()
	Eventually(t, 4*time.Minute, func() (bool, string) {
		s := wc.State()
		return s == "completed", fmt.Sprintf("pipeline state %q", s)
	})
	wc.CheckExactlyOnce(t)
	if staleWorker.Exited() {
		t.Errorf("the stale worker exited: %s", tail(staleWorker.Log(), 2000))
	}
	logs, err := wc.Store.ControllerLogs(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var assigned, workerRefused, controllerRefused int
	for _, r := range logs {
		switch {
		case strings.Contains(r.Data, "assigned to worker stale-worker"):
			t.Errorf("controller log: %s", r.Data)
		case strings.Contains(r.Data, " assigned to worker "):
			assigned++
		case strings.Contains(r.Data, "worker stale-worker runs version "+stale+", not the flow core target "+cur+": it gets no jobs"):
			workerRefused++
		case strings.Contains(r.Data, "binary mismatch: the controller runs version "+stale+", the flow core target is "+cur):
			controllerRefused++
		}
	}
	if assigned < 4 || workerRefused == 0 || controllerRefused == 0 {
		t.Errorf("controller log: %d assignments (want at least the 4 partitions'), %d lines refusing the stale worker, %d pausing under the stale controller (want both > 0)",
			assigned, workerRefused, controllerRefused)
	}
}
