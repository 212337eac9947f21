package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ytflow/yt-flow/internal/chserver"
)

// TestMain removes the binaries the tests built (yt-flow, the ClickHouse helper) when they end.
func TestMain(m *testing.M) {
	code := m.Run()
	chserver.RemoveBinary()
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	if staleBinPath != "" {
		_ = os.RemoveAll(filepath.Dir(staleBinPath))
	}
	os.Exit(code)
}
