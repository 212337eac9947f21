package app

import (
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

func TestProgressRateLine(t *testing.T) {
	var r progressRate
	t0 := time.Unix(1000, 0)
	if got := r.line(sourceProgress{}, t0); got != "" {
		t.Errorf("no source reports its ends: %q", got)
	}
	if got, want := r.line(sourceProgress{read: 0, unread: 1000, ok: true}, t0), "read 0 rows, 1000 unread"; got != want {
		t.Errorf("first reading: %q, want %q", got, want)
	}
	if got, want := r.line(sourceProgress{read: 100, unread: 900, ok: true}, t0.Add(time.Second)), "read 100 rows, 900 unread, 100 rows/s, ETA 9s"; got != want {
		t.Errorf("second reading: %q, want %q", got, want)
	}
	if got, want := r.line(sourceProgress{read: 1000, unread: 0, ok: true}, t0.Add(2*time.Second)), "read 1000 rows, 0 unread, 340 rows/s"; got != want {
		t.Errorf("done: %q, want %q (smoothed rate, no ETA)", got, want)
	}
}

// TestRunPrintsSourceProgress: yt-flow run on a finite pipeline prints the rows its sources
// read and still hold in its progress lines (not a terminal: one line each period).
func TestRunPrintsSourceProgress(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole example")
	}
	spec := filepath.Join("..", "examples", "word_count", "pipeline.yson")
	code, stdout, stderr := runCommand(t, 2*time.Minute, "run", "--spec", spec, "--data-dir", t.TempDir(), "--progress", "1ms")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !regexp.MustCompile(`(?m)^\[ *[0-9.]+s\] read [0-9]+ rows, [0-9]+ unread`).MatchString(stdout) {
		t.Errorf("no progress line with the source rows read and unread:\n%s", stdout)
	}
}
