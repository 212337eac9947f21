package app

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/spec"
)

// The process functions of spec/testdata/flow: a word split and a running word count. The
// companion specs run them under their computation ids, as a Flow companion program
// registers them.
func init() {
	split := flow.PerMessage(corpusSplit)
	count := flow.Batch(corpusCount)
	tag := flow.PerMessage(func(ctx *flow.Context, msg *flow.Message) error {
		out, err := corpusOutput(ctx)
		if err == nil {
			ctx.AddMessage(out, flow.Row{"word": msg.Payload["word"]})
		}
		return err
	})
	flow.Register("CorpusSplit", split)
	flow.Register("CorpusCount", count)
	flow.Register("corpus_companion_split", split)
	flow.Register("corpus_companion_count", count)
	flow.Register("corpus_swift_split", split)
	flow.Register("corpus_swift_tag", tag)
	flow.Register("corpus_swift_count", count)
	flow.Register("CorpusJoinedCount", flow.Batch(corpusJoinedCount))
}

// corpusJoinedCount (state_joiner.yson) reads, per message {hash; word; count} of the count
// computation, that computation's committed state "count" of the word through the joiner
// "/counted" (the invocation's key) and "/by_word" (the message keyed by
// key_schema_override), and keeps in the external state "/totals" the largest count read,
// how many messages read a state below their own count (behind: a stale read) and how many
// reads of the two joiners differed (mismatch).
func corpusJoinedCount(ctx *flow.Context, msgs []flow.Message) error {
	totals := flow.ExternalStateOf(ctx, "/totals")
	row, _ := totals.Get()
	best, _ := row["count"].(int64)
	behind, _ := row["behind"].(int64)
	mismatch, _ := row["mismatch"].(int64)
	for i := range msgs {
		m := &msgs[i]
		joined, _ := flow.JoinedStateOf[int64](ctx, "/counted")
		byWord, _ := flow.JoinedStateAt[int64](ctx, "/by_word", flow.JoinKeyOf(ctx, "/by_word", m))
		if n, _ := m.Payload["count"].(int64); joined < n {
			behind++
		}
		if byWord != joined {
			mismatch++
		}
		best = max(best, joined)
	}
	totals.Set(flow.Row{"count": best, "behind": behind, "mismatch": mismatch})
	return nil
}

type corpusParams struct {
	Output     string `yson:"output"`
	WithLength bool   `yson:"with_length"`
	Body       bool   `yson:"body"`
}

func corpusOutput(ctx *flow.Context) (string, error) {
	p, err := flow.ParamsOf[corpusParams](ctx)
	if err == nil && p.Output == "" {
		err = fmt.Errorf("processing_function_parameters: output is required")
	}
	return p.Output, err
}

// corpusSplit emits {word} (and its length with with_length) per word of the row (corpusWords).
func corpusSplit(ctx *flow.Context, msg *flow.Message) error {
	p, err := flow.ParamsOf[corpusParams](ctx)
	if err != nil {
		return err
	}
	for _, w := range corpusWords(msg.Payload) {
		row := flow.Row{"word": w}
		if p.WithLength {
			row["length"] = int64(len(w))
		}
		ctx.AddMessage(p.Output, row)
	}
	return nil
}

// corpusWords are the lower-case words of a row's text column, or, in rows without one, of
// its data (a Kafka record's value) or payload (a random source's row); every rune that is
// neither a letter nor a digit separates words.
func corpusWords(row flow.Row) []string {
	var v any
	for _, col := range []string{"text", "data", "payload"} {
		if x, ok := row[col]; ok {
			v = x
			break
		}
	}
	text, _ := v.(string)
	if b, ok := v.([]byte); ok {
		text = string(b)
	}
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// corpusCount keeps a count per word (key [hash, word]) and emits the new total.
func corpusCount(ctx *flow.Context, msgs []flow.Message) error {
	p, err := flow.ParamsOf[corpusParams](ctx)
	if err != nil {
		return err
	}
	key := ctx.Key()
	st := flow.StateOf[int64](ctx, "count")
	n, _ := st.Get()
	n += int64(len(msgs))
	st.Set(n)
	row := flow.Row{"hash": key[0], "word": key[1], "count": n}
	if p.Body {
		row["body"] = fmt.Sprintf("%v=%d", key[1], n)
	}
	ctx.AddMessage(p.Output, row)
	return nil
}

// TestFlowCorpusRuns runs every spec of spec/testdata/flow whose features yt-flow runs (those
// with a "// run: SETUP" header, see spec's TestFlowCorpus) unchanged on the embedded server,
// in process, with its setup file; only the addresses of the servers a spec talks to are
// replaced by the test's own (an HTTP server, a Kafka broker, two ClickHouse servers). Each
// completes (the Kafka pipeline, whose source has no end, once its counts are final), and
// the most frequent word of the input is "the", counted 5 times; the specs whose input is
// not lines.txt are checked word by word (corpusPrepare). The specs yt-flow does not run are
// refused by run with one line per feature, each "not supported by yt-flow yet".
func TestFlowCorpusRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs pipelines end to end")
	}
	files, err := filepath.Glob("../spec/testdata/flow/*.yson")
	if err != nil || len(files) < 15 {
		t.Fatalf("corpus: %v (%d files)", err, len(files))
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		setup := ""
		for _, line := range strings.Split(string(data), "\n") {
			if s, ok := strings.CutPrefix(line, "// run: "); ok {
				setup = filepath.Join(filepath.Dir(file), s)
			}
		}
		name := strings.TrimSuffix(filepath.Base(file), ".yson")
		t.Run(name, func(t *testing.T) {
			if setup == "" {
				code, stdout, stderr := runCommand(t, time.Minute, "run", "--spec", file, "--data-dir", t.TempDir(), "--progress", "0")
				if code != 1 || stdout != "" || !strings.Contains(stderr, "is not supported by yt-flow yet") {
					t.Fatalf("run of an unsupported spec: exit %d, stdout %q\nstderr:\n%s", code, stdout, stderr)
				}
				for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
					if !strings.HasPrefix(line, "yt-flow: run: "+file+": ") || !strings.HasSuffix(line, " is not supported by yt-flow yet") && !strings.Contains(line, "is not registered in this program") {
						t.Errorf("refusal line %q", line)
					}
				}
				return
			}
			if name == "kafka" {
				runCorpusKafka(t, string(data), setup)
				return
			}
			if name == "key_visitor" {
				runCorpusKeyVisitor(t, file, setup)
				return
			}
			if name == "arrival_order_sink" {
				runCorpusArrival(t, file, setup)
				return
			}
			specFile := file
			subst, check := corpusPrepare(t, name)
			if len(subst) > 0 {
				text := string(data)
				for from, to := range subst {
					if !strings.Contains(text, from) {
						t.Fatalf("the spec does not name %s", from)
					}
					text = strings.ReplaceAll(text, from, to)
				}
				specFile = filepath.Join(t.TempDir(), name+".yson")
				if err := os.WriteFile(specFile, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			code, stdout, stderr := runCommand(t, 2*time.Minute, "run", "--spec", specFile, "--setup", setup, "--data-dir", t.TempDir(), "--progress", "0")
			if code != 0 || !strings.Contains(stdout, " completed in ") {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			check(t, stdout)
		})
	}
}

// corpusHTTP records the bodies an HTTP sink posts.
type corpusHTTP struct {
	mu     sync.Mutex
	bodies []string
}

func (h *corpusHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.bodies = append(h.bodies, string(b))
	h.mu.Unlock()
}

// body returns the largest count posted for word, as "word=N".
func (h *corpusHTTP) body(word string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	best, bestN := "", -1
	for _, b := range h.bodies {
		var n int
		if _, err := fmt.Sscanf(strings.TrimPrefix(b, word+"="), "%d", &n); err == nil && strings.HasPrefix(b, word+"=") && n > bestN {
			best, bestN = b, n
		}
	}
	return best
}

func (h *corpusHTTP) all() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.bodies...)
}

// TestValidateVerboseListsIgnored: validate --verbose lists the keys yt-flow ignores, and
// validate warns about features it does not run yet and functions this program lacks.
func TestValidateVerboseListsIgnored(t *testing.T) {
	file := "../spec/testdata/flow/vanilla.yson"
	code, stdout, stderr := runValidateCmd(t, "--verbose", file)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{
		file + ": ok\n",
		file + ": address_resolver: ignored: ",
		file + ": vanilla: ignored: read only by `yt-flow deploy`",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, _ = runValidateCmd(t, file)
	if code != 0 || strings.Contains(stdout, "ignored") {
		t.Errorf("without --verbose: exit %d, stdout %q", code, stdout)
	}

	file = "../spec/testdata/flow/resources.yson"
	code, stdout, stderr = runValidateCmd(t, file)
	if code != 0 || stdout != file+": ok\n" || stderr != file+": spec/resources/dictionary: warning: resource class \"NYT::NFlow::TStaticTableDictionary\" is not supported by yt-flow yet\n" {
		t.Errorf("exit %d\nstdout %q\nstderr %q", code, stdout, stderr)
	}

	dir := t.TempDir()
	missing := filepath.Join(dir, "missing_function.yson")
	cfg := strings.Replace(mustRead(t, "../spec/testdata/flow/queue_to_sorted_table.yson"), `"CorpusCount"`, `"NoSuchFunction"`, 1)
	if err := os.WriteFile(missing, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runValidateCmd(t, missing)
	if want := missing + ": spec/computations/count/processing_function: warning: processing function \"NoSuchFunction\" is not registered in this program\n"; code != 0 || stderr != want {
		t.Errorf("validate: exit %d, stderr %q, want %q", code, stderr, want)
	}
	code, stdout, stderr = runCommand(t, time.Minute, "start", "--spec", missing, "--proxy", "127.0.0.1:1")
	if want := "yt-flow: start: " + missing + ": spec/computations/count/processing_function: processing function \"NoSuchFunction\" is not registered in this program\n"; code != 1 || stderr != want {
		t.Errorf("start: exit %d, stdout %q, stderr %q, want %q", code, stdout, stderr, want)
	}
	if _, err := spec.ParseConfig([]byte(cfg)); err != nil {
		t.Errorf("the spec itself is valid: %v", err)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
