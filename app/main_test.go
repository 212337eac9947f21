package app

import (
	"os"
	"testing"

	"github.com/ytflow/yt-flow/internal/chserver"
)

// TestMain removes the ClickHouse test server's helper binary that TestFlowCorpusRuns builds.
func TestMain(m *testing.M) {
	code := m.Run()
	chserver.RemoveBinary()
	os.Exit(code)
}
