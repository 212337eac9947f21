package bench

import (
	"fmt"
	"os"
	"testing"

	"github.com/ytflow/yt-flow/internal/gctune"
)

// gcSettings is what gctune set for this process (see TestMain).
var gcSettings gctune.Settings

// TestMain runs the benchmarks with the collector set as the yt-flow binary sets it
// (internal/gctune): they stand in for `yt-flow run`, which hosts server, controller and
// workers in one process, and the raw baseline shares the process and the setting. GOGC and
// GOMEMLIMIT in the environment win, as they do for the binary.
func TestMain(m *testing.M) {
	gcSettings = gctune.Apply(os.Getenv)
	os.Exit(m.Run())
}

// gcDescription says how the collector runs, for the benchmark logs.
func gcDescription() string {
	percent := "GOGC=" + os.Getenv("GOGC")
	if gcSettings.Percent != 0 {
		percent = fmt.Sprintf("percent %d (yt-flow's)", gcSettings.Percent)
	}
	limit := "GOMEMLIMIT=" + os.Getenv("GOMEMLIMIT")
	switch {
	case gcSettings.MemoryLimit != 0:
		limit = fmt.Sprintf("soft limit %d MiB", gcSettings.MemoryLimit>>20)
	case os.Getenv("GOMEMLIMIT") == "":
		limit = "no memory limit"
	}
	return percent + ", " + limit
}
