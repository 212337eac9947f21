package torture

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is a child process whose stdout and stderr go to one log file. It runs in its own
// process group so that a signal to the parent's group (Ctrl-C) does not reach it; the
// owner stops it with Kill.
type Proc struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd

	mu     sync.Mutex
	exited bool
	err    error
	done   chan struct{}
}

// Start runs bin with args as the child process name, its output in logPath. The child
// gets the parent's environment without YT_TOKEN and YT_TOKEN_PATH: torture's embedded
// servers need no token, so none is sent to them. It gets SIGKILL when its parent dies.
func Start(name, logPath, bin string, args ...string) (*Proc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "YT_TOKEN=") && !strings.HasPrefix(kv, "YT_TOKEN_PATH=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		f.Close()
		p.mu.Lock()
		p.exited, p.err = true, err
		p.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Kill sends SIGKILL (a frozen process dies too) and waits for the process to exit.
func (p *Proc) Kill() {
	if p.Exited() {
		return
	}
	_ = syscall.Kill(p.Pid(), syscall.SIGKILL)
	<-p.done
}

// Freeze stops the process with SIGSTOP.
func (p *Proc) Freeze() error { return syscall.Kill(p.Pid(), syscall.SIGSTOP) }

// Resume continues a frozen process with SIGCONT.
func (p *Proc) Resume() error { return syscall.Kill(p.Pid(), syscall.SIGCONT) }

// Exited tells whether the process has ended.
func (p *Proc) Exited() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

// Log returns what the process has printed so far.
func (p *Proc) Log() string {
	b, _ := os.ReadFile(p.LogPath)
	return string(b)
}

var addrRE = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)

// WaitAddr polls the process log until it prints a 127.0.0.1:PORT address and returns it;
// it fails when the process exits first or ctx ends.
func (p *Proc) WaitAddr(ctx context.Context) (string, error) {
	for {
		sc := bufio.NewScanner(bytes.NewReader([]byte(p.Log())))
		for sc.Scan() {
			if m := addrRE.FindString(sc.Text()); m != "" {
				return m, nil
			}
		}
		if p.Exited() {
			return "", fmt.Errorf("%s exited before printing its address (log %s)", p.Name, p.LogPath)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%s printed no address: %w", p.Name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
