//go:build linux

package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytlocal/ytlocaltest"
	"github.com/ytflow/yt-flow/ytstore"
)

var deployedOp = regexp.MustCompile(`operation (\S+): 1 controller\(s\), 2 worker\(s\)`)

// TestDeployOperationLifecycle deploys a pipeline on ytlocal with a stand-in binary (a script
// that records its arguments and sleeps): the operation's jobs run the controller and the
// workers with the pipeline's path and the caller's token from the secure vault (never
// printed); a second deploy is refused while the operation runs; --replace aborts it and
// starts one running the uploaded binary, which a third deploy finds already uploaded;
// status shows the operation; reanimate resubmits an aborted one, and is refused while it runs.
func TestDeployOperationLifecycle(t *testing.T) {
	l := &lifecycle{t: t, proxy: ytlocaltest.New(t), dir: t.TempDir()}
	st, err := ytstore.Open(context.Background(), ytstore.Config{Proxy: l.proxy, Path: lifecyclePath})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, ut := range []ytstore.UserTable{
		{Path: "//home/t/input", Kind: ytstore.UserQueue, TabletCount: 1, Schema: schema.MustInfer(&struct {
			K string `yson:"k"`
		}{})},
		{Path: "//home/t/consumer", Kind: ytstore.UserConsumer, Queue: "//home/t/input"},
	} {
		if err := st.EnsureUserTable(context.Background(), ut); err != nil {
			t.Fatal(err)
		}
	}
	calls := filepath.Join(l.dir, "calls")
	bin := filepath.Join(l.dir, "fake-yt-flow")
	script := "#!/bin/sh\necho \"$YT_SECURE_VAULT_YT_TOKEN $*\" >> " + calls + "\nexec sleep 300\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	f := l.writeSpec("", 1)
	deploy := func(extra ...string) (int, string, string) {
		return l.run(append([]string{"deploy", "--proxy", l.proxy, "--spec", f, "--workers", "2", "--wait", "none", "--binary", bin}, extra...)...)
	}
	code, out, errs := deploy("--local-binary")
	m := deployedOp.FindStringSubmatch(out)
	if code != 0 || m == nil || !strings.Contains(out, bin+" (local)") {
		t.Fatalf("deploy: %d\n%s%s", code, out, errs)
	}
	first := m[1]
	waitLines := func(n int) []string {
		t.Helper()
		var lines []string
		deadline := time.Now().Add(30 * time.Second)
		for {
			b, _ := os.ReadFile(calls)
			lines = strings.Split(strings.TrimSpace(string(b)), "\n")
			if len(b) > 0 && len(lines) >= n {
				return lines
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d job calls, want %d: %q", len(lines), n, lines)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	lines := waitLines(3)
	var controllers, workers int
	for _, line := range lines {
		switch {
		case line == secretToken+" controller --path "+lifecyclePath+" --exit-when-completed --lease-timeout 30s":
			controllers++
		case line == secretToken+" worker --path "+lifecyclePath+" --exit-when-completed":
			workers++
		default:
			t.Errorf("unexpected job command line %q", line)
		}
	}
	if controllers != 1 || workers != 2 {
		t.Errorf("jobs: %d controllers, %d workers; want 1 and 2", controllers, workers)
	}

	if code, _, errs := deploy("--local-binary"); code != 1 || !strings.Contains(errs, "already runs as an operation") || !strings.Contains(errs, first) {
		t.Errorf("a second deploy: %d %q", code, errs)
	}
	l.waitStatus("operation  " + first + " running (jobs: 3 running, 0 completed, 0 failed, 0 aborted)")

	code, out, errs = deploy("--replace")
	m = deployedOp.FindStringSubmatch(out)
	if code != 0 || m == nil || !strings.Contains(out, "operation "+first+": aborted (replaced)") || !strings.Contains(out, " (uploaded)") {
		t.Fatalf("deploy --replace: %d\n%s%s", code, out, errs)
	}
	if op, err := st.Operation(context.Background(), first); err != nil || op.State != "aborted" {
		t.Errorf("the replaced operation: %+v %v", op, err)
	}
	waitLines(6) // the uploaded copy of the script runs in the new operation's jobs
	code, out, errs = deploy("--replace")
	if code != 0 || !strings.Contains(out, " (already uploaded)") {
		t.Fatalf("a third deploy: %d\n%s%s", code, out, errs)
	}
	waitLines(9) // the third operation's jobs run the script
	// reanimate is refused while the operation runs; once it is aborted, it starts the
	// recorded spec again.
	if code, _, errs := l.run("reanimate", "--proxy", l.proxy, "--path", lifecyclePath); code != 1 || !strings.Contains(errs, "already runs as an operation") {
		t.Errorf("reanimate of a running operation: %d %q", code, errs)
	}
	d, ok, err := st.Deployment(context.Background())
	if err != nil || !ok {
		t.Fatalf("deployment: %v %v", ok, err)
	}
	if err := st.AbortOperation(context.Background(), d.OperationID, "test"); err != nil {
		t.Fatal(err)
	}
	code, out, errs = l.run("reanimate", "--proxy", l.proxy, "--path", lifecyclePath)
	if code != 0 || !strings.Contains(out, "started in place of "+d.OperationID) {
		t.Fatalf("reanimate: %d\n%s%s", code, out, errs)
	}
	d, ok, err = st.Deployment(context.Background())
	waitLines(12) // the reanimated operation's jobs run the script
	if op, err := st.Operation(context.Background(), d.OperationID); err != nil || op.State != "running" || op.Running != 3 {
		t.Errorf("the reanimated operation: %+v %v", op, err)
	}
	if err != nil || !ok || d.OperationID == first || len(d.Version) != 64 || !strings.HasPrefix(d.Binary, defaultCachePath+"/yt-flow-") {
		t.Errorf("recorded deployment: %+v %v %v", d, ok, err)
	}
	if strings.Contains(fmt.Sprint(d.Spec), secretToken) {
		t.Errorf("the recorded operation spec holds the token")
	}
}

// TestDeployPlanFromVanilla: the vanilla section of the runner config sets the task counts,
// the cache path, max_failed_job_count, pool, title and the tasks' resources and environment;
// flags override the counts and the cache path.
func TestDeployPlanFromVanilla(t *testing.T) {
	text := strings.Replace(lifecycleConfig("", 1), "{", `{vanilla = {enable = %true; pool = "research";
        worker = {count = 3; memory_limit = 4096; cpu_limit = 2.5; environment = {A = "1"}}; controller = {count = 2; port_count = 2};
        cache_path = "//home/me/bin"; max_failed_job_count = 50; title = "wc"};`, 1)
	cfg, err := spec.ParseConfig([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	p, err := planDeploy(cfg, deployFlags{leaseTimeout: 10 * time.Second, workerListen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if p.workers != 3 || p.controllers != 2 || p.cachePath != "//home/me/bin" || p.maxFailedJobs != 50 || p.pool != "research" || p.title != "wc" {
		t.Errorf("plan %+v", p)
	}
	sp := p.operationSpec("//home/me/pipe", "proxy:80", "//home/me/bin/yt-flow-x", true)
	tasks := sp["tasks"].(map[string]any)
	w, c := tasks["worker"].(map[string]any), tasks["controller"].(map[string]any)
	if w["job_count"] != int64(3) || c["job_count"] != int64(2) || w["memory_limit"] == nil || w["cpu_limit"] == nil || c["port_count"] == nil {
		t.Errorf("tasks %v", tasks)
	}
	if env := w["environment"].(map[string]any); env["A"] != "1" || env["YT_PROXY"] != "proxy:80" {
		t.Errorf("worker environment %v", env)
	}
	if sp["pool"] != "research" || sp["max_failed_job_count"] != int64(50) || sp["title"] != "wc" {
		t.Errorf("spec %v", sp)
	}
	if files := w["file_paths"].([]any); len(files) != 1 || files[0] != `<file_name="yt-flow";executable=%true>//home/me/bin/yt-flow-x` {
		t.Errorf("file_paths %v", files)
	}
	p, err = planDeploy(cfg, deployFlags{workers: 5, controllers: 1, cachePath: "//tmp/other"})
	if err != nil || p.workers != 5 || p.controllers != 1 || p.cachePath != "//tmp/other" {
		t.Errorf("flags over the config: %+v %v", p, err)
	}
}
