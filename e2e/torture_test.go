package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
)

var faultLineRE = regexp.MustCompile(`(?m)^\[\s*[0-9.]+s\] fault [0-9]+: (kill|freeze|failover|store): `)

// injectedFaults counts the "fault N: KIND: …" lines of torture's output per kind.
func injectedFaults(out string) map[string]int {
	n := map[string]int{}
	for _, m := range faultLineRE.FindAllStringSubmatch(out, -1) {
		n[m[1]]++
	}
	return n
}

// runTorture runs `BIN torture ARGS…` as a process (stopped by pid at the end of the test)
// and returns its output and exit code.
func runTorture(t *testing.T, bin string, args ...string) (string, int) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "torture.log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"torture"}, args...)...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := false
	t.Cleanup(func() {
		if !exited { // the test failed before the process ended: stop it by pid
			_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
		}
	})
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
		exited = true
	case <-time.After(5 * time.Minute):
		// Its children die with it (parent-death signal); the whole group goes anyway.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		exited = true
		f.Close()
		out, _ := os.ReadFile(logPath)
		t.Fatalf("yt-flow torture did not end within 5 minutes:\n%s", out)
	}
	f.Close()
	out, _ := os.ReadFile(logPath)
	code := 0
	if ee, ok := werr.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if werr != nil {
		t.Fatal(werr)
	}
	return string(out), code
}

// TestTortureBuiltinPasses runs `yt-flow torture` on its built-in pipeline for 16s with
// every fault kind and a fault every ~1.5s: it must print PASS and exit 0, every kind of fault
// must have been injected (counted from its "fault N: KIND:" lines), the fault-free reference
// must hold one output row per input row (the built-in count emits one per message), and the
// verdict must count exactly that many rows found and none lost or duplicated.
func TestTortureBuiltinPasses(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e fault test")
	}
	sd := seed(t)
	out, code := runTorture(t, Binary(t), "--duration", "16s", "--fault-interval", "1500ms", "--faults", "all",
		"--rate", "100", "--seed", strconv.FormatUint(sd, 10), "--data-dir", filepath.Join(t.TempDir(), "torture"))
	t.Logf("yt-flow torture:\n%s", out)
	if code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
	if !regexp.MustCompile(`(?m)^PASS: `).MatchString(out) {
		t.Fatal("no PASS line")
	}
	faults := injectedFaults(out)
	for _, k := range []string{"kill", "freeze", "failover", "store"} {
		if faults[k] == 0 {
			t.Errorf("no %s fault injected (faults: %v)", k, faults)
		}
	}
	const rows = 1600 // --rate 100 × --duration 16s
	if !regexp.MustCompile(fmt.Sprintf(`reference run \(no faults\): %d rows processed .*count/out %d rows, count/table 50 rows`, rows, rows)).MatchString(out) {
		t.Errorf("the reference run did not output one row per input row (%d) and 50 keys", rows)
	}
	if !regexp.MustCompile(fmt.Sprintf(`sink count/out \(queue //home/torture/output\): expected %d, found %d, lost 0, duplicated 0, unexpected 0, reordered 0`, rows, rows)).MatchString(out) {
		t.Error("the verdict of sink count/out is not exact")
	}
}

// TestTortureBrokenPipelineFails builds a user's binary whose count keeps its counts in
// process memory instead of flow state (e2e/testdata/memcount) and tortures it with worker
// kills: a killed worker's successor counts from zero again, so torture must print FAIL,
// exit 1 and count lost and duplicated rows.
func TestTortureBrokenPipelineFails(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e fault test")
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(file))
	bin := filepath.Join(t.TempDir(), "memcount")
	build := exec.Command("go", "build", "-o", bin, "./e2e/testdata/memcount")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./e2e/testdata/memcount: %v\n%s", err, out)
	}
	sd := seed(t)
	out, code := runTorture(t, bin, "--spec", filepath.Join(root, "e2e", "testdata", "memcount", "pipeline.yson"),
		"--duration", "8s", "--fault-interval", "1500ms", "--faults", "kill", "--seed", strconv.FormatUint(sd, 10),
		"--data-dir", filepath.Join(t.TempDir(), "torture"))
	t.Logf("torture of memcount:\n%s", out)
	if code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
	if !regexp.MustCompile(`(?m)^FAIL: the output under faults differs`).MatchString(out) {
		t.Fatal("no FAIL verdict about the output")
	}
	if n := injectedFaults(out)["kill"]; n == 0 {
		t.Fatal("no kill injected")
	}
	m := regexp.MustCompile(`sink count/out \(queue //home/memcount/output\): expected ([0-9]+), found [0-9]+, lost ([0-9]+), duplicated ([0-9]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatal("no verdict line for sink count/out")
	}
	lost, _ := strconv.Atoi(m[2])
	dup, _ := strconv.Atoi(m[3])
	if lost == 0 || dup == 0 {
		t.Errorf("count/out: lost %d, duplicated %d; want both above 0 (counts restarted from zero)", lost, dup)
	}
}
