package e2e

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/ytql"
	"github.com/ytflow/yt-flow/ytstore"
)

// rejectParams is the count computation's dynamic spec that makes CountWordsRejecting fail on
// words: failure_policy and processing_function_parameters.
func rejectParams(policy string, words ...string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = strconv.Quote(w)
	}
	s := "processing_function_parameters = {reject = [" + strings.Join(quoted, "; ") + "]}"
	if policy != "" {
		s += "; failure_policy = " + policy
	}
	return s
}

// run runs the binary with args to its end and returns its output; it fails the test unless
// the command exits 0.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	p := Start(t, name, args...)
	err, ok := p.Wait(time.Minute)
	if !ok || err != nil {
		t.Fatalf("yt-flow %s: %v (exited %v)\n%s", strings.Join(args, " "), err, ok, p.Log())
	}
	return p.Log()
}

var versionRE = regexp.MustCompile(`version\s*=\s*([0-9]+)`)

// setRejected stores the count computation's processing_function_parameters with `yt-flow
// set-pipeline-dynamic-spec` and returns the new dynamic spec version.
func (w *WordCount) setRejected(t *testing.T, words ...string) int64 {
	t.Helper()
	file := filepath.Join(t.TempDir(), "params.yson")
	body := strings.TrimPrefix(rejectParams("", words...), "processing_function_parameters = ")
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out := run(t, "set-dynamic-spec", "set-pipeline-dynamic-spec", "--proxy", w.C.Proxy, "--file", file,
		"--spec-path", "/computations/count/processing_function_parameters", w.Path)
	m := versionRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("set-pipeline-dynamic-spec printed no version: %s", out)
	}
	v, _ := strconv.ParseInt(m[1], 10, 64)
	return v
}

// waitCountJobsOn waits until every count job of the layout runs with @dynamic_spec_version
// at least version, as its worker's /stats says; live returns the live workers by name.
func (w *WordCount) waitCountJobsOn(t *testing.T, version int64, live func() map[string]*Proc) {
	t.Helper()
	keys, err := w.Store.TransportSecret(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	addrs := map[string]string{}
	Eventually(t, 2*time.Minute, func() (bool, string) {
		workers := live()
		jobs, err := w.Store.Jobs(context.Background())
		if err != nil {
			return false, err.Error()
		}
		n := 0
		for _, j := range jobs {
			if j.ComputationID != "count" {
				continue
			}
			n++
			p := workers[j.WorkerID]
			if p == nil || p.Exited() {
				return false, "count job " + j.JobID + " is on worker " + j.WorkerID + ", not a live one"
			}
			if addrs[j.WorkerID] == "" {
				addrs[j.WorkerID] = WorkerAddr(t, p)
			}
			stats, err := WorkerStats(addrs[j.WorkerID], keys.Current)
			if err != nil {
				return false, err.Error()
			}
			if st := stats[j.JobID]; !st.Running || st.DynamicSpecVersion < version {
				return false, fmt.Sprintf("count job %s runs with dynamic spec version %d, want %d", j.JobID, st.DynamicSpecVersion, version)
			}
		}
		return n > 0, "no count job in the layout"
	})
}

// outputProgress sums, over words, the largest count the output queue delivered.
func (w *WordCount) outputProgress(t *testing.T) int64 {
	var n int64
	for _, counts := range outputByWord(w.Output(t)) {
		n += counts[len(counts)-1]
	}
	return n
}

// total sums a word → count map.
func total(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// deadLetterWords reads dead_letters: the word of each letter's payload, sorted, and the
// letters.
func (w *WordCount) deadLetterWords(t *testing.T) ([]string, []ytstore.DeadLetterRow) {
	t.Helper()
	letters, err := w.Store.DeadLetters(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	words := make([]string, 0, len(letters))
	for _, l := range letters {
		var p map[string]any
		if err := yson.Unmarshal(l.Payload, &p); err != nil {
			t.Fatalf("letter %s: payload: %v", l.MessageID, err)
		}
		word, _ := p["word"].(string)
		words = append(words, word)
	}
	slices.Sort(words)
	return words, letters
}

// TestPoisonMessagesUnderFaults runs queue → split → keyed count (CountWordsRejecting, policy
// dead_letter) over 20,000 messages, 3 of which the count function rejects, fed in thirds: a
// worker is killed after the first, and a worker is frozen past its Lease and resumed after
// the second. The output then holds the other 19,997 exactly once (table and queue), and
// dead_letters the 3 exactly once. A dynamic spec change makes the function accept them
// (`set-pipeline-dynamic-spec`, applied by the running jobs), `dead-letters replay` brings the
// output to 20,000 exactly once and empties dead_letters.
func TestPoisonMessagesUnderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e fault test")
	}
	sd := seed(t)
	rng := rand.New(rand.NewPCG(sd, 2))
	c := NewCluster(t)
	n := messages(20000)
	poison := []string{"poison1", "poison2", "poison3"}
	inject := map[int]string{n / 6: poison[0], n / 2: poison[1], n * 5 / 6: poison[2]}
	wc := NewWordCount(t, c, "poison", WordCountOptions{Messages: n, Words: 1000, Tablets: 2, CountPartitions: 2, Seed: sd,
		MaxRowsPerBatch: 100, Inject: inject, CountFunction: "CountWordsRejecting",
		CountDynamic: rejectParams("{mode = dead_letter; max_attempts = 2}", poison...), Unbounded: true, Deferred: true})
	wc.StartPipeline(t)
	_ = wc.Controller(t, "controller")
	workers := map[string]*Proc{}
	next := 0
	addWorker := func() {
		name := fmt.Sprintf("worker-%d", next)
		next++
		workers[name] = wc.Worker(t, name)
	}
	addWorker()
	addWorker()
	supervise := func() {
		for name, p := range workers {
			if p.Exited() {
				t.Logf("%s exited; starting a replacement", name)
				delete(workers, name)
				addWorker()
			}
		}
	}
	randomWorker := func() (string, *Proc) {
		names := slices.Sorted(maps.Keys(workers))
		name := names[rng.IntN(len(names))]
		return name, workers[name]
	}
	progress := func() int64 { return total(wc.Counts(t)) }
	waitProgress := func(atLeast int64) {
		Eventually(t, 3*time.Minute, func() (bool, string) {
			supervise()
			p := progress()
			return p >= atLeast, fmt.Sprintf("counted %d of %d", p, atLeast)
		})
	}
	without := maps.Clone(wc.Expected)
	for _, w := range poison {
		delete(without, w)
	}

	// First third, then kill -9 a worker while it is counted.
	wc.Feed(t, n/3)
	waitProgress(int64(n / 6))
	name, p := randomWorker()
	t.Logf("kill -9 %s (pid %d) at %d counted", name, p.Pid(), progress())
	p.Kill()
	delete(workers, name)
	addWorker()

	// Second third, then freeze a worker past its Lease and resume it.
	wc.Feed(t, n/3)
	waitProgress(int64(n / 2))
	zname, zombie := randomWorker()
	t.Logf("SIGSTOP %s (pid %d) at %d counted", zname, zombie.Pid(), progress())
	freezeUntilFenced(t, wc.Store, zname, zombie, func() {
		delete(workers, zname)
		addWorker()
	})
	t.Logf("SIGCONT %s", zname)
	if err := zombie.Resume(); err != nil {
		t.Fatal(err)
	}
	workers[zname] = zombie // it may register again, or exit (supervise replaces it)

	// The rest: 19,997 counted, 3 set aside.
	if left := wc.Feed(t, n); left != 0 {
		t.Fatalf("%d rows left to feed", left)
	}
	want := total(without)
	Eventually(t, 4*time.Minute, func() (bool, string) {
		supervise()
		words, _ := wc.deadLetterWords(t)
		p, out := progress(), wc.outputProgress(t)
		return p >= want && out >= want && len(words) >= 3, fmt.Sprintf("counted %d, output %d of %d; %d dead letters", p, out, want, len(words))
	})
	wc.CheckExactlyOnceOf(t, without)
	words, letters := wc.deadLetterWords(t)
	if !slices.Equal(words, poison) {
		t.Fatalf("dead_letters holds %q, want %q each once", words, poison)
	}
	for _, l := range letters {
		if l.ComputationID != "count" || l.StreamID != "words" || !strings.Contains(l.Error, "is rejected") || l.Attempts < 2 {
			t.Errorf("letter %+v", l)
		}
	}
	list := run(t, "dead-letters-list", "dead-letters", "list", "--proxy", wc.C.Proxy, "--path", wc.Path)
	if !strings.Contains(list, "3 dead letters") {
		t.Errorf("dead-letters list:\n%s", list)
	}
	for _, w := range poison {
		lines := 0
		for _, l := range strings.Split(list, "\n") {
			if strings.Contains(l, `"`+w+`"`) {
				lines++
			}
		}
		if lines != 1 {
			t.Errorf("dead-letters list names %s on %d lines:\n%s", w, lines, list)
		}
	}
	if m := leaseLostRE.FindString(zombie.Log()); m != "" {
		t.Logf("zombie %s after SIGCONT: %s", zname, m)
	}

	// Accept them, then replay: 20,000 exactly once, no letter left.
	version := wc.setRejected(t)
	wc.waitCountJobsOn(t, version, func() map[string]*Proc { supervise(); return workers })
	out := run(t, "dead-letters-replay", "dead-letters", "replay", "--all", "--proxy", wc.C.Proxy, "--path", wc.Path)
	if !strings.Contains(out, "replayed 3 dead letters") {
		t.Fatalf("dead-letters replay: %s", out)
	}
	want = total(wc.Expected)
	Eventually(t, 2*time.Minute, func() (bool, string) {
		supervise()
		p, out := progress(), wc.outputProgress(t)
		return p >= want && out >= want, fmt.Sprintf("counted %d, output %d of %d", p, out, want)
	})
	wc.CheckExactlyOnce(t)
	if words, _ := wc.deadLetterWords(t); len(words) != 0 {
		t.Fatalf("dead_letters after replay: %q", words)
	}
	msgs, timers, err := wc.Store.LoadReplays(context.Background(), "count", 0, 0)
	if err != nil || len(msgs)+len(timers) != 0 {
		t.Fatalf("replay partition after replay: %d messages, %d timers (%v)", len(msgs), len(timers), err)
	}
}

// TestPoisonMessageRetryStallsOnePartition runs the same pipeline with the default
// failure_policy (retry) over 2,000 messages, one of which the count function rejects: the
// count partition owning the rejected word stalls (retrying its epoch) while the other one
// counts all its words; `yt-flow status` and the controller log name the message and the
// error. The input is sized below the inbox limit (10,000 per job; at most 2,000 messages
// wait for the stalled partition) and the outbox limit (100,000), so back-pressure does not
// stall the rest. Nothing committed is lost: once a dynamic spec change accepts the word,
// every count is exact.
func TestPoisonMessageRetryStallsOnePartition(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e test")
	}
	sd := seed(t)
	c := NewCluster(t)
	const n = 2000
	wc := NewWordCount(t, c, "retry", WordCountOptions{Messages: n, Words: 200, Tablets: 2, CountPartitions: 2, Seed: sd,
		MaxRowsPerBatch: 100, Inject: map[int]string{n / 2: "poison1"}, CountFunction: "CountWordsRejecting",
		CountDynamic: rejectParams("", "poison1"), Unbounded: true})
	wc.StartPipeline(t)
	_ = wc.Controller(t, "controller")
	workers := map[string]*Proc{"worker-0": wc.Worker(t, "worker-0")}

	// The count job owning the rejected word's hash is the stalled one.
	hash := ytql.FarmHash("poison1")
	var lower, upper uint64
	Eventually(t, time.Minute, func() (bool, string) {
		jobs, err := wc.Store.Jobs(context.Background())
		if err != nil {
			return false, err.Error()
		}
		for _, j := range jobs {
			if j.ComputationID == "count" && hash >= j.LowerKey && (j.UpperKey == 0 || hash < j.UpperKey) {
				lower, upper = j.LowerKey, j.UpperKey
				return true, ""
			}
		}
		return false, "no count job owns the rejected word yet"
	})
	stalled := func(word string) bool {
		h := ytql.FarmHash(word)
		return h >= lower && (upper == 0 || h < upper)
	}
	healthy := map[string]int64{}
	for w, v := range wc.Expected {
		if !stalled(w) {
			healthy[w] = v
		}
	}
	if len(healthy) == 0 || len(healthy) == len(wc.Expected) {
		t.Fatalf("the partitions split the words %d / %d", len(healthy), len(wc.Expected)-len(healthy))
	}

	// The healthy partition counts every one of its words while the other one retries.
	Eventually(t, 3*time.Minute, func() (bool, string) {
		got := wc.Counts(t)
		for w, v := range healthy {
			if got[w] != v {
				return false, fmt.Sprintf("%s counted %d of %d", w, got[w], v)
			}
		}
		return true, ""
	})
	var status string
	Eventually(t, time.Minute, func() (bool, string) {
		status = wc.Status(t)
		miss := missingFrom(status, "process function failed", "poison1", "is rejected", "attempt")
		return len(miss) == 0, fmt.Sprintf("yt-flow status lacks %q:\n%s", miss, status)
	})
	msgID := regexp.MustCompile(`message \\?"([^"\\]+)\\?"`).FindStringSubmatch(lineWith(status, "poison1"))
	if msgID == nil {
		t.Fatalf("yt-flow status names no message id:\n%s", status)
	}
	t.Logf("yt-flow status: %s", lineWith(status, "poison1"))
	wc.WaitEvents(t, 1, "process function failed", "poison1", msgID[1], "is rejected")
	got := wc.Counts(t)
	var counted, want int64
	for w, v := range wc.Expected {
		if got[w] > v {
			t.Fatalf("%s counted %d times, input has %d", w, got[w], v)
		}
		if stalled(w) {
			counted, want = counted+got[w], want+v
		}
	}
	if counted >= want {
		t.Fatalf("the stalled partition counted all its %d words", want)
	}
	t.Logf("stalled partition: %d of %d counted; healthy partition: all %d", counted, want, total(healthy))

	// Accepting the word unblocks the partition; nothing committed was lost.
	wc.waitCountJobsOn(t, wc.setRejected(t), func() map[string]*Proc { return workers })
	Eventually(t, 2*time.Minute, func() (bool, string) {
		p, out := total(wc.Counts(t)), wc.outputProgress(t)
		return p >= n && out >= n, fmt.Sprintf("counted %d, output %d of %d", p, out, n)
	})
	wc.CheckExactlyOnce(t)
}
