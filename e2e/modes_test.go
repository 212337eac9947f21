package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestAtLeastOnceConsistentUnderKills runs the word count with the count computation in
// processing_mode at_least_once_consistent while workers are killed with SIGKILL.
//
// Without input deduplication a message that was delivered to the counter again (its
// sender retransmits after a restart) is processed again, so a word's count may exceed
// its number of input lines. What the mode still guarantees is consistency: the state
// change, the sink rows and the outputs of one epoch are committed in one transaction, so
//   - no input is lost: every word's table count is at least its input count;
//   - the table holds exactly the number of times the word was processed, which is the
//     state's count, and the output queue agrees with it: the highest count delivered for
//     a word equals its table count, no delivered count exceeds it, and no (word, count)
//     pair is delivered twice (each committed epoch raises the count once and its output
//     is delivered once through the producer).
func TestAtLeastOnceConsistentUnderKills(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e fault test")
	}
	sd := seed(t)
	rng := rand.New(rand.NewPCG(sd, 2))
	c := NewCluster(t)
	total := messages(20000)
	wc := NewWordCount(t, c, "alo", WordCountOptions{Messages: total, Words: 500, Tablets: 2, CountPartitions: 4,
		ProcessingMode: "at_least_once_consistent", Seed: sd})
	wc.StartPipeline(t)
	wc.Controller(t, "controller")
	workers := map[string]*Proc{}
	next := 0
	addWorker := func() {
		name := fmt.Sprintf("worker-%d", next)
		next++
		workers[name] = wc.Worker(t, name)
	}
	for range 3 {
		addWorker()
	}
	processed := func() int64 {
		var n int64
		for _, v := range wc.Counts(t) {
			n += v
		}
		return n
	}
	supervise := func() {
		for name, p := range workers {
			if p.Exited() {
				t.Logf("%s exited; starting a replacement", name)
				delete(workers, name)
				addWorker()
			}
		}
	}
	for i := range 3 {
		atLeast := int64(total * (i + 1) / 5)
		Eventually(t, 2*time.Minute, func() (bool, string) {
			supervise()
			n := processed()
			return n >= atLeast || wc.State() == "completed", fmt.Sprintf("processed %d of %d", n, atLeast)
		})
		names := make([]string, 0, len(workers))
		for n := range workers {
			names = append(names, n)
		}
		slices.Sort(names)
		name := names[rng.IntN(len(names))]
		t.Logf("kill -9 %s (pid %d) at %d processed", name, workers[name].Pid(), processed())
		workers[name].Kill()
		delete(workers, name)
		addWorker()
	}
	Eventually(t, 3*time.Minute, func() (bool, string) {
		supervise()
		s := wc.State()
		return s == "completed", fmt.Sprintf("pipeline state %q, processed %d of %d inputs", s, processed(), total)
	})

	table := wc.Counts(t)
	byWord := outputByWord(wc.Output(t))
	var bad []string
	var extra int64
	for word, n := range wc.Expected {
		got := table[word]
		switch {
		case got < n:
			bad = append(bad, fmt.Sprintf("%s: table %d < input %d (lost input)", word, got, n))
		default:
			extra += got - n
		}
	}
	for word, got := range table {
		if _, ok := wc.Expected[word]; !ok {
			bad = append(bad, fmt.Sprintf("%s: unexpected word in table (count %d)", word, got))
		}
		out := byWord[word]
		if len(out) == 0 {
			bad = append(bad, fmt.Sprintf("%s: table %d but nothing in the output queue", word, got))
			continue
		}
		if top := out[len(out)-1]; top != got {
			bad = append(bad, fmt.Sprintf("%s: output reaches %d, table holds %d", word, top, got))
		}
	}
	for word := range byWord {
		if _, ok := table[word]; !ok {
			bad = append(bad, fmt.Sprintf("%s: in the output queue but not in the table", word))
		}
	}
	bad = append(bad, duplicatedPairs(byWord)...)
	failIf(t, "at_least_once_consistent: state and outputs disagree", bad)
	t.Logf("%d inputs processed %d times in all (%d re-processed after restarts)", total, int64(total)+extra, extra)
}

// TestAtMostOnceStrategyDrops runs the word count with at_most_once_strategy on the output
// queue sink and a total_queue_bytes_limit that holds only a couple of rows. Rows that do
// not fit are dropped without an error and counted in the workers' best_effort_dropped;
// the output queue never holds a (word, count) pair twice, no delivered count exceeds the
// word's final count, and the sorted table (a synchronous sink, written in the epoch
// transaction) is still exact.
func TestAtMostOnceStrategyDrops(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e test")
	}
	sd := seed(t)
	c := NewCluster(t)
	total := messages(20000)
	wc := NewWordCount(t, c, "amo", WordCountOptions{Messages: total, Words: 500, Tablets: 2, CountPartitions: 2,
		AtMostOnceBytes: 100, Seed: sd})
	wc.StartPipeline(t)
	wc.Controller(t, "controller")
	var addrs []string
	for i := range 2 {
		addrs = append(addrs, WorkerAddr(t, wc.Worker(t, fmt.Sprintf("worker-%d", i))))
	}
	Eventually(t, 3*time.Minute, func() (bool, string) {
		s := wc.State()
		return s == "completed", fmt.Sprintf("pipeline state %q", s)
	})

	// Workers keep the counters of the jobs they ran after the jobs end.
	var dropped int64
	countJobs := 0
	keys, err := wc.Store.TransportSecret(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, addr := range addrs {
		stats, err := WorkerStats(addr, keys.Current)
		if err != nil {
			t.Fatal(err)
		}
		for id, s := range stats {
			if s.ComputationID == "count" {
				countJobs++
				dropped += s.BestEffortDropped
			} else if s.BestEffortDropped != 0 {
				t.Errorf("job %s of %s without an at-most-once sink dropped %d rows", id, s.ComputationID, s.BestEffortDropped)
			}
		}
	}
	if countJobs == 0 {
		t.Fatalf("no worker reports a job of computation count on /stats")
	}

	table := wc.Counts(t)
	pairs := wc.Output(t)
	byWord := outputByWord(pairs)
	var bad []string
	for word, n := range wc.Expected {
		if table[word] != n {
			bad = append(bad, fmt.Sprintf("%s: table %d, want %d", word, table[word], n))
		}
	}
	for word := range table {
		if _, ok := wc.Expected[word]; !ok {
			bad = append(bad, fmt.Sprintf("%s: unexpected word in table", word))
		}
	}
	for word, counts := range byWord {
		if top := counts[len(counts)-1]; top > wc.Expected[word] {
			bad = append(bad, fmt.Sprintf("%s: output count %d exceeds the input count %d", word, top, wc.Expected[word]))
		}
	}
	bad = append(bad, duplicatedPairs(byWord)...)
	failIf(t, "at_most_once_strategy", bad)
	if dropped == 0 {
		t.Errorf("no output row was dropped with total_queue_bytes_limit = 100 (%d rows delivered)", len(pairs))
	}
	if len(pairs) == 0 {
		t.Errorf("the at-most-once sink delivered nothing (%d dropped)", dropped)
	}
	t.Logf("at-most-once sink: %d rows delivered, %d dropped (counted by %d count jobs)", len(pairs), dropped, countJobs)
}
