package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ytflow/yt-flow/controller"
	"github.com/ytflow/yt-flow/ytstore"
)

// TestRepartitionLiveKeepsKeyOrder changes desired_partition_count of the
// keyed count computation twice while the pipeline runs (2 → 4 → 3, through
// `yt-flow start` with a new dynamic spec); each time the worker running most
// count jobs is frozen just before the change until its jobs have moved.
// The exact output and the key order are checked; an order violation needs
// a retiring partition with undelivered sink outputs at the change, a narrow
// window here, so the ordering rule itself is proven by the controller's
// TestRepartitionNewPartitionsWaitForOldRanges and TestSimulation. The output must be exact, and the
// per-word counts must arrive in the output queue in increasing order: the
// outputs of a retiring partition are delivered before the new partition
// covering the same keys produces any (strict distribution ordering).
func TestRepartitionLiveKeepsKeyOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e test")
	}
	total := messages(30000)
	c := NewCluster(t)
	wc := NewWordCount(t, c, "repartition", WordCountOptions{Messages: total, Words: 300, Tablets: 2, CountPartitions: 2, Seed: 11})
	wc.StartPipeline(t)
	wc.Controller(t, "controller")
	workers := map[string]*Proc{}
	for i := range 3 {
		name := fmt.Sprintf("worker-%d", i)
		workers[name] = wc.Worker(t, name)
	}
	counted := func() int {
		n := 0
		for _, v := range wc.Counts(t) {
			n += int(v)
		}
		return n
	}
	for _, step := range []struct{ at, partitions int }{{total / 5, 4}, {total / 2, 3}} {
		Eventually(t, 4*time.Minute, func() (bool, string) {
			n := counted()
			return n >= step.at || wc.State() == "completed", fmt.Sprintf("counted %d of %d", n, step.at)
		})
		if wc.State() == "completed" {
			t.Fatalf("the pipeline completed before the partition count changed to %d; use a larger E2E_MESSAGES", step.partitions)
		}
		// Freeze the worker running most count jobs first: the outboxes of its
		// partitions stay undelivered until its jobs move elsewhere, so outputs
		// of new partitions started too early would overtake them.
		frozen := busiestCountWorker(t, wc)
		if p := workers[frozen]; p != nil && !p.Exited() {
			t.Logf("SIGSTOP %s", frozen)
			if err := p.Freeze(); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("desired_partition_count of count -> %d at %d counted", step.partitions, counted())
		setCountPartitions(t, wc, step.partitions)
		if p := workers[frozen]; p != nil && !p.Exited() {
			Eventually(t, 2*time.Minute, func() (bool, string) {
				jobs, err := wc.Store.Jobs(t.Context())
				if err != nil {
					return false, err.Error()
				}
				for _, j := range jobs {
					if j.WorkerID == frozen {
						return false, "job " + j.JobID + " still on the frozen worker"
					}
				}
				return true, ""
			})
			t.Logf("SIGCONT %s", frozen)
			if err := p.Resume(); err != nil {
				t.Fatal(err)
			}
			delete(workers, frozen)
			name := frozen + "r"
			workers[name] = wc.Worker(t, name)
		}
	}
	Eventually(t, 8*time.Minute, func() (bool, string) {
		s := wc.State()
		return s == "completed", fmt.Sprintf("pipeline state %q, counted %d of %d", s, counted(), total)
	})
	wc.CheckExactlyOnce(t)
	checkKeyOrder(t, wc)

	st := Start(t, "status", "status", "--proxy", c.Proxy, "--path", wc.Path)
	if err, ok := st.Wait(time.Minute); !ok || err != nil {
		t.Fatalf("yt-flow status: %v (exited %v)\n%s", err, ok, st.Log())
	}
	for _, want := range []string{"system watermark  ", "computations (2)", "  count ", "streams (3)", "  lines   queue " + wc.Root + "/input  split  "} {
		if !strings.Contains(st.Log(), want) {
			t.Errorf("yt-flow status lacks %q:\n%s", want, st.Log())
		}
	}
	t.Logf("yt-flow status:\n%s", st.Log())

	logs, err := wc.Store.ControllerLogs(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	retired := 0
	for _, r := range logs {
		if strings.Contains(r.Data, "retiring: repartitioned") && strings.HasPrefix(strings.TrimPrefix(r.Data, "partition "), "count/") {
			retired++
		}
	}
	if retired != 2+4 {
		t.Errorf("controller log shows %d count partitions retired, want 6 (2 at the first change, 4 at the second)", retired)
	}
}

// busiestCountWorker returns the worker running most jobs of count.
func busiestCountWorker(t *testing.T, wc *WordCount) string {
	t.Helper()
	jobs, err := wc.Store.Jobs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	best := ""
	for _, j := range jobs {
		if j.ComputationID != "count" {
			continue
		}
		n[j.WorkerID]++
		if best == "" || n[j.WorkerID] > n[best] || n[j.WorkerID] == n[best] && j.WorkerID < best {
			best = j.WorkerID
		}
	}
	return best
}

// setCountPartitions rewrites the runner config with a new
// desired_partition_count for count and runs `yt-flow start` again.
func setCountPartitions(t *testing.T, wc *WordCount, n int) {
	t.Helper()
	data, err := os.ReadFile(wc.SpecFile)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i := strings.Index(text, "count = {batch_duration = 100; parameters = {desired_partition_count = ")
	if i < 0 {
		t.Fatalf("runner config has no count dynamic spec:\n%s", text)
	}
	j := i + strings.Index(text[i:], "}}")
	text = text[:i] + fmt.Sprintf("count = {batch_duration = 100; parameters = {desired_partition_count = %d", n) + text[j:]
	if err := os.WriteFile(wc.SpecFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	p := Start(t, fmt.Sprintf("start-%d", n), "start", "--proxy", wc.C.Proxy, "--spec", wc.SpecFile)
	if err, ok := p.Wait(time.Minute); !ok || err != nil {
		t.Fatalf("yt-flow start with %d partitions: %v (exited %v)\n%s", n, err, ok, p.Log())
	}
	if !strings.Contains(p.Log(), "dynamic spec version") || !strings.Contains(p.Log(), "(updated)") {
		t.Fatalf("yt-flow start did not update the dynamic spec:\n%s", p.Log())
	}
}

// checkKeyOrder asserts that in the output queue (one tablet, read in row
// order) the counts of every word strictly increase.
func checkKeyOrder(t *testing.T, wc *WordCount) {
	t.Helper()
	rows, err := wc.Store.SelectRows(t.Context(), fmt.Sprintf("[$tablet_index], [$row_index], word, count FROM [%s/output]", wc.Root))
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(rows, func(a, b int) bool {
		ta, tb := toInt(rows[a]["$tablet_index"]), toInt(rows[b]["$tablet_index"])
		if ta != tb {
			return ta < tb
		}
		return toInt(rows[a]["$row_index"]) < toInt(rows[b]["$row_index"])
	})
	last := map[string]int64{}
	var bad []string
	for _, r := range rows {
		w, n := r["word"].(string), toInt(r["count"])
		if n <= last[w] {
			bad = append(bad, fmt.Sprintf("%s: count %d after %d (row %d)", w, n, last[w], toInt(r["$row_index"])))
		}
		last[w] = n
	}
	if len(bad) > 0 {
		if len(bad) > 20 {
			bad = append(bad[:20], fmt.Sprintf("… and %d more", len(bad)-20))
		}
		t.Fatalf("per-key order violated in the output queue:\n%s", strings.Join(bad, "\n"))
	}
	t.Logf("per-key order holds over %d output rows of %d words", len(rows), len(last))
}

// TestDedupTablesStayBounded runs the word count with an unbounded source
// in rounds and checks that the dedup indexes hold the in-flight window, not
// all history: after each round has been counted, input_messages plus
// compact_input_messages hold at most two rounds of rows, although every
// round adds one row per message. The controller runs in process so that
// the test can set a short GC margin; workers are the real binary. The
// output stays exact.
func TestDedupTablesStayBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e test")
	}
	t.Run("compact", func(t *testing.T) { dedupBounded(t, true) })
	t.Run("full", func(t *testing.T) { dedupBounded(t, false) })
}

func dedupBounded(t *testing.T, compactIndex bool) {
	perRound := messages(4000)
	const rounds = 6
	const margin = 2 * time.Second
	c := NewCluster(t)
	wc := NewWordCount(t, c, "dedupgc", WordCountOptions{Messages: perRound, Words: 500, Tablets: 2, CountPartitions: 2, Seed: 5})
	data, err := os.ReadFile(wc.SpecFile)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(data), "finite = %true", "finite = %false", 1)
	if !compactIndex {
		text = strings.Replace(text, `processing_function = "CountWords";`, `processing_function = "CountWords"; use_compact_input_messages = %false;`, 1)
	}
	if err := os.WriteFile(wc.SpecFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	wc.StartPipeline(t)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := controller.Run(ctx, controller.Config{
			Proxy: c.Proxy, Token: os.Getenv("YT_TOKEN"), Path: wc.Path, Period: 200 * time.Millisecond,
			SessionTimeout: 3 * time.Second, LeaseTimeout: 10 * time.Second, DedupGCMargin: margin, DedupGCPeriod: 200 * time.Millisecond,
		})
		if err != nil {
			t.Errorf("controller: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	for i := range 2 {
		wc.Worker(t, fmt.Sprintf("worker-%d", i))
	}

	rng := rand.New(rand.NewPCG(99, 1))
	expectedTotal := perRound
	var sizes []int64
	for round := 1; round <= rounds; round++ {
		if round > 1 {
			rows := make([]map[string]any, 0, perRound)
			for i := range perRound {
				word := fmt.Sprintf("w%04d", rng.IntN(500))
				wc.Expected[word]++
				rows = append(rows, map[string]any{"text": word, "$tablet_index": int64(i % 2)})
			}
			if err := wc.Store.InsertRows(ctx, wc.Root+"/input", rows); err != nil {
				t.Fatal(err)
			}
			expectedTotal += perRound
		}
		Eventually(t, 4*time.Minute, func() (bool, string) {
			n := 0
			for _, v := range wc.Counts(t) {
				n += int(v)
			}
			return n == expectedTotal, fmt.Sprintf("round %d: counted %d of %d", round, n, expectedTotal)
		})
		counted := ytstore.Now()
		full, compact, err := wc.Store.DedupRowCounts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if (compactIndex && compact == 0) || (!compactIndex && full == 0) {
			t.Fatalf("round %d: the expected dedup index is empty (input_messages %d, compact_input_messages %d)", round, full, compact)
		}
		sizes = append(sizes, full+compact)
		t.Logf("round %d: %d messages counted in total, dedup rows %d (input_messages %d, compact_input_messages %d)", round, expectedTotal, full+compact, full, compact)
		if full+compact > int64(2*perRound) {
			t.Errorf("round %d: dedup tables hold %d rows after %d messages; the in-flight window is at most %d", round, full+compact, expectedTotal, 2*perRound)
		}
		// Let the watermark pass this round (the pipeline is idle now), so
		// that the next round starts with its rows collectable.
		Eventually(t, 2*time.Minute, func() (bool, string) {
			a, err := wc.Store.Attributes(ctx)
			if err != nil {
				return false, err.Error()
			}
			return a.SystemWatermark > counted+uint64(margin.Microseconds()), fmt.Sprintf("@system_watermark %d, waiting for %d", a.SystemWatermark, counted+uint64(margin.Microseconds()))
		})
	}
	Eventually(t, 2*time.Minute, func() (bool, string) {
		full, compact, err := wc.Store.DedupRowCounts(ctx)
		if err != nil {
			return false, err.Error()
		}
		return full+compact == 0, fmt.Sprintf("%d dedup rows left after the watermark passed every round", full+compact)
	})
	t.Logf("dedup rows after each round: %v (%d messages per round, %d in total)", sizes, perRound, expectedTotal)
	Eventually(t, 2*time.Minute, func() (bool, string) {
		maxCount := map[string]int64{}
		for _, p := range wc.Output(t) {
			maxCount[p[0].(string)] = max(maxCount[p[0].(string)], p[1].(int64))
		}
		for w, n := range wc.Expected {
			if maxCount[w] != n {
				return false, fmt.Sprintf("output of %s reaches %d of %d", w, maxCount[w], n)
			}
		}
		return true, ""
	})
	wc.CheckExactlyOnce(t)
}
