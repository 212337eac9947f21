package app

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/ytflow/yt-flow/connectors/queue"
	"github.com/ytflow/yt-flow/internal/inproc"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytstore"
)

// syncBuffer is an io.Writer safe for the goroutines of an in-process `yt-flow run`.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runCommand runs `yt-flow args...` in-process with no YT_PROXY (so `run` embeds its own
// server) and returns the exit code, stdout and stderr.
func runCommand(t *testing.T, timeout time.Duration, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out, errb syncBuffer
	env := &environ{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	code := runMain(ctx, env, args)
	if ctx.Err() != nil {
		t.Fatalf("yt-flow %s did not finish within %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), timeout, out.String(), errb.String())
	}
	return code, out.String(), errb.String()
}

type wordCount struct {
	word  string
	count int64
}

// expectedTopWords counts the words of the example input with the splitting rule of
// SplitWords (lower case; every rune that is neither a letter nor a digit separates) and
// returns the ten most frequent in the order of the example's result query
// (count descending, then word).
func expectedTopWords(t *testing.T, inputFile string) []wordCount {
	t.Helper()
	data, err := os.ReadFile(inputFile)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	for _, w := range strings.FieldsFunc(strings.ToLower(string(data)), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		counts[w]++
	}
	all := make([]wordCount, 0, len(counts))
	for w, n := range counts {
		all = append(all, wordCount{w, n})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].count != all[j].count {
			return all[i].count > all[j].count
		}
		return all[i].word < all[j].word
	})
	return all[:min(10, len(all))]
}

// printedTopWords parses the table `yt-flow run` prints under the result title.
func printedTopWords(t *testing.T, stdout, title string) []wordCount {
	t.Helper()
	_, table, ok := strings.Cut(stdout, title+":\n")
	if !ok {
		t.Fatalf("no %q section in the output:\n%s", title, stdout)
	}
	var got []wordCount
	sc := bufio.NewScanner(strings.NewReader(table))
	header := true
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			break
		}
		if header {
			if len(f) != 2 || f[0] != "word" || f[1] != "count" {
				t.Fatalf("result header %q, want \"word count\"", sc.Text())
			}
			header = false
			continue
		}
		if len(f) != 2 {
			t.Fatalf("result row %q: want word and count", sc.Text())
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			t.Fatalf("result row %q: %v", sc.Text(), err)
		}
		got = append(got, wordCount{f[0], n})
	}
	return got
}

// TestRunWordCountExample runs the README's first command in-process on a fresh data
// folder: the embedded server starts, the setup loads input.txt, the pipeline completes and
// the printed top words equal the counts computed directly from input.txt. A second run on
// the same data folder, with progress lines at most hourly, finds the input already loaded
// and prints the same counts.
func TestRunWordCountExample(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole example")
	}
	example := filepath.Join("..", "examples", "word_count")
	specFile := filepath.Join(example, "pipeline.yson")
	want := expectedTopWords(t, filepath.Join(example, "input.txt"))
	dataDir := t.TempDir()
	const title = "ten most frequent words"

	served := inproc.Served()
	code, stdout, stderr := runCommand(t, 2*time.Minute, "run", "--spec", specFile, "--data-dir", dataDir, "--progress", "0")
	if code != 0 {
		t.Fatalf("first run: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	// The embedded server shares the process with the controller and the workers: their
	// requests reach it as calls, not over loopback TCP.
	if inproc.Served() == served {
		t.Errorf("first run: no request was served in process")
	}
	for _, s := range []string{"loaded 10 rows from input.txt into //home/word_count/input", "pipeline //home/word_count/pipeline completed", "results: //home/word_count/counts"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("first run: stdout lacks %q:\n%s", s, stdout)
		}
	}
	if got := printedTopWords(t, stdout, title); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("first run: top words\n got %v\nwant %v\nstdout:\n%s", got, want, stdout)
	}

	// The second run prints progress once an hour: its end is still reported when it comes
	// (the state is watched every watchPoll), with no progress line before it.
	code, stdout, stderr = runCommand(t, 2*time.Minute, "run", "--spec", specFile, "--data-dir", dataDir, "--progress", "1h")
	if code != 0 {
		t.Fatalf("second run: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if strings.Contains(stdout, "state=") {
		t.Errorf("second run printed a progress line within its first hour:\n%s", stdout)
	}
	if !strings.Contains(stdout, "input input.txt already loaded into //home/word_count/input") {
		t.Errorf("second run did not recognise the loaded input:\n%s", stdout)
	}
	if strings.Contains(stdout, "loaded 10 rows") {
		t.Errorf("second run loaded the input again:\n%s", stdout)
	}
	if got := printedTopWords(t, stdout, title); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("second run: top words changed\n got %v\nwant %v\nstdout:\n%s", got, want, stdout)
	}

	// The data folder holds the input once: as many queue rows as input.txt has lines.
	srv, err := ytlocal.Start(context.Background(), ytlocal.Config{DataDir: dataDir})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	st, err := ytstore.Open(context.Background(), ytstore.Config{Proxy: srv.Addr(), Path: "//home/word_count/pipeline"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rows, err := st.SelectRows(context.Background(), "text FROM [//home/word_count/input]")
	if err != nil {
		t.Fatal(err)
	}
	if lines := nonEmptyLines(t, filepath.Join(example, "input.txt")); len(rows) != lines {
		t.Errorf("the input queue holds %d rows after two runs, want %d (one per line of input.txt)", len(rows), lines)
	}
}

func nonEmptyLines(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(l) != "" {
			n++
		}
	}
	return n
}

// sessionTotals computes what the sessions example must print from its input file: per
// user, the sum of the amounts and the number of events of the well-formed lines
// ("<user> <amount>"), as "user total events" lines sorted by user.
func sessionTotals(t *testing.T, inputFile string) []string {
	t.Helper()
	data, err := os.ReadFile(inputFile)
	if err != nil {
		t.Fatal(err)
	}
	type acc struct{ total, events int64 }
	per := map[string]*acc{}
	for _, line := range strings.Split(string(data), "\n") {
		user, num, ok := strings.Cut(strings.TrimSpace(line), " ")
		amount, err := strconv.ParseInt(num, 10, 64)
		if !ok || user == "" || err != nil {
			continue
		}
		if per[user] == nil {
			per[user] = &acc{}
		}
		per[user].total += amount
		per[user].events++
	}
	var out []string
	for u, a := range per {
		out = append(out, fmt.Sprintf("%s %d %d", u, a.total, a.events))
	}
	sort.Strings(out)
	return out
}

// printedRows returns the rows of the table printed under title, fields joined by one space.
func printedRows(t *testing.T, stdout, title string) []string {
	t.Helper()
	_, table, ok := strings.Cut(stdout, title+":\n")
	if !ok {
		t.Fatalf("no %q section in the output:\n%s", title, stdout)
	}
	lines := strings.Split(strings.TrimRight(table, "\n"), "\n")
	if strings.TrimSpace(lines[0]) == "(no rows)" {
		return nil
	}
	var rows []string
	for _, l := range lines[1:] { // the first line is the header
		if strings.TrimSpace(l) == "" {
			break
		}
		rows = append(rows, strings.Join(strings.Fields(l), " "))
	}
	return rows
}

// TestRunSessionsExample runs the sessions example with `yt-flow run` in-process and
// checks the per-user totals it prints against the totals computed from input.txt.
//
// The shipped pipeline.yson reads its queue without finite = %true, so `yt-flow run` on it
// never reaches completed; and with its session gap of 60 s of event time a finite run
// completes before any flush timer is due, printing no totals. The test runs a copy of the
// spec with both changed (finite source, 1 s gap) and reports the shipped spec's problems
// as a skip; so are sessions still unflushed at completion (pending timers do not hold
// completion back), which the short gap makes rare but not impossible.
func TestRunSessionsExample(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole example")
	}
	example := filepath.Join("..", "examples", "sessions")
	shipped, err := os.ReadFile(filepath.Join(example, "pipeline.yson"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range []string{"local.yson", "input.txt"} {
		b, err := os.ReadFile(filepath.Join(example, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	text := string(shipped)
	const consumer = `consumer_path = "//home/sessions/consumer";`
	if !strings.Contains(text, "finite") {
		text = strings.Replace(text, consumer, consumer+" finite = %true;", 1)
	}
	text = strings.Replace(text, "session_gap_seconds = 60;", "session_gap_seconds = 1;", 1)
	specFile := filepath.Join(dir, "pipeline.yson")
	if err := os.WriteFile(specFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := spec.ParseConfigFile(specFile)
	if err != nil {
		t.Fatal(err)
	}
	if q := queueSource(cfg, "read", "input"); q == nil || !q.Finite {
		t.Fatalf("the edited copy of the sessions spec does not read a finite queue:\n%s", text)
	}

	code, stdout, stderr := runCommand(t, 2*time.Minute, "run", "--spec", specFile, "--data-dir", filepath.Join(dir, "data"), "--progress", "0")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, s := range []string{"loaded 12 rows from input.txt into //home/sessions/input", "pipeline //home/sessions/pipeline completed", "results: //home/sessions/output"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("stdout lacks %q:\n%s", s, stdout)
		}
	}
	var known []string
	want := sessionTotals(t, filepath.Join(dir, "input.txt"))
	// A user's events may fall into more than one session (the gap is short and event
	// times are those of processing); every event must be in exactly one flushed session,
	// so the sessions of a user add up to the user's totals.
	got := perUser(t, printedRows(t, stdout, "session totals per user"))
	if fmt.Sprint(got) != fmt.Sprint(want) {
		if !below(got, want) {
			t.Fatalf("totals\n got %q\nwant %q\nstdout:\n%s", got, want, stdout)
		}
		// Some sessions were never flushed.
		known = append(known, fmt.Sprintf("a finite pipeline completes with event-time timers still pending: "+
			"once every source partition is completed the controller (controller/schedule.go, Scheduler.Step) sets "+
			"draining on all jobs, a draining job fires no timers (job/runner.go), and drained() looks only at "+
			"in_flight, which does not count pending timers; so the sessions printed only %d of %d totals (%q)",
			len(got), len(want), got))
	}

	shippedCfg, err := spec.ParseConfigFile(filepath.Join(example, "pipeline.yson"))
	if err != nil {
		t.Fatal(err)
	}
	if q := queueSource(shippedCfg, "read", "input"); q == nil || !q.Finite {
		known = append(known, "examples/sessions/pipeline.yson reads //home/sessions/input without finite = %true, so "+
			"`yt-flow run --spec examples/sessions/pipeline.yson` never reaches completed (and its session_gap_seconds = 60 "+
			"would leave every flush timer pending at completion)")
	}
	if len(known) > 0 {
		t.Fatal(strings.Join(known, "; "))
	}
}

// queueSource returns the queue parameters of source stream id of computation comp, or nil.
func queueSource(cfg *spec.Config, comp, id string) *queue.SourceParams {
	c := cfg.Spec.Computations[comp]
	if c == nil || c.Sources[id] == nil {
		return nil
	}
	p, _ := c.Sources[id].Params.(*queue.SourceParams)
	return p
}

// perUser adds up the printed sessions ("user total events") of each user.
func perUser(t *testing.T, rows []string) []string {
	t.Helper()
	type acc struct{ total, events int64 }
	per := map[string]*acc{}
	for _, r := range rows {
		var user string
		var total, events int64
		if _, err := fmt.Sscanf(r, "%s %d %d", &user, &total, &events); err != nil {
			t.Fatalf("printed session %q: %v", r, err)
		}
		if per[user] == nil {
			per[user] = &acc{}
		}
		per[user].total += total
		per[user].events += events
	}
	var out []string
	for u, a := range per {
		out = append(out, fmt.Sprintf("%s %d %d", u, a.total, a.events))
	}
	sort.Strings(out)
	return out
}

// below reports whether the per-user totals got are each at most those of want (sessions
// missing, none invented).
func below(got, want []string) bool {
	type acc struct{ total, events int64 }
	parse := func(rows []string) map[string]acc {
		m := map[string]acc{}
		for _, r := range rows {
			var u string
			var a acc
			fmt.Sscanf(r, "%s %d %d", &u, &a.total, &a.events)
			m[u] = a
		}
		return m
	}
	w := parse(want)
	for u, g := range parse(got) {
		if x, ok := w[u]; !ok || g.events > x.events {
			return false
		}
	}
	return true
}

// TestRunUsage checks that bad invocations of `yt-flow run` are usage errors (exit 2)
// and a missing spec file is a failure that names the file (exit 1).
func TestRunUsage(t *testing.T) {
	for _, args := range [][]string{
		{"run"},
		{"run", "--spec", "x.yson", "extra"},
		{"run", "--spec", "x.yson", "--workers", "0"},
		{"run", "--no-such-flag"},
	} {
		if code, _, _ := runCommand(t, time.Minute, args...); code != 2 {
			t.Errorf("yt-flow %v: exit %d, want 2", args, code)
		}
	}
	missing := filepath.Join(t.TempDir(), "missing.yson")
	code, _, stderr := runCommand(t, time.Minute, "run", "--spec", missing, "--data-dir", t.TempDir())
	if code != 1 || !strings.Contains(stderr, missing) {
		t.Errorf("missing spec: exit %d, stderr %q; want 1 naming %s", code, stderr, missing)
	}
}

// TestRunBadSetupFile checks that `yt-flow run` with a broken local.yson next to the spec
// fails (exit 1) naming the setup file's problems by their YSON paths.
func TestRunBadSetupFile(t *testing.T) {
	dir := t.TempDir()
	specText, err := os.ReadFile(filepath.Join("..", "examples", "word_count", "pipeline.yson"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pipeline.yson"), specText, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "local.yson"), []byte(`{tables = [{path = "//home/word_count/input"; kind = bucket}]; inputs = [{queue = "//home/word_count/input"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCommand(t, time.Minute, "run", "--spec", filepath.Join(dir, "pipeline.yson"), "--data-dir", filepath.Join(dir, "data"), "--progress", "0")
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, s := range []string{"tables/0/kind", "inputs/0/file"} {
		if !strings.Contains(stderr, s) {
			t.Errorf("stderr does not name %s:\n%s", s, stderr)
		}
	}
	if strings.Contains(stdout, "target state working") {
		t.Errorf("the pipeline was started despite the broken setup:\n%s", stdout)
	}
}
