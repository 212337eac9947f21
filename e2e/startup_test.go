package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestHandStartedControllerAssignsOnce starts `yt-flow controller` first and the workers by
// hand after it: worker-a, and worker-b a second later, well after the controller has seen
// worker-a alone (it cycles every 100 ms here). The first assignment waits for more workers
// (`--worker-settle 5s` here; 1 s by default), so both workers get jobs in it and no job is
// rebalanced — moved under a new lease — afterwards. Without the settle rule worker-a takes
// every job at its first cycle and half of them move once worker-b appears.
func TestHandStartedControllerAssignsOnce(t *testing.T) {
	c := NewCluster(t)
	wc := NewWordCount(t, c, "handstart", WordCountOptions{Messages: 4000, Words: 100, Tablets: 2, CountPartitions: 2})
	wc.StartPipeline(t)
	Start(t, "controller", "controller", "--proxy", c.Proxy, "--path", wc.Path, "--period", "100ms", "--worker-settle", "5s")
	// The controller leads and has finished a cycle (it publishes the state) before any
	// worker exists.
	Eventually(t, time.Minute, func() (bool, string) {
		s := wc.State()
		return s == "working", fmt.Sprintf("pipeline state %q", s)
	})
	ctx := context.Background()
	wc.Worker(t, "worker-a")
	Eventually(t, time.Minute, func() (bool, string) {
		ws, err := wc.Store.Workers(ctx)
		return err == nil && len(ws) == 1, fmt.Sprintf("workers %v (%v)", ws, err)
	})
	time.Sleep(time.Second) // ten controller cycles that see worker-a alone
	wc.Worker(t, "worker-b")
	Eventually(t, 2*time.Minute, func() (bool, string) {
		got := wc.Counts(t)
		for w, n := range wc.Expected {
			if got[w] != n {
				return false, fmt.Sprintf("%s: %d of %d", w, got[w], n)
			}
		}
		return true, ""
	})
	// The controller's events name every assignment (the jobs table empties once the finite
	// pipeline completes).
	events := wc.ControllerEvents(t)
	assigned := map[string]int{}
	for _, e := range events {
		if strings.Contains(e, "rebalanced") {
			t.Errorf("a job moved after the first assignment: %s", e)
		}
		for _, w := range []string{"worker-a", "worker-b"} {
			if strings.Contains(e, "assigned to worker "+w) {
				assigned[w]++
			}
		}
	}
	if assigned["worker-a"] == 0 || assigned["worker-b"] == 0 {
		t.Errorf("jobs assigned per worker %v: both workers should get jobs in the first assignment; events %q", assigned, events)
	}
	// The async sink delivers after the commits that filled the table: the pipeline is
	// completed once it has delivered everything.
	Eventually(t, 2*time.Minute, func() (bool, string) {
		s := wc.State()
		return s == "completed", fmt.Sprintf("pipeline state %q", s)
	})
	wc.CheckExactlyOnce(t)
}
