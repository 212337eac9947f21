package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const flowPipeline = "//home/cli/pipe"

// flowSpec is a runner config: a random source feeding a keyed computation.
const flowSpec = `{
    path = "` + flowPipeline + `";
    spec = {
        computations = {
            gen = {
                computation_class_name = "NYT::NFlow::TProcessFunctionSourceComputation";
                processing_function = "Gen";
                source_streams = {r = {source_class_name = "random"; parameters = {partition_count = 1}}};
                output_stream_ids = ["x"];
            };
            agg = {
                computation_class_name = "NYT::NFlow::TProcessFunctionComputation";
                processing_function = "Agg";
                group_by_schema = [{name = "hash"; type = "uint64"; required = %true; expression = "farm_hash(k)"}; {name = "k"; type = "string"; required = %true}];
                input_stream_ids = ["x"];
            };
        };
        streams = {x = {schema = [{name = "k"; type = "string"; required = %true}]}};
    };
    dynamic_spec = {computations = {agg = {parameters = {desired_partition_count = 2}}}};
}`

// TestFlowCommandsThroughTheBinary runs the `yt flow` command set as processes against
// `yt-flow local` and a `yt-flow controller`: the state, spec changes refused while the
// pipeline works and accepted once it is paused with --force, the dynamic spec changed live, states,
// logs and views, and the exit codes of bad input.
func TestFlowCommandsThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	local, proxy := startLocal(t, bin)
	env := append(os.Environ(), "YT_PROXY="+proxy)
	run := func(stdin string, args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return code, out.String(), errb.String()
	}
	oneLine := func(what string, code int, out, errs string, wantCode int, want string) {
		t.Helper()
		if code != wantCode || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, want) {
			t.Errorf("%s: exit %d (want %d), stdout %q, stderr %q (want one line with %q)", what, code, wantCode, out, errs, want)
		}
	}
	specVersion := func() (int64, string) {
		t.Helper()
		code, out, errs := run("", "get-pipeline-spec", "--with-version", "--format", "json", flowPipeline)
		require.Equal(t, 0, code, errs)
		var v struct {
			Version int64 `json:"version"`
			Spec    struct {
				Computations map[string]struct {
					Function string `json:"processing_function"`
				} `json:"computations"`
			} `json:"spec"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &v), out)
		return v.Version, v.Spec.Computations["gen"].Function
	}

	code, out, errs := run("", "get-pipeline-state", flowPipeline)
	oneLine("state of a missing pipeline", code, out, errs, 1, "pipeline "+flowPipeline+" does not exist")

	specFile := filepath.Join(t.TempDir(), "pipeline.yson")
	require.NoError(t, os.WriteFile(specFile, []byte(flowSpec), 0o644))
	code, out, errs = run("", "start", "--spec", specFile)
	require.Equal(t, 0, code, "start: %s %s", out, errs)

	ctl := exec.Command(bin, "controller", "--path", flowPipeline, "--address", "ctl-cli")
	ctl.Env = env
	require.NoError(t, ctl.Start())
	stopped := false
	stop := func(p *exec.Cmd) {
		_ = p.Process.Signal(syscall.SIGTERM)
		_ = p.Wait()
	}
	t.Cleanup(func() {
		if !stopped {
			stop(ctl)
		}
	})
	waitState := func(want string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			code, out, errs := run("", "get-pipeline-state", "--format", "json", flowPipeline)
			if code == 0 && strings.TrimSpace(out) == `"`+want+`"` {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("pipeline never reached %s: %d %q %q", want, code, out, errs)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitState("working")

	// A static change while the pipeline works is refused and changes nothing.
	code, out, errs = run(`"GenV2"`, "set-pipeline-spec", "--spec-path", "/computations/gen/processing_function", flowPipeline)
	oneLine("static change while working", code, out, errs, 1, "is working: the static spec changes only while it is stopped")
	v, fn := specVersion()
	require.Equal(t, int64(1), v)
	require.Equal(t, "Gen", fn)

	// The dynamic spec changes live; the controller repartitions.
	code, out, errs = run("3", "set-pipeline-dynamic-spec", "--expected-version", "1", "--spec-path", "/computations/agg/parameters/desired_partition_count", flowPipeline)
	require.Equal(t, 0, code, "set-pipeline-dynamic-spec: %s %s", out, errs)
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, out, errs = run("", "describe-pipeline", "--format", "json", flowPipeline)
		require.Equal(t, 0, code, errs)
		var d struct {
			Computations map[string]struct {
				Counts map[string]int `json:"partition_counts"`
			} `json:"computations"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &d), out)
		if d.Computations["agg"].Counts["active"] == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("agg never had 3 active partitions: %s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// States can be deleted only once the pipeline is stopped.
	code, out, errs = run("", "delete-states", "--commit", flowPipeline)
	oneLine("delete-states while working", code, out, errs, 1, "is working: states can be deleted only while it is stopped or completed")
	code, out, errs = run("", "read-states", "--computation-id", "agg", "--key", "{k = ", flowPipeline)
	oneLine("malformed key", code, out, errs, 2, "--key: ")

	// Paused (with no workers, draining to stopped would wait for source jobs that never
	// run): a static change needs --force.
	code, out, errs = run("", "pause", "--path", flowPipeline, "--wait", "--timeout", "60s")
	require.Equal(t, 0, code, "pause: %s %s", out, errs)
	waitState("paused")
	code, out, errs = run(`"GenV2"`, "set-pipeline-spec", "--spec-path", "/computations/gen/processing_function", flowPipeline)
	oneLine("static change while paused", code, out, errs, 1, "is paused: the static spec changes only while it is stopped (--force allows paused)")
	code, out, errs = run(`"GenV2"`, "set-pipeline-spec", "--force", "--expected-version", "7", "--spec-path", "/computations/gen/processing_function", flowPipeline)
	oneLine("wrong expected version", code, out, errs, 1, "spec version is 1, not the expected 7")
	v, fn = specVersion()
	require.Equal(t, int64(1), v)
	require.Equal(t, "Gen", fn)
	code, out, errs = run(`"GenV2"`, "set-pipeline-spec", "--force", "--expected-version", "1", "--spec-path", "/computations/gen/processing_function", flowPipeline)
	require.Equal(t, 0, code, "set-pipeline-spec --force while paused: %s %s", out, errs)
	v, fn = specVersion()
	require.Equal(t, int64(2), v)
	require.Equal(t, "GenV2", fn)

	code, out, errs = run("", "delete-states", "--computation-id", "agg", "--key", `{k = "alice"}`, flowPipeline)
	oneLine("delete-states while paused", code, out, errs, 1, "--force allows paused")
	code, out, errs = run("", "delete-states", "--force", "--computation-id", "agg", "--key", `{k = "alice"}`, flowPipeline)
	require.Equal(t, 0, code, "delete-states dry run: %s %s", out, errs)
	require.Contains(t, out, "committed=%false")
	code, out, errs = run("", "read-states", "--format", "json", flowPipeline)
	require.Equal(t, 0, code, errs)
	require.True(t, json.Valid([]byte(out)), out)
	code, out, errs = run("", "show-logs", "--count", "5", flowPipeline)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "row_index")
	code, out, errs = run("", "get-flow-view", "--view-path", "/pipeline/state", flowPipeline)
	require.Equal(t, 0, code, errs)
	require.Equal(t, "paused", strings.TrimSpace(out))
	code, out, errs = run("", "describe-workers", "--format", "json", flowPipeline)
	require.Equal(t, 0, code, errs)
	require.Equal(t, "[]", strings.TrimSpace(out))
	code, out, errs = run("", "get-worker-backtraces", flowPipeline)
	oneLine("backtraces without workers", code, out, errs, 1, "has no live worker")
	code, out, errs = run("", "get-pipeline-spec", "--format", "xml", flowPipeline)
	oneLine("bad format", code, out, errs, 2, "--format must be yson or json")

	stop(ctl)
	stopped = true
	require.NoError(t, local.Process.Signal(syscall.SIGTERM))
	_ = local.Wait()
}
