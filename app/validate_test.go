package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func runValidateCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &environ{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	code = runMain(context.Background(), env, append([]string{"validate"}, args...))
	return code, out.String(), errb.String()
}

func TestValidateExamples(t *testing.T) {
	files := []string{"../examples/word_count/pipeline.yson", "../examples/sessions/pipeline.yson"}
	code, stdout, stderr := runValidateCmd(t, files...)
	assert.Equal(t, 0, code, stderr)
	assert.Equal(t, files[0]+": ok\n"+files[1]+": ok\n", stdout)
	assert.Empty(t, stderr)
}

func TestValidateReportsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yson")
	bad := filepath.Join(dir, "bad.yson")
	require.NoError(t, os.WriteFile(good, []byte(`{path="//p"; spec={computations={s={computation_class_name="source"; processing_function="F"; worker_group="g"; source_streams={r={source_class_name="service_log"; parameters={table_joiner={fetchers=[{table_path="//t"}]}}}}}}}}`), 0o644))
	require.NoError(t, os.WriteFile(bad, []byte(`{path="//p"; extra=1; spec={computations={c={computation_class_name="transform"; processing_function="F";
		group_by_schema=[{name="k"; type="uint64"}]; input_stream_ids=["in"]; output_stream_ids=["out"];
		sinks={out={sink_class_name="TSyncQueueSink"; input_stream_ids=["out"]; parameters={}}}}};
		streams={in={schema=[{name="k";type="uint64"}]}; out={schema=[{name="k";type="uint64"}]}}}}`), 0o644))
	missing := filepath.Join(dir, "missing.yson")

	code, stdout, stderr := runValidateCmd(t, good, bad, missing)
	assert.Equal(t, 1, code)
	assert.Equal(t, good+": ok\n", stdout)
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	require.Len(t, lines, 6, stderr)
	// A valid spec may still get warnings: what start and run would refuse.
	assert.Equal(t, good+`: spec/computations/s/processing_function: warning: processing function "F" is not registered in this program`, lines[0])
	assert.Equal(t, good+`: spec/computations/s/worker_group: warning: worker_group (placing jobs on a group of workers) is not supported by yt-flow yet`, lines[1])
	lines = lines[2:]
	assert.Equal(t, bad+": extra: unknown key", lines[0])
	assert.Equal(t, bad+": spec/computations/c/sinks/out/parameters/queue_path: required", lines[1])
	assert.Equal(t, bad+": spec/streams/in: no computation writes this stream (list it in some output_stream_ids)", lines[2])
	assert.True(t, strings.HasPrefix(lines[3], missing+": /: "), lines[3])
}

func TestValidateKinds(t *testing.T) {
	dir := t.TempDir()
	dyn := filepath.Join(dir, "dynamic.yson")
	require.NoError(t, os.WriteFile(dyn, []byte(`{computations={a={batch_duration="1s"}}}`), 0o644))
	code, stdout, _ := runValidateCmd(t, "-kind", "dynamic", dyn)
	assert.Equal(t, 0, code)
	assert.Equal(t, dyn+": ok\n", stdout)

	code, _, stderr := runValidateCmd(t, dyn)
	assert.Equal(t, 1, code, "a dynamic spec is not a runner config")
	assert.Contains(t, stderr, dyn+": path: required")

	code, _, stderr = runValidateCmd(t, "-kind", "spec", dyn)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, dyn+": computations/a/computation_class_name: required")
}

func TestValidateUsage(t *testing.T) {
	code, _, stderr := runValidateCmd(t)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "usage: yt-flow validate")
	code, _, _ = runValidateCmd(t, "-kind", "yaml", "x")
	assert.Equal(t, 2, code)
	code, _, _ = runValidateCmd(t, "-bogus")
	assert.Equal(t, 2, code)
}
