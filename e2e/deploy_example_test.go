package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"

	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/yt"

	"github.com/ytflow/yt-flow/ytstore"
)

// exampleDir is the folder of an example under examples/.
func exampleDir(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(filepath.Dir(file)), "examples", name)
}

// exampleWords splits text as the example's SplitWords does: lower-cased, split on every rune
// that is neither a letter nor a digit.
func exampleWords(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// TestDeployExampleWordCount deploys examples/word_count/pipeline.yson itself — the spec users
// see — with `yt-flow deploy` on `yt-flow local`, its tables made as its local.yson says and
// its input.txt loaded 200 times. The operation's controller job and two worker jobs show in
// list_jobs; deploy reports the pipeline working. Both worker processes are frozen (SIGSTOP)
// once registered, the controller gives them the pipeline's jobs, and then all three job
// processes are killed with SIGKILL. The server replaces the jobs, the pipeline completes with
// every word of the input counted exactly once, and the operation completes.
func TestDeployExampleWordCount(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e test")
	}
	c := NewCluster(t)
	if c.Real() {
		t.Skip("kills job processes on this host")
	}
	const repeat = 200
	dir := exampleDir("word_count")
	specFile := filepath.Join(dir, "pipeline.yson")
	const root, path = "//home/word_count", "//home/word_count/pipeline"
	st := c.Store(path)
	ctx := context.Background()
	// The tables of local.yson.
	for _, ut := range []ytstore.UserTable{
		{Path: root + "/input", Kind: ytstore.UserQueue, TabletCount: 2, Schema: schema.Schema{Columns: []schema.Column{{Name: "text", Type: schema.TypeString}}}},
		{Path: root + "/consumer", Kind: ytstore.UserConsumer, Queue: root + "/input"},
		{Path: root + "/counts", Kind: ytstore.UserSortedTable, Schema: schema.Schema{UniqueKeys: true, Columns: []schema.Column{
			{Name: "hash", Type: schema.TypeUint64, SortOrder: schema.SortAscending},
			{Name: "word", Type: schema.TypeString, SortOrder: schema.SortAscending},
			{Name: "count", Type: schema.TypeInt64},
		}}},
	} {
		if err := st.EnsureUserTable(ctx, ut); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(filepath.Join(dir, "input.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	f.Close()
	expected := map[string]int64{}
	var rows []map[string]any
	for i := range repeat {
		for j, l := range lines {
			for _, w := range exampleWords(l) {
				expected[w]++
			}
			rows = append(rows, map[string]any{"text": l, "$tablet_index": int64((i*len(lines) + j) % 2)})
			if len(rows) == 1000 {
				if err := st.InsertRows(ctx, root+"/input", rows); err != nil {
					t.Fatal(err)
				}
				rows = rows[:0]
			}
		}
	}
	if err := st.InsertRows(ctx, root+"/input", rows); err != nil {
		t.Fatal(err)
	}

	deploy := Start(t, "deploy", "deploy", "--proxy", c.Proxy, "--spec", specFile, "--workers", "2", "--lease-timeout", "10s", "--binary", Binary(t))
	var m []string
	Eventually(t, 3*time.Minute, func() (bool, string) {
		if deploy.Exited() {
			t.Fatalf("yt-flow deploy exited before starting the operation:\n%s", deploy.Log())
		}
		m = operationLine.FindStringSubmatch(deploy.Log())
		return m != nil, "no operation in the deploy output yet"
	})
	g, err := guid.ParseString(m[1])
	if err != nil {
		t.Fatal(err)
	}
	opID := yt.OperationID(g)
	yc := ytClient(t, c)
	t.Cleanup(func() {
		if t.Failed() {
			logJobStderrs(t, yc, opID)
		}
		_ = yc.AbortOperation(context.Background(), opID, nil)
	})
	var workers, controllers []yt.JobID
	pids := map[string]int{}
	Eventually(t, time.Minute, func() (bool, string) {
		jobs := jobsByState(t, yc, opID)
		workers, controllers = jobs["worker"]["running"], jobs["controller"]["running"]
		if len(workers) != 2 || len(controllers) != 1 {
			return false, fmt.Sprintf("list_jobs: %v, want 2 running workers and 1 running controller", jobs)
		}
		pids["worker0"], pids["worker1"], pids["controller"] = jobPid(workers[0], "worker"), jobPid(workers[1], "worker"), jobPid(controllers[0], "controller")
		return pids["worker0"] > 0 && pids["worker1"] > 0 && pids["controller"] > 0, fmt.Sprintf("job processes %v", pids)
	})
	// The workers are frozen (SIGSTOP) as soon as both have registered: before the controller
	// gives them jobs (a first assignment waits a second for workers that appear together),
	// so that the kills below hit a pipeline that has not completed.
	Eventually(t, time.Minute, func() (bool, string) {
		ws, err := st.Workers(ctx)
		return err == nil && len(ws) == 2, fmt.Sprintf("%d workers registered (%v)", len(ws), err)
	})
	for _, w := range []string{"worker0", "worker1"} {
		if err := syscall.Kill(pids[w], syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	if err, ok := deploy.Wait(3 * time.Minute); !ok || err != nil || !strings.Contains(deploy.Log(), "pipeline "+path+": working") {
		t.Fatalf("yt-flow deploy: %v (exited %v), want it to report the pipeline working\n%s", err, ok, deploy.Log())
	}
	// The frozen workers' sessions live on for their timeout (10s): the controller gives
	// them the pipeline's 6 jobs (2 source partitions, 4 count partitions).
	Eventually(t, time.Minute, func() (bool, string) {
		js, err := st.Jobs(ctx)
		return err == nil && len(js) == 6, fmt.Sprintf("%d jobs (%v)", len(js), err)
	})
	if a, err := st.Attributes(ctx); err != nil || a.PipelineState != "working" {
		t.Fatalf("pipeline state before the kills: %v %v; want working", a, err)
	}
	for _, p := range []string{"controller", "worker0", "worker1"} {
		if err := syscall.Kill(pids[p], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}

	Eventually(t, 4*time.Minute, func() (bool, string) {
		a, err := st.Attributes(ctx)
		if err != nil {
			return false, err.Error()
		}
		return a.PipelineState == "completed", fmt.Sprintf("pipeline state %q", a.PipelineState)
	})
	got, err := st.SelectRows(ctx, "word, count FROM ["+root+"/counts]")
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	seen := map[string]bool{}
	for _, r := range got {
		w := r["word"].(string)
		seen[w] = true
		if n := toInt(r["count"]); n != expected[w] {
			bad = append(bad, fmt.Sprintf("%s: %d, want %d", w, n, expected[w]))
		}
	}
	for w, n := range expected {
		if !seen[w] {
			bad = append(bad, fmt.Sprintf("%s: missing, want %d", w, n))
		}
	}
	if len(bad) > 0 || len(expected) == 0 {
		t.Fatalf("counts of %d words: %d wrong:\n%s", len(expected), len(bad), strings.Join(bad, "\n"))
	}
	Eventually(t, time.Minute, func() (bool, string) {
		op, err := yc.GetOperation(ctx, opID, nil)
		if err != nil {
			return false, err.Error()
		}
		return op.State == yt.StateCompleted, fmt.Sprintf("operation %s", op.State)
	})
	jobs := jobsByState(t, yc, opID)
	if n := len(jobs["worker"]["failed"]) + len(jobs["controller"]["failed"]); n != 3 {
		t.Errorf("failed jobs: %d, want 3: the killed workers and controller (%v)", n, jobs)
	}
	if w, ctl := len(jobs["worker"]["completed"]), len(jobs["controller"]["completed"]); w != 2 || ctl != 1 {
		t.Errorf("completed jobs: %d workers, %d controllers; want 2 and 1 (%v)", w, ctl, jobs)
	}
}
