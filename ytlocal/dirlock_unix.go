//go:build unix

package ytlocal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an exclusive advisory lock on DataDir/LOCK so that two servers never
// share a data directory. The lock dies with the process (also on kill -9).
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("ytlocal: open lock file in %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("ytlocal: data dir %s is in use by another ytlocal server", dir)
		}
		return nil, fmt.Errorf("ytlocal: lock data dir %s: %w", dir, err)
	}
	return f, nil
}
