// Package e2e holds yt-flow's end-to-end and fault tests: the real yt-flow binary runs as
// separate processes (ytlocal, controllers, workers) that the tests start, freeze and kill
// for real. Against a real YTsaurus cluster the same tests run when YT_PROXY is set; they
// then use that proxy instead of starting ytlocal.
//
// This file has the process harness shared by the tests: building the binary once, starting
// processes with their output captured in temp files, stopping every process by its pid when
// the test ends (even when it fails), and a poll-until-deadline helper.
package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary builds ./cmd/yt-flow once per test process and returns the path of the executable.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "yt-flow-e2e-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "yt-flow")
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Dir(filepath.Dir(file))
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/yt-flow")
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ./cmd/yt-flow: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// Proc is a child process started by a test. Its stdout and stderr go to one log file.
type Proc struct {
	Name    string
	Cmd     *exec.Cmd
	LogPath string

	mu     sync.Mutex
	exited bool
	err    error
	done   chan struct{}
}

// Start runs the yt-flow binary with args as a child process named name. The process is
// killed (SIGKILL, by pid) in t.Cleanup unless it has already exited.
func Start(t testing.TB, name string, args ...string) *Proc {
	t.Helper()
	return StartBinary(t, Binary(t), name, args...)
}

// StartBinary is Start with another executable.
func StartBinary(t testing.TB, bin, name string, args ...string) *Proc {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.Env = os.Environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	p := &Proc{Name: name, Cmd: cmd, LogPath: logPath, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		f.Close()
		p.mu.Lock()
		p.exited, p.err = true, err
		p.mu.Unlock()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("--- log of %s (pid %d) ---\n%s", name, cmd.Process.Pid, tail(p.Log(), 4000))
		}
	})
	return p
}

// Pid returns the process id.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Kill sends SIGKILL to the process (a SIGSTOPped process dies too) and waits for it to exit.
func (p *Proc) Kill() {
	if p.Exited() {
		return
	}
	_ = syscall.Kill(p.Pid(), syscall.SIGKILL)
	<-p.done
}

// Signal sends sig to the process.
func (p *Proc) Signal(sig syscall.Signal) error { return syscall.Kill(p.Pid(), sig) }

// Freeze stops the process with SIGSTOP; Resume continues it with SIGCONT.
func (p *Proc) Freeze() error { return p.Signal(syscall.SIGSTOP) }

// Resume continues a frozen process.
func (p *Proc) Resume() error { return p.Signal(syscall.SIGCONT) }

// Exited tells whether the process has ended.
func (p *Proc) Exited() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

// Wait waits up to timeout for the process to exit and returns its exit error.
func (p *Proc) Wait(timeout time.Duration) (error, bool) {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.err, true
	case <-time.After(timeout):
		return nil, false
	}
}

// Log returns what the process has printed so far.
func (p *Proc) Log() string {
	b, _ := os.ReadFile(p.LogPath)
	return string(b)
}

var addrRE = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)

// WaitAddr polls the process log until it prints a 127.0.0.1:PORT address and returns it.
func (p *Proc) WaitAddr(t testing.TB, timeout time.Duration) string {
	t.Helper()
	var addr string
	Eventually(t, timeout, func() (bool, string) {
		if p.Exited() {
			t.Fatalf("%s exited before printing its address:\n%s", p.Name, p.Log())
		}
		sc := bufio.NewScanner(bytes.NewReader([]byte(p.Log())))
		for sc.Scan() {
			if m := addrRE.FindString(sc.Text()); m != "" {
				addr = m
				return true, ""
			}
		}
		return false, "no address in log yet"
	})
	return addr
}

// Eventually polls cond every 50ms until it returns true or the deadline passes; then the test
// fails with cond's last explanation. It never sleeps longer than needed.
func Eventually(t testing.TB, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var why string
	for {
		var ok bool
		ok, why = cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v: %s", timeout, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := strings.IndexByte(s[len(s)-n:], '\n')
	return "…" + s[len(s)-n+i+1:]
}
