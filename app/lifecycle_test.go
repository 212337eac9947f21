package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ytflow/yt-flow/controller"
	"github.com/ytflow/yt-flow/ytlocal/ytlocaltest"
)

const lifecyclePath = "//home/t/pipe"

// lifecycleConfig is a runner config: a random source feeding a keyed
// computation with count partitions; tag changes the static spec.
func lifecycleConfig(tag string, count int) string {
	return `{
    path = "` + lifecyclePath + `";
    spec = {
        computations = {
            gen = {
                computation_class_name = "NYT::NFlow::TProcessFunctionSourceComputation";
                processing_function = "Gen` + tag + `";
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
    dynamic_spec = {computations = {agg = {parameters = {desired_partition_count = ` + strconv.Itoa(count) + `}}}};
}`
}

type lifecycle struct {
	t     *testing.T
	proxy string
	dir   string
}

const secretToken = "secret-token-do-not-print"

func (l *lifecycle) run(args ...string) (int, string, string) {
	l.t.Helper()
	var out, errb bytes.Buffer
	env := &environ{stdout: &out, stderr: &errb, getenv: func(k string) string {
		if k == "YT_TOKEN" {
			return secretToken
		}
		return ""
	}}
	code := runMain(context.Background(), env, args)
	for _, s := range []string{out.String(), errb.String()} {
		if strings.Contains(s, secretToken) {
			l.t.Fatalf("yt-flow %v printed the token: %s", args, s)
		}
	}
	return code, out.String(), errb.String()
}

func (l *lifecycle) writeSpec(tag string, count int) string {
	f := filepath.Join(l.dir, "pipeline.yson")
	if err := os.WriteFile(f, []byte(lifecycleConfig(tag, count)), 0o644); err != nil {
		l.t.Fatal(err)
	}
	return f
}

func (l *lifecycle) waitStatus(substr string) string {
	l.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, out, errs := l.run("status", "--proxy", l.proxy, "--path", lifecyclePath)
		if code == 0 && strings.Contains(out, substr) {
			return out
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("status never showed %q; last (%d):\n%s%s", substr, code, out, errs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestLifecycleCommands(t *testing.T) {
	l := &lifecycle{t: t, proxy: ytlocaltest.New(t), dir: t.TempDir()}
	p := l.proxy

	if code, _, errs := l.run("create", "--proxy", p); code != 2 || !strings.Contains(errs, "--path is required") {
		t.Errorf("create without --path: %d %q", code, errs)
	}
	if code, _, errs := l.run("status", "--proxy", p, "--path", lifecyclePath); code != 1 || !strings.Contains(errs, "does not exist") {
		t.Errorf("status of a missing pipeline: %d %q", code, errs)
	}
	if code, out, errs := l.run("create", "--proxy", p, "--path", lifecyclePath); code != 0 || !strings.Contains(out, "is ready") {
		t.Fatalf("create: %d %s %s", code, out, errs)
	}
	f := l.writeSpec("", 2)
	code, out, errs := l.run("start", "--proxy", p, "--spec", f)
	if code != 0 || !strings.Contains(out, "spec version 1 (updated), dynamic spec version 1 (updated)") {
		t.Fatalf("start: %d %s %s", code, out, errs)
	}
	if code, out, _ = l.run("start", "--proxy", p, "--spec", f); code != 0 || !strings.Contains(out, "spec version 1 (unchanged), dynamic spec version 1 (unchanged)") {
		t.Fatalf("second start: %d %s", code, out)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = controller.Run(ctx, controller.Config{Proxy: p, Path: lifecyclePath, Address: "ctl-1", Period: 50 * time.Millisecond})
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })

	status := l.waitStatus("working (target working)")
	for _, want := range []string{"leader    ctl-1", "partitions (3), jobs (0)", "agg/0of2", "agg/1of2", "gen/src/r/0", "[0x0000000000000000, 0x8000000000000000)", "r#0"} {
		if !strings.Contains(status, want) {
			t.Errorf("status lacks %q:\n%s", want, status)
		}
	}

	// A dynamic change applies live: partitions follow desired_partition_count.
	f = l.writeSpec("", 3)
	if code, out, errs = l.run("start", "--proxy", p, "--spec", f); code != 0 || !strings.Contains(out, "dynamic spec version 2 (updated)") {
		t.Fatalf("dynamic change: %d %s %s", code, out, errs)
	}
	l.waitStatus("agg/2of3")

	// A static change is refused while the pipeline runs.
	f = l.writeSpec("Other", 3)
	code, _, errs = l.run("start", "--proxy", p, "--spec", f)
	if code != 1 || !strings.Contains(errs, "only while the pipeline is stopped") || !strings.Contains(errs, "is working") {
		t.Fatalf("static change while working: %d %q", code, errs)
	}

	if code, out, errs = l.run("pause", "--proxy", p, "--path", lifecyclePath, "--wait", "--timeout", "30s"); code != 0 || !strings.Contains(out, lifecyclePath+": paused") {
		t.Fatalf("pause --wait: %d %s %s", code, out, errs)
	}
	status = l.waitStatus("paused (target paused)")
	if !strings.Contains(status, "jobs (0)") {
		t.Errorf("jobs while paused:\n%s", status)
	}
	// Paused is not stopped: the static change is still refused.
	if code, _, errs = l.run("start", "--proxy", p, "--spec", f); code != 1 || !strings.Contains(errs, "is paused") {
		t.Fatalf("static change while paused: %d %q", code, errs)
	}
}

func TestLifecycleUsage(t *testing.T) {
	l := &lifecycle{t: t, dir: t.TempDir()}
	for _, args := range [][]string{
		{"status", "--path", "//p"},
		{"stop", "--proxy", "localhost:1"},
		{"start"},
		{"controller", "--proxy", "localhost:1", "extra"},
	} {
		if code, _, errs := l.run(args...); code != 2 || errs == "" {
			t.Errorf("yt-flow %v: exit %d, stderr %q; want usage error 2", args, code, errs)
		}
	}
	bad := filepath.Join(l.dir, "bad.yson")
	if err := os.WriteFile(bad, []byte(`{path = "//p"; spec = {computations = {}}; bogus = 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := l.run("start", "--proxy", "localhost:1", "--spec", bad); code != 1 || !strings.Contains(errs, bad) {
		t.Errorf("start with a bad spec: %d %q", code, errs)
	}
}
