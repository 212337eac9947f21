package ytlocal

import "syscall"

// jobProcAttr puts a job's wrapper in a process group of its own, which it leads, and
// has the kernel kill it when the server's process dies.
func jobProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
