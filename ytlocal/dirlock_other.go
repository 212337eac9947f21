//go:build !unix

package ytlocal

import "os"

// lockDir is a no-op where advisory file locks are unavailable.
func lockDir(dir string) (*os.File, error) { return nil, nil }
