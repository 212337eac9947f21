package app

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	sdkyson "go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytstore"
)

func tortureEnv() *environ {
	return &environ{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: os.Getenv}
}

// TestTorturePlanBuiltin checks what torture takes of its built-in pipeline: one input
// queue with its tablets, both sinks with their columns and key columns, and a queue source
// made unbounded even where the spec says finite.
func TestTorturePlanBuiltin(t *testing.T) {
	dir := t.TempDir()
	specFile, err := writeBuiltinTorture(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The same pipeline with a finite source: torture must read it as unbounded.
	data, _ := os.ReadFile(specFile)
	finite := strings.Replace(string(data), `consumer_path = "//home/torture/consumer"}`, `consumer_path = "//home/torture/consumer"; finite = %true}`, 1)
	if finite == string(data) {
		t.Fatal("no source parameters to change")
	}
	if err := os.WriteFile(specFile, []byte(finite), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := loadTorturePlan(specFile, "", tortureEnv())
	if err != nil {
		t.Fatal(err)
	}
	if len(p.inputs) != 1 || p.inputs[0].path != "//home/torture/input" || p.inputs[0].tablets != 2 {
		t.Fatalf("inputs = %+v", p.inputs)
	}
	want := []tortureSink{
		{name: "count/out", kind: "queue", path: "//home/torture/output", columns: []string{"hash", "key", "count"}, keys: []string{"hash", "key"}},
		{name: "count/table", kind: "table", path: "//home/torture/counts", columns: []string{"hash", "key", "count"}, keys: []string{"hash", "key"}},
	}
	if !reflect.DeepEqual(p.sinks, want) {
		t.Fatalf("sinks = %+v, want %+v", p.sinks, want)
	}
	var static map[string]any
	if err := sdkyson.Unmarshal(p.static, &static); err != nil {
		t.Fatal(err)
	}
	params := static["computations"].(map[string]any)["tag"].(map[string]any)["source_streams"].(map[string]any)["rows"].(map[string]any)["parameters"].(map[string]any)
	if params["finite"] != false {
		t.Fatalf("source parameters %v: want finite false", params)
	}
}

// TestTorturePlanRefusals checks that every problem of a spec torture cannot run is reported
// at once, each with its YSON path.
func TestTorturePlanRefusals(t *testing.T) {
	dir := t.TempDir()
	specFile, err := writeBuiltinTorture(dir)
	if err != nil {
		t.Fatal(err)
	}
	setup := builtinTortureSetup
	// No output queue in the setup, and an input column the generator cannot fill.
	setup = strings.Replace(setup, `{path = "//home/torture/output"; kind = queue; schema = [{name = hash; type = uint64}; {name = key; type = string}; {name = count; type = int64}]};`, "", 1)
	setup = strings.Replace(setup, `{name = seq; type = int64}]`, `{name = seq; type = int64}; {name = blob; type = any}]`, 1)
	if setup == builtinTortureSetup {
		t.Fatal("setup unchanged")
	}
	if err := os.WriteFile(filepath.Join(dir, "local.yson"), []byte(setup), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = loadTorturePlan(specFile, "", tortureEnv())
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"spec/computations/count/sinks/out/parameters/queue_path: //home/torture/output is not a table of the setup file",
		"spec/computations/tag/source_streams/rows/parameters/queue_path: queue //home/torture/input column blob has type any",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\nlacks %q", err, want)
		}
	}
	if _, err := loadTorturePlan(filepath.Join(dir, "missing.yson"), "", tortureEnv()); err == nil || !strings.Contains(err.Error(), "missing.yson") {
		t.Errorf("missing spec: %v", err)
	}
}

// TestTortureGenerate checks the generated input: the same under a seed, a vocabulary key in
// string columns, the row number in integer columns, tablets round-robin.
func TestTortureGenerate(t *testing.T) {
	dir := t.TempDir()
	specFile, err := writeBuiltinTorture(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := loadTorturePlan(specFile, "", tortureEnv())
	if err != nil {
		t.Fatal(err)
	}
	a, b := p.generate(100, 5, 9), p.generate(100, 5, 9)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("one seed, two inputs")
	}
	rows := a["//home/torture/input"]
	if len(rows) != 100 {
		t.Fatalf("%d rows", len(rows))
	}
	var keys []string
	for i, r := range rows {
		if r["seq"] != int64(i) || r["$tablet_index"] != int64(i%2) {
			t.Fatalf("row %d = %v", i, r)
		}
		k := r["key"].(string)
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	if len(keys) != 5 || keys[0] != "k000" || keys[4] != "k004" {
		t.Fatalf("keys %v, want k000…k004", keys)
	}
	if reflect.DeepEqual(a, p.generate(100, 5, 10)) {
		t.Error("another seed, the same input")
	}
}

// FuzzTorturePlan feeds mutated runner configs (next to the built-in setup) to
// loadTorturePlan: it must never panic, and a plan it accepts has inputs and sinks.
func FuzzTorturePlan(f *testing.F) {
	f.Add(builtinTortureSpec)
	f.Add(strings.Replace(builtinTortureSpec, `"NYT::NFlow::TAsyncQueueSink"`, `"NYT::NFlow::TKafkaSink"`, 1))
	f.Add(strings.Replace(builtinTortureSpec, `parameters = {queue_path = "//home/torture/input"; consumer_path = "//home/torture/consumer"}`, `parameters = {}`, 1))
	f.Add(strings.Replace(builtinTortureSpec, `"//home/torture/output"`, `"<cluster=x>//home/torture/output"`, 1))
	dir := f.TempDir()
	if _, err := writeBuiltinTorture(dir); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		specFile := filepath.Join(t.TempDir(), "pipeline.yson")
		if err := os.WriteFile(specFile, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := loadTorturePlan(specFile, filepath.Join(dir, "local.yson"), tortureEnv())
		if err != nil {
			return
		}
		if len(p.inputs) == 0 || len(p.sinks) == 0 || len(p.static) == 0 {
			t.Fatalf("accepted a plan without inputs, sinks or spec: %+v", p)
		}
	})
}

// TestTortureFeederIdempotent feeds the built-in input into a queue on ytlocal twice over
// and after a foreign insert: the feeder inserts only the rows each tablet lacks, so a
// retried feed never doubles the input, and it refuses a queue holding rows it did not write.
func TestTortureFeederIdempotent(t *testing.T) {
	dir := t.TempDir()
	specFile, err := writeBuiltinTorture(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := loadTorturePlan(specFile, "", tortureEnv())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	srv, err := ytlocal.Start(ctx, ytlocal.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close() }()
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: srv.Addr(), Path: p.path})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := ensureTables(ctx, st, p.setup); err != nil {
		t.Fatal(err)
	}
	rows := p.generate(50, 5, 1)
	count := func() int {
		got, err := st.SelectRows(ctx, "[seq] FROM [//home/torture/input]")
		if err != nil {
			t.Fatal(err)
		}
		return len(got)
	}
	f := newFeeder(rows)
	for _, upTo := range []int{20, 20, 10, 50, 50} {
		if err := f.feed(ctx, st, upTo); err != nil {
			t.Fatal(err)
		}
	}
	// A new feeder knows nothing: it must find the rows in the queue and add none.
	if err := newFeeder(rows).feed(ctx, st, 50); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 50 {
		t.Fatalf("%d rows in the queue, want 50", n)
	}
	if err := st.InsertRows(ctx, "//home/torture/input", []map[string]any{{"$tablet_index": int64(0), "key": "x", "seq": int64(-1)}}); err != nil {
		t.Fatal(err)
	}
	if err := newFeeder(rows).feed(ctx, st, 50); err == nil || !strings.Contains(err.Error(), "rows not written by torture") {
		t.Fatalf("feed into a queue with a foreign row: %v", err)
	}
}
