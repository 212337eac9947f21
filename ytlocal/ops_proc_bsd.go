//go:build unix && !linux

package ytlocal

import "syscall"

// jobProcAttr puts a job's wrapper in a process group of its own, which it leads. Without
// a parent-death signal the wrapper's watchdog alone ends the job when the server dies.
func jobProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
