//go:build unix

package ytlocal

import (
	"os/exec"
	"runtime"
	"syscall"
)

// spawner starts job processes from one goroutine locked to its OS thread for the
// server's life: the parent-death signal of a child (jobProcAttr) fires when the thread
// that forked it ends, so no job may be forked from a thread the Go runtime could retire.
type spawner struct {
	reqs chan spawnReq
	done chan struct{}
}

type spawnReq struct {
	cmd *exec.Cmd
	err chan error
}

func newSpawner() *spawner {
	sp := &spawner{reqs: make(chan spawnReq), done: make(chan struct{})}
	go func() {
		defer close(sp.done)
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		for r := range sp.reqs {
			r.err <- r.cmd.Start()
		}
	}()
	return sp
}

// start starts cmd on the spawner's thread.
func (sp *spawner) start(cmd *exec.Cmd) error {
	r := spawnReq{cmd: cmd, err: make(chan error, 1)}
	sp.reqs <- r
	return <-r.err
}

// close ends the spawner once every job process has been waited for.
func (sp *spawner) close() {
	close(sp.reqs)
	<-sp.done
}

// killGroup kills the process group of a job's wrapper (the wrapper leads it).
func killGroup(cmd *exec.Cmd) {
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
