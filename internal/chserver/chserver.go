// Package chserver starts ClickHouse servers for tests: each is a separate helper process
// (command chserver, built once per test process) that loads chDB's libchdb.so and serves
// the native and HTTP protocols on random loopback ports over a data directory of the test.
// The library comes from the npm package @chdb/lib-linux-x64-gnu; LibEnv names the variable
// holding its path. Without it a test is skipped, except under CI=true, where it fails.
//
// A server is supervised: when its process dies by itself it is started again at once on its
// data directory and its ports, the way a service manager restarts a crashed ClickHouse.
// chDB's server aborts now and then when a client dies in the middle of an INSERT (a worker
// killed by a fault test); what it committed survives the restart. Kill and Restart stop it
// for real.
package chserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ytflow/yt-flow/internal/chdb"
)

// LibEnv is the environment variable holding the path of libchdb.so.
const LibEnv = chdb.LibEnv

// Install is how a developer gets the library, for skip messages and the README.
const Install = chdb.Install

// Lib returns the path of libchdb.so. When it is not set or not there, it skips t with the
// way to get it, or fails t under CI=true.
func Lib(t testing.TB) string {
	t.Helper()
	lib := os.Getenv(LibEnv)
	why := ""
	if lib == "" {
		why = LibEnv + " is not set"
	} else if _, err := os.Stat(lib); err != nil {
		why = fmt.Sprintf("%s=%s: %v", LibEnv, lib, err)
	}
	if why == "" {
		return lib
	}
	msg := fmt.Sprintf("no ClickHouse server for this test: %s (get it: %s)", why, Install)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Server is one running helper process.
type Server struct {
	// TCPAddr and HTTPAddr are the native and HTTP protocol addresses ("127.0.0.1:port").
	TCPAddr, HTTPAddr string
	// Dir is the server's data directory; it outlives Kill, so Start on it again restarts
	// the server with its tables.
	Dir string

	lib     string
	cluster string // a cluster of this one server the configuration defines, or ""
	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	// kills counts Kill calls: a supervisor restarts the server only while no Kill came
	// after the start of the process it watches.
	kills    int
	restarts int // processes the supervisor restarted after they died by themselves
}

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// build builds command chserver once per test process.
func build() (string, error) {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "chserver-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "chserver")
		out, err := exec.Command("go", "build", "-o", binary, "github.com/ytflow/yt-flow/internal/chserver/cmd/chserver").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("build chserver: %w\n%s", err, out)
		}
	})
	return binary, buildErr
}

// RemoveBinary removes the helper binary this process built (call it from TestMain).
func RemoveBinary() {
	if binary != "" {
		_ = os.RemoveAll(filepath.Dir(binary))
	}
}

// Start starts a server on a new data directory of t and stops it (kill -9, by pid) when t
// ends, whatever its outcome.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartDir(t, t.TempDir())
}

// StartCluster starts a server as Start does whose configuration defines cluster, one shard
// of the server itself (for Distributed tables).
func StartCluster(t testing.TB, cluster string) *Server {
	t.Helper()
	return start(t, &Server{Dir: t.TempDir(), cluster: cluster})
}

// StartDir starts a server on data directory dir (a restart when a server ran on it before).
func StartDir(t testing.TB, dir string) *Server {
	t.Helper()
	return start(t, &Server{Dir: dir})
}

func start(t testing.TB, s *Server) *Server {
	t.Helper()
	s.lib = Lib(t)
	t.Cleanup(s.Kill) // after the log below (cleanups run last first)
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(s.Dir, "chserver.log"))
			t.Logf("--- log of the ClickHouse server in %s (exited: %v) ---\n%s", s.Dir, s.exited(), tail(string(b), 4000))
		}
	})
	var err error
	for range 3 { // a port taken between picking and binding: pick again
		if err = s.start(); err == nil {
			return s
		}
	}
	t.Fatalf("start a ClickHouse server: %v", err)
	return nil
}

// exited tells whether the server process ended (or was never started).
func (s *Server) exited() bool {
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	if done == nil {
		return true
	}
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// Pid is the helper process's id.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

func (s *Server) start() error {
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	return s.startOn(ports, -1)
}

// Restarts reports how many times the supervisor started the server again after its process
// died by itself.
func (s *Server) Restarts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

// supervise waits for the process started after kills Kill calls to end; unless a Kill came
// first, it starts the server again on the same ports (retrying while the old process's
// ports are still taken) and notes the restart in the server's log.
func (s *Server) supervise(kills int, done <-chan struct{}, ports []int) {
	<-done
	for attempt := 0; ; attempt++ {
		s.mu.Lock()
		current := s.kills == kills
		s.mu.Unlock()
		if !current {
			return
		}
		s.logLine(fmt.Sprintf("chserver: the server process ended by itself; restarting it on its data (attempt %d)", attempt+1))
		err := s.startOn(ports, kills)
		if err == nil {
			s.mu.Lock()
			s.restarts++
			s.mu.Unlock()
			return
		}
		if errors.Is(err, errSuperseded) {
			return
		}
		if attempt >= 40 {
			s.logLine("chserver: restart given up: " + err.Error())
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// errSuperseded is startOn's answer when a Kill or another start came while it started.
var errSuperseded = errors.New("chserver: the server was killed or started again meanwhile")

// logLine appends line to the server's log.
func (s *Server) logLine(line string) {
	f, err := os.OpenFile(filepath.Join(s.Dir, "chserver.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = fmt.Fprintln(f, line)
}

// startOn starts the process on ports. prev is the Kill count a supervisor restarts under (-1
// for a start of the test's own): when a Kill came meanwhile, the new process is killed and
// errSuperseded returned.
func (s *Server) startOn(ports []int, prev int) error {
	bin, err := build()
	if err != nil {
		return err
	}
	logPath := filepath.Join(s.Dir, "chserver.log")
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	args := []string{"-lib", s.lib, "-path", s.Dir, "-tcp-port", fmt.Sprint(ports[0]), "-http-port", fmt.Sprint(ports[1])}
	if s.cluster != "" {
		config := filepath.Join(s.Dir, "chserver-config.xml")
		xml := fmt.Sprintf("<clickhouse><remote_servers><%s><shard><replica><host>127.0.0.1</host><port>%d</port></replica></shard></%s></remote_servers></clickhouse>\n", s.cluster, ports[0], s.cluster)
		if err := os.WriteFile(config, []byte(xml), 0o644); err != nil {
			return err
		}
		args = append(args, "-config", config)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = log, log
	// The server dies with the test process even when the test process is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.mu.Lock()
	if prev >= 0 && s.kills != prev {
		s.mu.Unlock()
		_ = cmd.Process.Kill() // by pid; a no-op once the process is reaped
		<-done
		return errSuperseded
	}
	kills := s.kills
	s.cmd, s.done = cmd, done
	s.TCPAddr = fmt.Sprintf("127.0.0.1:%d", ports[0])
	s.HTTPAddr = fmt.Sprintf("127.0.0.1:%d", ports[1])
	s.mu.Unlock()
	if err := s.waitReady(done, 90*time.Second); err != nil {
		s.mu.Lock()
		if s.cmd == cmd {
			s.cmd = nil
		}
		s.mu.Unlock()
		_ = cmd.Process.Kill()
		<-done
		b, _ := os.ReadFile(logPath)
		return fmt.Errorf("%w; log %s ends:\n%s", err, logPath, tail(string(b), 2000))
	}
	go s.supervise(kills, done, ports)
	return nil
}

// waitReady polls the HTTP /ping and the native port until both answer.
func (s *Server) waitReady(done <-chan struct{}, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		if s.ping(ctx) == nil {
			c, err := net.DialTimeout("tcp", s.TCPAddr, time.Second)
			if err == nil {
				_ = c.Close()
				return nil
			}
		}
		select {
		case <-done:
			return errors.New("the ClickHouse server exited while starting")
		case <-ctx.Done():
			return fmt.Errorf("the ClickHouse server did not answer within %v", timeout)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (s *Server) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.HTTPAddr+"/ping", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(b), "Ok.") {
		return fmt.Errorf("ping: %s %q", resp.Status, b)
	}
	return nil
}

// Kill kills the server with SIGKILL, by its pid, and waits for the process to end; the
// supervisor does not start it again. It is idempotent; the data directory stays.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.kills++
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Kill() // SIGKILL by pid; a no-op once the process has been reaped (no stray signal to a reused pid)
	<-done
}

// Restart kills the server and starts it again on the same data directory, on new ports.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Kill()
	var err error
	for range 3 {
		if err = s.start(); err == nil {
			return
		}
	}
	t.Fatalf("restart the ClickHouse server: %v", err)
}

// freePorts returns n loopback ports free at the time of the call.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
