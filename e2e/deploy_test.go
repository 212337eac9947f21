package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/yt"
	"go.ytsaurus.tech/yt/go/yt/ythttp"
)

// ytClient is an SDK client of the test's cluster.
func ytClient(t *testing.T, c *Cluster) yt.Client {
	t.Helper()
	yc, err := ythttp.NewClient(&yt.Config{Proxy: c.Proxy, Token: os.Getenv("YT_TOKEN")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(yc.Stop)
	return yc
}

// jobsByState lists the jobs of an operation as task → state → job ids.
func jobsByState(t *testing.T, yc yt.Client, id yt.OperationID) map[string]map[string][]yt.JobID {
	t.Helper()
	r, err := yc.ListJobs(context.Background(), id, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string][]yt.JobID{}
	for _, j := range r.Jobs {
		if out[j.TaskName] == nil {
			out[j.TaskName] = map[string][]yt.JobID{}
		}
		out[j.TaskName][j.State] = append(out[j.TaskName][j.State], j.ID)
	}
	return out
}

// jobPid finds the process of a job running `yt-flow <role>`: the process whose
// environment has YT_JOB_ID=id and whose command line is the role's (0 if none).
func jobPid(id yt.JobID, role string) int {
	entries, _ := os.ReadDir("/proc")
	want := "YT_JOB_ID=" + id.String()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		environ, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(environ, []byte(want+"\x00")) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		args := strings.Split(string(cmdline), "\x00")
		if len(args) > 1 && strings.HasSuffix(args[0], "yt-flow") && args[1] == role {
			return pid
		}
	}
	return 0
}

// processAlive reports whether pid exists and is not a zombie.
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// abortJob calls abort_job (which the SDK does not speak) over HTTP.
func abortJob(t *testing.T, proxy string, id yt.JobID) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+proxy+"/api/v4/abort_job", bytes.NewBufferString(fmt.Sprintf("{job_id=%q}", id.String())))
	if err != nil {
		t.Fatal(err)
	}
	if tok := os.Getenv("YT_TOKEN"); tok != "" {
		req.Header.Set("Authorization", "OAuth "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("abort_job %s: HTTP %d: %s", id, resp.StatusCode, resp.Header.Get("X-YT-Error"))
	}
}

// logJobStderrs logs the stderr of up to three failed jobs of an operation.
func logJobStderrs(t *testing.T, yc yt.Client, id yt.OperationID) {
	failed := "failed"
	r, err := yc.ListJobs(context.Background(), id, &yt.ListJobsOptions{JobState: (*yt.JobState)(&failed)})
	if err != nil {
		t.Logf("list_jobs: %v", err)
		return
	}
	for i, j := range r.Jobs {
		if i == 3 {
			break
		}
		stderr, err := yc.GetJobStderr(context.Background(), id, j.ID, nil)
		t.Logf("--- stderr of failed %s job %s (%v) ---\n%s", j.TaskName, j.ID, err, tail(string(stderr), 2000))
	}
}

// operationLine is deploy's line naming the operation it started.
var operationLine = regexp.MustCompile(`operation ([0-9a-f]+-[0-9a-f]+-[0-9a-f]+-[0-9a-f]+): [0-9]+ controller`)

// TestDeployWordCount deploys the word count with `yt-flow deploy` (the binary uploaded to
// Cypress, a vanilla operation with a controller task and a worker task of two jobs) and
// waits for working. Its three jobs show in list_jobs. While the pipeline runs, one worker
// job is aborted (abort_job), the other worker's process and the controller's are killed
// with SIGKILL: the server replaces the three jobs, the pipeline completes with every word
// counted exactly once, and the operation then completes (every job exits 0 once the
// pipeline is completed). `yt-flow status` shows the operation.
func TestDeployWordCount(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e test")
	}
	c := NewCluster(t)
	if c.Real() {
		t.Skip("kills job processes on this host")
	}
	wc := NewWordCount(t, c, "deploy", WordCountOptions{Messages: 4000, Words: 50, Tablets: 2, CountPartitions: 2, Seed: 35, MaxRowsPerBatch: 20})
	deploy := Start(t, "deploy", "deploy", "--proxy", c.Proxy, "--spec", wc.SpecFile, "--workers", "2", "--lease-timeout", "10s", "--binary", Binary(t))
	if err, ok := deploy.Wait(3 * time.Minute); !ok || err != nil {
		t.Fatalf("yt-flow deploy: %v (exited %v)\n%s", err, ok, deploy.Log())
	}
	out := deploy.Log()
	m := operationLine.FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "(uploaded)") || !strings.Contains(out, "pipeline "+wc.Path+": working") {
		t.Fatalf("deploy output lacks the upload, the operation id or the working state:\n%s", out)
	}
	g, err := guid.ParseString(m[1])
	if err != nil {
		t.Fatal(err)
	}
	opID := yt.OperationID(g)
	yc := ytClient(t, c)
	t.Cleanup(func() {
		if t.Failed() {
			logJobStderrs(t, yc, opID)
		}
		_ = yc.AbortOperation(context.Background(), opID, nil)
	})

	jobs := jobsByState(t, yc, opID)
	workers, controllers := jobs["worker"]["running"], jobs["controller"]["running"]
	if len(workers) != 2 || len(controllers) != 1 {
		t.Fatalf("list_jobs: %v, want 2 running workers and 1 running controller", jobs)
	}
	var workerPid, controllerPid int
	Eventually(t, time.Minute, func() (bool, string) {
		workerPid, controllerPid = jobPid(workers[1], "worker"), jobPid(controllers[0], "controller")
		return workerPid > 0 && controllerPid > 0, fmt.Sprintf("job processes: worker %d, controller %d", workerPid, controllerPid)
	})
	if s := wc.State(); s != "working" {
		t.Fatalf("pipeline %s before the faults: they would test nothing", s)
	}
	abortJob(t, c.Proxy, workers[0])
	if err := syscall.Kill(workerPid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(controllerPid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}

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
	jobs = jobsByState(t, yc, opID)
	if n := len(jobs["worker"]["aborted"]); n != 1 {
		t.Errorf("aborted worker jobs: %d, want 1 (%v)", n, jobs)
	}
	if n := len(jobs["worker"]["failed"]) + len(jobs["controller"]["failed"]); n != 2 {
		t.Errorf("failed jobs: %d, want 2: the killed worker and controller (%v)", n, jobs)
	}
	if w, ctl := len(jobs["worker"]["completed"]), len(jobs["controller"]["completed"]); w != 2 || ctl != 1 {
		t.Errorf("completed jobs: %d workers, %d controllers; want 2 and 1 (%v)", w, ctl, jobs)
	}

	status := Start(t, "status", "status", "--proxy", c.Proxy, "--path", wc.Path)
	if err, ok := status.Wait(time.Minute); !ok || err != nil {
		t.Fatalf("yt-flow status: %v (exited %v)\n%s", err, ok, status.Log())
	}
	if want := "operation  " + opID.String() + " completed"; !strings.Contains(status.Log(), want) {
		t.Errorf("yt-flow status lacks %q:\n%s", want, status.Log())
	}
}

// TestLocalKilledLeavesNoJobProcess: when `yt-flow local` dies by SIGKILL, no process of
// its jobs outlives it — neither a job's command nor a process that command started.
func TestLocalKilledLeavesNoJobProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e test")
	}
	c := NewCluster(t)
	if c.Real() {
		t.Skip("kills the embedded server")
	}
	yc := ytClient(t, c)
	dir := t.TempDir()
	id, err := yc.StartOperation(context.Background(), yt.OperationVanilla, map[string]any{"tasks": map[string]any{"sleeper": map[string]any{
		"job_count":   2,
		"command":     `echo $$ > "$DIR/sh.$YT_JOB_COOKIE"; sleep 300 & echo $! > "$DIR/sleep.$YT_JOB_COOKIE"; wait`,
		"environment": map[string]any{"DIR": dir},
	}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	Eventually(t, 30*time.Second, func() (bool, string) {
		pids = pids[:0]
		for _, f := range []string{"sh.0", "sh.1", "sleep.0", "sleep.1"} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil || pid == 0 {
				return false, "no pid in " + f
			}
			pids = append(pids, pid)
		}
		return true, ""
	})
	for _, pid := range pids {
		if !processAlive(pid) {
			t.Fatalf("job process %d is not running before the kill (operation %s)", pid, id)
		}
	}
	c.KillLocal()
	Eventually(t, 30*time.Second, func() (bool, string) {
		for _, pid := range pids {
			if processAlive(pid) {
				return false, fmt.Sprintf("job process %d outlives the server", pid)
			}
		}
		return true, ""
	})
}

// TestDeployStopAbortOperation deploys an unbounded word count whose two workers listen on
// the wildcard address and publish 127.0.0.1 (--worker-listen, --worker-advertise-host: as
// on a cluster spreading jobs over hosts), lets it count every input word, then runs
// `yt-flow stop --abort-operation`: the pipeline drains and stops, the operation is aborted,
// and its jobs' processes are gone.
func TestDeployStopAbortOperation(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e test")
	}
	c := NewCluster(t)
	if c.Real() {
		t.Skip("looks for job processes on this host")
	}
	wc := NewWordCount(t, c, "deploystop", WordCountOptions{Messages: 500, Words: 20, Tablets: 1, CountPartitions: 1, Seed: 5, Unbounded: true})
	deploy := Start(t, "deploy", "deploy", "--proxy", c.Proxy, "--spec", wc.SpecFile, "--lease-timeout", "10s", "--binary", Binary(t),
		"--workers", "2", "--worker-listen", "0.0.0.0:0", "--worker-advertise-host", "127.0.0.1")
	if err, ok := deploy.Wait(3 * time.Minute); !ok || err != nil {
		t.Fatalf("yt-flow deploy: %v (exited %v)\n%s", err, ok, deploy.Log())
	}
	m := operationLine.FindStringSubmatch(deploy.Log())
	if m == nil {
		t.Fatalf("no operation id in:\n%s", deploy.Log())
	}
	g, err := guid.ParseString(m[1])
	if err != nil {
		t.Fatal(err)
	}
	opID := yt.OperationID(g)
	yc := ytClient(t, c)
	first := opID
	t.Cleanup(func() { _ = yc.AbortOperation(context.Background(), first, nil) })
	jobs := jobsByState(t, yc, opID)
	var pids []int
	Eventually(t, time.Minute, func() (bool, string) {
		pids = pids[:0]
		for task, byState := range jobs {
			for _, id := range byState["running"] {
				if pid := jobPid(id, task); pid > 0 {
					pids = append(pids, pid)
				}
			}
		}
		return len(pids) == 3, fmt.Sprintf("%d job processes found, want 3", len(pids))
	})
	Eventually(t, 2*time.Minute, func() (bool, string) {
		got := wc.Counts(t)
		for word, n := range wc.Expected {
			if got[word] != n {
				return false, fmt.Sprintf("%s: %d of %d", word, got[word], n)
			}
		}
		return true, ""
	})
	status := Start(t, "status", "status", "--proxy", c.Proxy, "--path", wc.Path)
	if err, ok := status.Wait(time.Minute); !ok || err != nil {
		t.Fatalf("yt-flow status: %v (exited %v)\n%s", err, ok, status.Log())
	}
	if out := status.Log(); strings.Contains(out, "0.0.0.0:") || strings.Count(out, "  127.0.0.1:") != 2 {
		t.Fatalf("the workers do not publish 127.0.0.1:PORT:\n%s", out)
	}

	// A release: the new operation starts, the pipeline drains and stops, the old operation
	// is aborted, and the pipeline works again under the new one.
	again := Start(t, "redeploy", "deploy", "--proxy", c.Proxy, "--spec", wc.SpecFile, "--lease-timeout", "10s", "--binary", Binary(t),
		"--workers", "2", "--worker-listen", "0.0.0.0:0", "--worker-advertise-host", "127.0.0.1", "--replace")
	if err, ok := again.Wait(3 * time.Minute); !ok || err != nil {
		t.Fatalf("yt-flow deploy --replace: %v (exited %v)\n%s", err, ok, again.Log())
	}
	out := again.Log()
	m = operationLine.FindStringSubmatch(out)
	if m == nil || m[1] == opID.String() || !strings.Contains(out, "pipeline "+wc.Path+": stopped") ||
		!strings.Contains(out, "operation "+opID.String()+": aborted (replaced)") || !strings.Contains(out, "pipeline "+wc.Path+": working") {
		t.Fatalf("deploy --replace: no new operation, drain, abort of %s or working state:\n%s", opID, out)
	}
	if st, err := yc.GetOperation(context.Background(), opID, nil); err != nil || st.State != yt.StateAborted {
		t.Fatalf("the replaced operation: %v %v", st, err)
	}
	Eventually(t, 30*time.Second, func() (bool, string) {
		for _, pid := range pids {
			if processAlive(pid) {
				return false, fmt.Sprintf("job process %d of the replaced operation still runs", pid)
			}
		}
		return true, ""
	})
	if g, err = guid.ParseString(m[1]); err != nil {
		t.Fatal(err)
	}
	opID = yt.OperationID(g)
	jobs = jobsByState(t, yc, opID)
	Eventually(t, time.Minute, func() (bool, string) {
		pids = pids[:0]
		for task, byState := range jobs {
			for _, id := range byState["running"] {
				if pid := jobPid(id, task); pid > 0 {
					pids = append(pids, pid)
				}
			}
		}
		return len(pids) == 3, fmt.Sprintf("%d job processes of the new operation found, want 3", len(pids))
	})
	stop := Start(t, "stop", "stop", "--proxy", c.Proxy, "--path", wc.Path, "--abort-operation", "--timeout", "2m")
	if err, ok := stop.Wait(3 * time.Minute); !ok || err != nil {
		t.Fatalf("yt-flow stop --abort-operation: %v (exited %v)\n%s", err, ok, stop.Log())
	}
	if want := "operation " + opID.String() + ": aborted"; !strings.Contains(stop.Log(), want) || !strings.Contains(stop.Log(), ": stopped") {
		t.Fatalf("stop output lacks %q or the stopped state:\n%s", want, stop.Log())
	}
	st, err := yc.GetOperation(context.Background(), opID, nil)
	if err != nil || st.State != yt.StateAborted {
		t.Fatalf("operation after stop --abort-operation: %v %v", st, err)
	}
	Eventually(t, 30*time.Second, func() (bool, string) {
		for _, pid := range pids {
			if processAlive(pid) {
				return false, fmt.Sprintf("job process %d still runs", pid)
			}
		}
		return true, ""
	})
	wc.CheckExactlyOnce(t)
}
