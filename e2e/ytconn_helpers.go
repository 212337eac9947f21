package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ytflow/yt-flow/ytstore"
)

// Run is a pipeline of the connector tests: a runner config in a file, started with
// `yt-flow start`, run by controller and worker processes the test kills and replaces.
type Run struct {
	C        *Cluster
	Root     string
	Path     string
	SpecFile string
	Store    *ytstore.Store

	t       *testing.T
	workers map[string]*Proc
	ctrl    *Proc
	next    int
	// Kills counts the processes killed.
	Kills int
}

// NewRun writes config (a runner config whose pipeline is ROOT/pipeline; ROOT is replaced
// by the test's Cypress folder) and returns the run; prepare creates the user tables first.
func NewRun(t *testing.T, c *Cluster, name, config string, prepare func(r *Run)) *Run {
	t.Helper()
	root := c.Root(name)
	r := &Run{C: c, Root: root, Path: root + "/pipeline", t: t, workers: map[string]*Proc{}}
	r.Store = c.Store(r.Path)
	if prepare != nil {
		prepare(r)
	}
	r.SpecFile = filepath.Join(t.TempDir(), "pipeline.yson")
	if err := os.WriteFile(r.SpecFile, []byte(replaceRoot(config, root)), 0o644); err != nil {
		t.Fatal(err)
	}
	return r
}

func replaceRoot(s, root string) string {
	out := []byte{}
	for i := 0; i < len(s); i++ {
		if i+4 <= len(s) && s[i:i+4] == "ROOT" {
			out = append(out, root...)
			i += 3
			continue
		}
		out = append(out, s[i])
	}
	return string(out)
}

// Start starts the pipeline, a controller and n workers.
func (r *Run) Start(n int) {
	r.t.Helper()
	w := &WordCount{C: r.C, Path: r.Path, SpecFile: r.SpecFile, Store: r.Store}
	w.StartPipeline(r.t)
	r.ctrl = w.Controller(r.t, "controller-0")
	for range n {
		r.addWorker()
	}
}

func (r *Run) addWorker() {
	name := fmt.Sprintf("worker-%d", r.next)
	r.next++
	r.workers[name] = Start(r.t, name, "worker", "--proxy", r.C.Proxy, "--path", r.Path, "--id", name)
}

// supervise replaces workers that exited.
func (r *Run) supervise() {
	for name, p := range r.workers {
		if p.Exited() {
			delete(r.workers, name)
			r.addWorker()
		}
	}
}

// KillWorker kills the worker started first of those alive (SIGKILL) and starts another.
func (r *Run) KillWorker() {
	r.t.Helper()
	var name string
	for n := range r.workers {
		if name == "" || n < name {
			name = n
		}
	}
	r.t.Logf("kill -9 %s (pid %d)", name, r.workers[name].Pid())
	r.workers[name].Kill()
	delete(r.workers, name)
	r.Kills++
	r.addWorker()
}

// KillController kills the controller (SIGKILL) and starts another.
func (r *Run) KillController() {
	r.t.Helper()
	r.t.Logf("kill -9 controller (pid %d)", r.ctrl.Pid())
	r.ctrl.Kill()
	r.Kills++
	w := &WordCount{C: r.C, Path: r.Path}
	r.ctrl = w.Controller(r.t, fmt.Sprintf("controller-%d", r.Kills))
}

// State reads @pipeline_state.
func (r *Run) State() string {
	return (&WordCount{Store: r.Store}).State()
}

// WaitFor polls cond (supervising the workers) until it holds.
func (r *Run) WaitFor(timeout time.Duration, cond func() (bool, string)) {
	r.t.Helper()
	Eventually(r.t, timeout, func() (bool, string) {
		r.supervise()
		return cond()
	})
}

// WaitCompleted waits until the pipeline completed.
func (r *Run) WaitCompleted(timeout time.Duration) {
	r.t.Helper()
	r.WaitFor(timeout, func() (bool, string) {
		s := r.State()
		return s == "completed", fmt.Sprintf("pipeline state %q", s)
	})
}
