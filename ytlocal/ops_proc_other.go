//go:build !unix

package ytlocal

import (
	"errors"
	"os/exec"
	"syscall"
)

type spawner struct{}

func newSpawner() *spawner { return &spawner{} }

func (sp *spawner) start(*exec.Cmd) error {
	return errors.New("ytlocal runs job processes only on Unix hosts")
}

func (sp *spawner) close() {}

func killGroup(*exec.Cmd) {}

func jobProcAttr() *syscall.SysProcAttr { return nil }
