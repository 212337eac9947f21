package app

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	sdkyson "go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/ytlocal/ytlocaltest"
	"github.com/ytflow/yt-flow/ytstore"
)

// flowTest runs yt-flow commands in process against one ytlocal with one pipeline.
type flowTest struct {
	*lifecycle
	st *ytstore.Store
}

// newFlowTest starts ytlocal and stores the specs of lifecycleConfig("", 2) in lifecyclePath
// (no controller runs: the pipeline state is unknown until a test sets it).
func newFlowTest(t *testing.T) *flowTest {
	l := &lifecycle{t: t, proxy: ytlocaltest.New(t), dir: t.TempDir()}
	if code, out, errs := l.run("start", "--proxy", l.proxy, "--spec", l.writeSpec("", 2)); code != 0 {
		t.Fatalf("start: %d %s %s", code, out, errs)
	}
	st, err := ytstore.Open(context.Background(), ytstore.Config{Proxy: l.proxy, Path: lifecyclePath})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return &flowTest{lifecycle: l, st: st}
}

// cmd runs a command against the pipeline's proxy with stdin.
func (f *flowTest) cmd(stdin string, args ...string) (int, string, string) {
	f.t.Helper()
	var out, errb bytes.Buffer
	env := &environ{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	code := runMain(context.Background(), env, append(args[:1:1], append([]string{"--proxy", f.proxy}, args[1:]...)...))
	return code, out.String(), errb.String()
}

// attrs reads the pipeline attributes.
func (f *flowTest) attrs() *ytstore.Attributes {
	f.t.Helper()
	a, err := f.st.Attributes(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	return a
}

// setState sets @pipeline_state as a controller would.
func (f *flowTest) setState(state string) {
	f.t.Helper()
	if err := f.st.SetAttribute(context.Background(), lifecyclePath, "pipeline_state", state); err != nil {
		f.t.Fatal(err)
	}
}

// failsCleanly checks that a command failed with code and one line on stderr containing
// want, and printed nothing on stdout.
func failsCleanly(t *testing.T, what string, code int, out, errs string, wantCode int, want string) {
	t.Helper()
	if code != wantCode || !strings.Contains(errs, want) || strings.Count(errs, "\n") != 1 || out != "" {
		t.Errorf("%s: exit %d (want %d), stdout %q, stderr %q (want one line with %q)", what, code, wantCode, out, errs, want)
	}
}

func ysonOf(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := sdkyson.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("output is not YSON: %v\n%s", err, s)
	}
	return v
}

func TestGetPipelineState(t *testing.T) {
	f := newFlowTest(t)
	if code, out, errs := f.cmd("", "get-pipeline-state", lifecyclePath); code != 0 || ysonOf(t, out) != "unknown" {
		t.Fatalf("state before a controller: %d %q %q", code, out, errs)
	}
	f.setState("paused")
	if code, out, _ := f.cmd("", "get-pipeline-state", "--path", lifecyclePath, "--format", "json"); code != 0 || strings.TrimSpace(out) != `"paused"` {
		t.Fatalf("json state: %d %q", code, out)
	}
	// Flags may follow the path; a --token-path there is the one used.
	code, out, errs := f.cmd("", "get-pipeline-state", lifecyclePath, "--token-path", "/nonexistent/token")
	failsCleanly(t, "token path after the path", code, out, errs, 1, "token_path (from --token-path)")
	code, out, errs = f.cmd("", "get-pipeline-state", lifecyclePath, "extra")
	failsCleanly(t, "two paths", code, out, errs, 2, "unexpected arguments")
	code, out, errs = f.cmd("", "get-pipeline-state", "//home/t/none")
	failsCleanly(t, "missing pipeline", code, out, errs, 1, "pipeline //home/t/none does not exist")
	code, out, errs = f.cmd("", "get-pipeline-state", "--format", "xml", lifecyclePath)
	failsCleanly(t, "bad format", code, out, errs, 2, "--format must be yson or json")
}

func TestPipelineSpecCommands(t *testing.T) {
	f := newFlowTest(t)
	p := lifecyclePath

	code, out, errs := f.cmd("", "get-pipeline-spec", p)
	spec, ok := ysonOf(t, out).(map[string]any)
	if code != 0 || !ok || spec["computations"] == nil {
		t.Fatalf("get-pipeline-spec: %d %q %q", code, out, errs)
	}
	code, out, _ = f.cmd("", "get-pipeline-spec", "--spec-path", "/computations/gen/processing_function", "--with-version", "--format", "json", p)
	var got struct {
		Version int64  `json:"version"`
		Spec    string `json:"spec"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.Version != 1 || got.Spec != "Gen" {
		t.Fatalf("get-pipeline-spec --spec-path --with-version --format json: %d %q", code, out)
	}
	code, out, errs = f.cmd("", "get-pipeline-spec", "--spec-path", "/computations/nope", p)
	failsCleanly(t, "get a missing part", code, out, errs, 1, `no "nope"`)

	// A static change while the pipeline works is refused; paused needs --force.
	before := f.attrs()
	f.setState("working")
	code, out, errs = f.cmd("GenX", "set-pipeline-spec", "--spec-path", "/computations/gen/processing_function", p)
	failsCleanly(t, "set while working", code, out, errs, 1, "is working: the static spec changes only while it is stopped")
	f.setState("paused")
	code, out, errs = f.cmd("GenX", "set-pipeline-spec", "--spec-path", "/computations/gen/processing_function", p)
	failsCleanly(t, "set while paused", code, out, errs, 1, "--force allows paused")
	if a := f.attrs(); a.SpecVersion != before.SpecVersion || !sameYSON(a.Spec, before.Spec) {
		t.Fatalf("a refused change changed the spec: version %d", a.SpecVersion)
	}
	code, out, errs = f.cmd(`"GenX"`, "set-pipeline-spec", "--force", "--expected-version", "1", "--spec-path", "/computations/gen/processing_function", p)
	if code != 0 || ysonOf(t, out).(map[string]any)["version"] != int64(2) {
		t.Fatalf("set --force while paused: %d %q %q", code, out, errs)
	}
	if _, out, _ = f.cmd("", "get-pipeline-spec", "--spec-path", "/computations/gen/processing_function", p); ysonOf(t, out) != "GenX" {
		t.Fatalf("after set: %q", out)
	}

	f.setState("stopped")
	before = f.attrs()
	for _, c := range []struct {
		what, stdin string
		args        []string
		code        int
		want        string
	}{
		{"wrong expected version", `"GenY"`, []string{"--expected-version", "1", "--spec-path", "/computations/gen/processing_function"}, 1, "spec version is 2, not the expected 1; nothing changed"},
		{"invalid spec", `{computations = {}; bogus = 1}`, nil, 1, "the new spec is invalid, nothing changed"},
		{"a computation the dynamic spec names is gone", `{computations = {gen = {computation_class_name = "NYT::NFlow::TProcessFunctionSourceComputation"; processing_function = "G"; source_streams = {r = {source_class_name = "random"}}}}}`, nil, 1, "against the stored dynamic spec"},
		{"not YSON", `{a = `, nil, 1, "is not YSON"},
		{"bad spec path", `1`, []string{"--spec-path", "computations"}, 2, "must start with /"},
		{"missing parent", `1`, []string{"--spec-path", "/computations/none/x"}, 1, `no "none"`},
	} {
		code, out, errs := f.cmd(c.stdin, append(append([]string{"set-pipeline-spec"}, c.args...), p)...)
		failsCleanly(t, c.what, code, out, errs, c.code, c.want)
	}
	if a := f.attrs(); a.SpecVersion != before.SpecVersion || !sameYSON(a.Spec, before.Spec) || !sameYSON(a.DynamicSpec, before.DynamicSpec) {
		t.Fatalf("refused changes changed the specs: version %d", a.SpecVersion)
	}

	// The dynamic spec changes at any time, validated against the static one.
	f.setState("working")
	code, out, errs = f.cmd("{computations = {agg = {parameters = {desired_partition_count = 3}}}}", "set-pipeline-dynamic-spec", "--expected-version", "1", p)
	if code != 0 || ysonOf(t, out).(map[string]any)["version"] != int64(2) {
		t.Fatalf("set-pipeline-dynamic-spec: %d %q %q", code, out, errs)
	}
	code, out, errs = f.cmd("{computations = {nope = {parameters = {desired_partition_count = 3}}}}", "set-pipeline-dynamic-spec", p)
	failsCleanly(t, "dynamic spec of an unknown computation", code, out, errs, 1, "the new dynamic spec is invalid")
	code, out, errs = f.cmd("", "remove-pipeline-dynamic-spec", "--expected-version", "7", p)
	failsCleanly(t, "remove with a wrong version", code, out, errs, 1, "dynamic spec version is 2, not the expected 7")
	if code, out, errs = f.cmd("", "remove-pipeline-dynamic-spec", "--spec-path", "/computations/agg/parameters", p); code != 0 {
		t.Fatalf("remove part of the dynamic spec: %d %q %q", code, out, errs)
	}
	if _, out, _ = f.cmd("", "get-pipeline-dynamic-spec", p); len(ysonOf(t, out).(map[string]any)["computations"].(map[string]any)["agg"].(map[string]any)) != 0 {
		t.Fatalf("after removing a part: %q", out)
	}
	if code, _, errs = f.cmd("", "remove-pipeline-dynamic-spec", p); code != 0 {
		t.Fatalf("remove the dynamic spec: %d %q", code, errs)
	}
	code, out, errs = f.cmd("", "get-pipeline-dynamic-spec", p)
	failsCleanly(t, "get a removed spec", code, out, errs, 1, "has no dynamic spec")
	if a := f.attrs(); len(a.DynamicSpec) != 0 || a.DynamicSpecVersion != 4 {
		t.Fatalf("after remove: dynamic spec %q version %d", a.DynamicSpec, a.DynamicSpecVersion)
	}

	// Removing the static spec follows the static rules.
	code, out, errs = f.cmd("", "remove-pipeline-spec", p)
	failsCleanly(t, "remove while working", code, out, errs, 1, "is working")
	f.setState("completed")
	code, out, errs = f.cmd("", "remove-pipeline-spec", "--force", p)
	failsCleanly(t, "remove when completed", code, out, errs, 1, "is completed (terminal)")
	f.setState("stopped")
	if code, _, errs = f.cmd("", "remove-pipeline-spec", p); code != 0 || len(f.attrs().Spec) != 0 {
		t.Fatalf("remove-pipeline-spec: %d %q", code, errs)
	}
	code, out, errs = f.cmd("", "set-pipeline-spec", "--file", "/nonexistent/spec.yson", p)
	failsCleanly(t, "unreadable file", code, out, errs, 1, "/nonexistent/spec.yson")
}

// TestFlowCommandsHelp checks that every command of the set names its flags and shows an
// example, and exits 0.
func TestFlowCommandsHelp(t *testing.T) {
	l := &lifecycle{t: t}
	for _, name := range flowCommandNames {
		code, out, errs := l.run(name, "--help")
		text := out + errs
		if code != 0 || !strings.Contains(text, "example:\n  yt-flow "+name) || !strings.Contains(text, "-proxy") || !strings.Contains(text, "-format") {
			t.Errorf("%s --help: exit %d:\n%s", name, code, text)
		}
	}
}

// flowCommandNames are the commands named after `yt flow`'s.
var flowCommandNames = []string{
	"get-pipeline-state", "get-pipeline-spec", "set-pipeline-spec", "remove-pipeline-spec",
	"get-pipeline-dynamic-spec", "set-pipeline-dynamic-spec", "remove-pipeline-dynamic-spec",
	"read-states", "delete-states", "show-logs", "describe-pipeline", "describe-workers", "get-worker-backtraces", "get-flow-view",
}

// TestStopWaitNamesLastState: stop --wait that times out names the state it last read.
func TestStopWaitNamesLastState(t *testing.T) {
	f := newFlowTest(t)
	f.setState("draining")
	code, _, errs := f.cmd("", "stop", "--path", lifecyclePath, "--wait", "--timeout", "300ms")
	if code != 1 || !strings.Contains(errs, "to be [stopped] (state draining;") {
		t.Fatalf("stop --wait without a controller: %d %q", code, errs)
	}
}

// TestEveryCommandHelp: every command's --help exits 0, names its flags and shows an example
// command line of that command.
func TestEveryCommandHelp(t *testing.T) {
	for _, name := range sortedKeysOf(commands) {
		code, out, errs := runCommand(t, time.Minute, name, "--help")
		text := out + errs
		if code != 0 || !regexp.MustCompile(`(?m)^examples?:\n  yt-flow `+regexp.QuoteMeta(name)+`\b`).MatchString(text) {
			t.Errorf("%s --help: exit %d, no example of the command:\n%s", name, code, text)
		}
		if commands[name].setup != nil && !strings.Contains(text, "-config") {
			t.Errorf("%s --help names no flags:\n%s", name, text)
		}
	}
}
