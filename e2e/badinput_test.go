package e2e

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytstore"
)

// restartRE matches the controller event of a failed job: the backoff before its restart.
var restartRE = regexp.MustCompile(`failed \(restart in ([0-9.]+m?s)\)`)

// checkBackoff asserts that the failed-job events show the restart delay growing.
func checkBackoff(t *testing.T, events []string) {
	t.Helper()
	var delays []time.Duration
	for _, e := range events {
		if m := restartRE.FindStringSubmatch(e); m != nil {
			d, err := time.ParseDuration(m[1])
			if err != nil {
				t.Fatalf("event %q: %v", e, err)
			}
			delays = append(delays, d)
		}
	}
	if len(delays) < 2 {
		t.Fatalf("want at least two restarts with a backoff, got %v in %q", delays, events)
	}
	if delays[1] <= delays[0] {
		t.Errorf("restart delays %v do not grow (no backoff)", delays)
	}
}

// runBad starts the pipeline with one controller and one worker.
func runBad(t *testing.T, wc *WordCount) (ctrl, worker *Proc) {
	t.Helper()
	wc.StartPipeline(t)
	return wc.Controller(t, "controller"), wc.Worker(t, "worker-0")
}

// requireIn fails unless text contains every substring of want.
func requireIn(t *testing.T, where, text string, want ...string) {
	t.Helper()
	if miss := missingFrom(text, want...); len(miss) > 0 {
		t.Errorf("%s lacks %q:\n%s", where, miss, tail(text, 4000))
	}
}

// TestMalformedSourceRow writes a row whose text column holds an int64 (the queue column
// is of type any) into tablet 0, between good rows; tablet 1 holds only good rows. The
// split job of tablet 0 fails on the row, the error names the computation, the function,
// the message (source lines, tablet 0, offset 5) and the column; the job retries the epoch
// with a growing backoff (failure_policy retry, the default); nothing of the epoch holding
// the bad row is committed:
// the rows are written before the pipeline starts, so the first read of tablet 0 (up to
// 1000 rows) takes all eleven into one epoch, and neither the words before the bad row
// nor those after it are ever counted, while tablet 1 is counted exactly.
func TestMalformedSourceRow(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e test")
	}
	c := NewCluster(t)
	var rows []map[string]any
	for i := range 5 {
		rows = append(rows, map[string]any{"text": fmt.Sprintf("before%d", i), "$tablet_index": int64(0)})
	}
	rows = append(rows, map[string]any{"text": int64(42), "$tablet_index": int64(0)}) // offset 5
	for i := range 5 {
		rows = append(rows, map[string]any{"text": fmt.Sprintf("after%d", i), "$tablet_index": int64(0)})
	}
	for i := range 50 {
		rows = append(rows, map[string]any{"text": fmt.Sprintf("good%d", i), "$tablet_index": int64(1)})
	}
	wc := NewBadWordCount(t, c, "malformed", BadWordCount{Tablets: 2, Rows: rows,
		InputColumns: []schema.Column{{Name: "text", Type: schema.TypeAny}}})
	_, worker := runBad(t, wc)

	status := waitRetried(t, wc, "split/src/lines/0")
	requireIn(t, "yt-flow status", status, "split/src/lines/0", "SplitWords", "lines:00:05", "want a string, got int64")
	requireIn(t, "worker log", worker.Log(), "split/src/lines/0", "SplitWords", "lines:00:05", "want a string, got int64")

	Eventually(t, time.Minute, func() (bool, string) {
		return wc.PartitionState(t, "split/src/lines/1") == "completed", "tablet 1 not completed yet"
	})
	Eventually(t, time.Minute, func() (bool, string) {
		n := len(wc.Counts(t))
		return n >= 50, fmt.Sprintf("%d words counted, want the 50 of tablet 1", n)
	})
	var bad []string
	for word, n := range wc.Counts(t) {
		switch {
		case strings.HasPrefix(word, "good") && n == 1:
		default:
			bad = append(bad, fmt.Sprintf("%s counted %d times", word, n))
		}
	}
	failIf(t, "counts around a malformed row", bad)
	if s := wc.PartitionState(t, "split/src/lines/0"); s == "completed" {
		t.Errorf("tablet 0 completed past a row that always fails")
	}
	if s := wc.State(); s == "completed" {
		t.Errorf("pipeline completed past a row that always fails")
	}
	requireIn(t, "yt-flow status", wc.Status(t), "queue "+wc.Root+"/input tablet 0 row offset 5")
}

// TestMissingSourceColumn reads a queue whose rows lack the text column SplitWords reads.
// The rows must not vanish silently: the error must name the column.
func TestMissingSourceColumn(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e test")
	}
	c := NewCluster(t)
	rows := []map[string]any{{"line": "alpha beta", "$tablet_index": int64(0)}}
	wc := NewBadWordCount(t, c, "nocolumn", BadWordCount{Rows: rows,
		InputColumns: []schema.Column{{Name: "line", Type: schema.TypeString}}})
	runBad(t, wc)
	var status string
	Eventually(t, time.Minute, func() (bool, string) {
		status = wc.Status(t)
		return retriedRE.MatchString(status) || wc.State() == "completed", "neither a retried epoch nor completion yet"
	})
	if n := len(wc.Counts(t)); n != 0 {
		t.Errorf("%d words counted from rows without a text column", n)
	}
	if wc.State() == "completed" {
		t.Fatal("the pipeline completed although no source row has the text column SplitWords reads: the rows were processed as empty")
	}
	requireIn(t, "yt-flow status", status, "split", "text")
}

// countWithExtraKey adds a third group_by column to the count computation: CountWords,
// which wants the key [hash, word], fails on every key.
func countWithExtraKey(s string) string {
	return strings.Replace(s, "{name = \"word\"; type = \"string\"; required = %true};\n                ];",
		"{name = \"word\"; type = \"string\"; required = %true};\n"+
			"                    {name = \"extra\"; type = \"string\"; required = %true; expression = \"word\"};\n                ];", 1)
}

// TestUserFunctionError makes CountWords return an error for every key (its key has an
// unexpected third column). The error names the computation, the function and the key;
// the job retries the epoch with a growing backoff; nothing is committed by the failing
// computation: the table and the output queue stay empty.
func TestUserFunctionError(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e test")
	}
	c := NewCluster(t)
	rows := []map[string]any{{"text": "alpha", "$tablet_index": int64(0)}}
	wc := NewBadWordCount(t, c, "usererror", BadWordCount{Rows: rows, Edit: countWithExtraKey})
	if !strings.Contains(mustRead(t, wc.SpecFile), `name = "extra"`) {
		t.Fatal("the spec edit did not apply")
	}
	_, worker := runBad(t, wc)
	status := waitRetried(t, wc, "count")
	requireIn(t, "yt-flow status", status, "CountWords", "alpha", "want [hash, word]")
	requireIn(t, "worker log", worker.Log(), "CountWords", "alpha", "want [hash, word]")
	if n := len(wc.Counts(t)); n != 0 {
		t.Errorf("the failing computation committed %d table rows", n)
	}
	if n := len(wc.Output(t)); n != 0 {
		t.Errorf("the failing computation delivered %d output rows", n)
	}
	if s := wc.State(); s == "completed" {
		t.Errorf("pipeline completed although its count computation always fails")
	}
}

// TestUnknownProcessFunction names a processing_function the binary does not have: `start`
// refuses the spec with one line naming the computation and the function, and creates
// nothing. A spec stored by other means (another binary, an older version) meets the same
// function at run time: the job fails naming the computation and the function, and is
// restarted with backoff.
func TestUnknownProcessFunction(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e test")
	}
	c := NewCluster(t)
	rows := []map[string]any{{"text": "alpha beta", "$tablet_index": int64(0)}}
	wc := NewBadWordCount(t, c, "nofunction", BadWordCount{Rows: rows, Edit: func(s string) string {
		return strings.Replace(s, `"CountWords"`, `"NoSuchFunction"`, 1)
	}})
	start := Start(t, "start", "start", "--proxy", c.Proxy, "--spec", wc.SpecFile)
	if err, ok := start.Wait(time.Minute); !ok || err == nil {
		t.Fatalf("yt-flow start of a spec with an unknown function: %v (exited %v)\n%s", err, ok, start.Log())
	}
	requireIn(t, "yt-flow start", start.Log(), "spec/computations/count/processing_function", `"NoSuchFunction" is not registered`)
	if _, err := wc.Store.Attributes(context.Background()); err == nil {
		t.Fatalf("start created the pipeline it refused")
	}
	storeSpecs(t, wc)
	wc.Controller(t, "controller")
	wc.Worker(t, "worker-0")
	events := wc.WaitEvents(t, 2, "partition count/0of2", "failed (restart in")
	for _, e := range events {
		requireIn(t, "controller event", e, "computation count", `"NoSuchFunction"`, "unknown process function")
	}
	checkBackoff(t, events)
	requireIn(t, "yt-flow status", wc.Status(t), "NoSuchFunction", "unknown process function")
	if n := len(wc.Counts(t)); n != 0 {
		t.Errorf("%d table rows written without a count function", n)
	}
}

// TestMissingInputQueue starts the pipeline before its input queue exists: the controller
// cannot partition the source and says so naming the path, in its log and in `yt-flow
// status`, retrying every cycle; nothing runs. Once the queue and its consumer are created the pipeline recovers by itself and
// completes with exact counts.
func TestMissingInputQueue(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e test")
	}
	c := NewCluster(t)
	wc := NewBadWordCount(t, c, "noqueue", BadWordCount{SkipInput: true})
	queue := wc.Root + "/input"
	ctrl, _ := runBad(t, wc)
	Eventually(t, time.Minute, func() (bool, string) {
		return strings.Count(ctrl.Log(), "cannot list source partitions") >= 2,
			"the controller has not reported the missing queue twice"
	})
	requireIn(t, "controller log", ctrl.Log(), queue)
	if s := wc.PartitionState(t, "split/src/lines/0"); s != "" {
		t.Errorf("a partition of a missing queue exists in state %q", s)
	}
	requireIn(t, "yt-flow status", wc.Status(t), "source lines: cannot list its partitions", queue)

	wc.CreateInput(t, []map[string]any{{"text": "alpha beta", "$tablet_index": int64(0)}, {"text": "alpha", "$tablet_index": int64(0)}})
	Eventually(t, 2*time.Minute, func() (bool, string) {
		s := wc.State()
		return s == "completed", fmt.Sprintf("pipeline state %q after the queue was created", s)
	})
	if got := fmt.Sprint(wc.Counts(t)); got != "map[alpha:2 beta:1]" {
		t.Errorf("counts %s, want map[alpha:2 beta:1]", got)
	}
}

// TestMissingConsumer runs the source without its registered consumer: the split job
// reports an error naming the consumer path in its job status (shown by yt-flow status) and
// its worker's log, and retries the read while nothing is counted. Once the consumer is
// created the job goes on by itself and the pipeline completes with exact counts.
func TestMissingConsumer(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e test")
	}
	c := NewCluster(t)
	wc := NewBadWordCount(t, c, "noconsumer", BadWordCount{SkipConsumer: true,
		Rows: []map[string]any{{"text": "alpha beta", "$tablet_index": int64(0)}, {"text": "alpha", "$tablet_index": int64(0)}}})
	_, worker := runBad(t, wc)
	consumer := wc.Root + "/consumer"
	var jobErr string
	Eventually(t, time.Minute, func() (bool, string) {
		for id, e := range wc.JobErrors(t) {
			if strings.HasPrefix(id, "split/") {
				jobErr = e
				return true, ""
			}
		}
		return false, "no job error of split yet"
	})
	requireIn(t, "job status error", jobErr, "computation split", "partition split/src/lines/0", "read source lines", consumer, "not found")
	requireIn(t, "yt-flow status", wc.Status(t), "job errors", consumer)
	Eventually(t, time.Minute, func() (bool, string) {
		n := strings.Count(worker.Log(), "source read failed")
		return n >= 3, fmt.Sprintf("%d failed reads logged, want retries", n)
	})
	requireIn(t, "worker log", worker.Log(), consumer)
	if n := len(wc.Counts(t)); n != 0 {
		t.Errorf("%d words counted without a consumer", n)
	}

	wc.CreateInput(t, nil)
	Eventually(t, 2*time.Minute, func() (bool, string) {
		s := wc.State()
		return s == "completed", fmt.Sprintf("pipeline state %q after the consumer was created", s)
	})
	if got := fmt.Sprint(wc.Counts(t)); got != "map[alpha:2 beta:1]" {
		t.Errorf("counts %s, want map[alpha:2 beta:1]", got)
	}
}

// storeSpecs creates wc's pipeline and stores its spec and dynamic spec with target state
// working through the store, as another binary's start would: no check of this binary's
// functions.
func storeSpecs(t *testing.T, wc *WordCount) {
	t.Helper()
	text, err := os.ReadFile(wc.SpecFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := spec.ParseConfig(text)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Spec        any `yson:"spec"`
		DynamicSpec any `yson:"dynamic_spec"`
	}
	if err := yson.Unmarshal(text, &doc); err != nil {
		t.Fatal(err)
	}
	static, err := yson.Marshal(doc.Spec)
	if err != nil {
		t.Fatal(err)
	}
	dynamic, err := yson.Marshal(doc.DynamicSpec)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if cfg.Path != wc.Path {
		t.Fatalf("spec path %s, want %s", cfg.Path, wc.Path)
	}
	if err := wc.Store.CreatePipeline(ctx); err != nil {
		t.Fatal(err)
	}
	if err := wc.Store.SetSpecs(ctx, ytstore.SpecUpdate{Spec: static, SpecVersion: 1, DynamicSpec: dynamic, DynamicSpecVersion: 1, TargetState: ytstore.TargetWorking}); err != nil {
		t.Fatal(err)
	}
}

// retriedRE matches a job's problem once its failing epoch was retried at least once.
var retriedRE = regexp.MustCompile(`process function failed .* attempt ([2-9]|[1-9][0-9]+):`)

// waitRetried waits until `yt-flow status` shows a job of what (a partition or computation
// id) retrying a failing epoch (attempt 2 or later) and returns the status text.
func waitRetried(t *testing.T, wc *WordCount, what string) string {
	t.Helper()
	var status string
	Eventually(t, 2*time.Minute, func() (bool, string) {
		status = wc.Status(t)
		for _, line := range strings.Split(status, "\n") {
			if strings.Contains(line, what) && retriedRE.MatchString(line) {
				return true, ""
			}
		}
		return false, "no retried epoch of " + what + " in yt-flow status"
	})
	return status
}
