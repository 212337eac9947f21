package e2e

import (
	"fmt"
	"testing"
	"time"
)

// TestCrossClusterQueues runs the word count on one `yt-flow local` (cluster B: the pipeline,
// its internal tables and the counts table) with its queues on another (cluster A, named
// "remote" in the runner config's clusters map): the source reads A's input queue through
// A's consumer, the async sink writes A's output queue through A's producer. While it runs a
// worker is killed with SIGKILL and another started; every word is counted exactly once in
// the table on B and reaches its exact count, each pair once, in the queue on A.
func TestCrossClusterQueues(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e test")
	}
	b := NewCluster(t)
	if b.Real() {
		t.Skip("needs two clusters: runs two yt-flow local servers")
	}
	a := NewCluster(t)
	wc := NewWordCount(t, b, "xcluster", WordCountOptions{Messages: 4000, Words: 50, Tablets: 2, CountPartitions: 2, Seed: 7, MaxRowsPerBatch: 20, Remote: a})
	wc.StartPipeline(t)
	wc.Controller(t, "controller")
	w0 := wc.Worker(t, "worker-0")
	wc.Worker(t, "worker-1")
	Eventually(t, 2*time.Minute, func() (bool, string) {
		n := len(wc.Counts(t))
		return n > 0, fmt.Sprintf("%d words counted", n)
	})
	if s := wc.State(); s != "working" {
		t.Fatalf("pipeline %s before the kill: it would test nothing", s)
	}
	w0.Kill()
	wc.Worker(t, "worker-2")
	Eventually(t, 4*time.Minute, func() (bool, string) {
		s := wc.State()
		return s == "completed", fmt.Sprintf("pipeline state %q", s)
	})
	wc.CheckExactlyOnce(t)
	if got := len(wc.Output(t)); got == 0 {
		t.Fatal("the output queue on the remote cluster is empty")
	}
}
