package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// orderingRunSpec: two finite swift sources (event time from ts, in seconds) feeding the keyed
// EventOrder of examples/sessions under input_ordering, eb delayed by 5 s.
const orderingRunSpec = `{
  path = "//home/of/pipeline";
  spec = {
    computations = {
      ra = {computation_class_name = "NYT::NFlow::TSwiftPassthroughOrderedSourceComputation";
        source_streams = {a = {source_class_name = "NYT::NFlow::TQueueSource";
          parameters = {queue_path = "//home/of/a"; consumer_path = "//home/of/a_consumer"; finite = %true}}};
        output_stream_ids = ["ea"];
        watermark_strategy = {event_timestamp_assigner = {column = "ts"; format = "seconds"}}};
      rb = {computation_class_name = "NYT::NFlow::TSwiftPassthroughOrderedSourceComputation";
        source_streams = {b = {source_class_name = "NYT::NFlow::TQueueSource";
          parameters = {queue_path = "//home/of/b"; consumer_path = "//home/of/b_consumer"; finite = %true}}};
        output_stream_ids = ["eb"];
        watermark_strategy = {event_timestamp_assigner = {column = "ts"; format = "seconds"}}};
      merge = {computation_class_name = "NYT::NFlow::TProcessFunctionComputation";
        processing_function = "EventOrder"; processing_function_parameters = {output = "order"};
        group_by_schema = [{name = "hash"; type = "uint64"; required = %true; expression = "farm_hash(user)"}; {name = "user"; type = "string"; required = %true}];
        input_stream_ids = ["ea"; "eb"];
        input_ordering = {stream_delays = {eb = "5s"}};
        output_stream_ids = ["order"];
        sinks = {out = {sink_class_name = "NYT::NFlow::TSyncQueueSink"; input_stream_ids = ["order"]; parameters = {queue_path = "//home/of/order"}}}};
    };
    streams = {
      ea = {schema = [{name = "user"; type = "string"; required = %true}; {name = "ts"; type = "int64"; required = %true}]};
      eb = {schema = [{name = "user"; type = "string"; required = %true}; {name = "ts"; type = "int64"; required = %true}]};
      order = {schema = [{name = "user"; type = "string"}; {name = "seq"; type = "int64"}; {name = "stream"; type = "string"}; {name = "ts"; type = "int64"}]};
    };
  };
}`

const orderingRunSetup = `{
    tables = [
        {path = "//home/of/a"; kind = queue; schema = [{name = user; type = string}; {name = ts; type = int64}]};
        {path = "//home/of/a_consumer"; kind = consumer; queue = "//home/of/a"};
        {path = "//home/of/b"; kind = queue; schema = [{name = user; type = string}; {name = ts; type = int64}]};
        {path = "//home/of/b_consumer"; kind = consumer; queue = "//home/of/b"};
        {path = "//home/of/order"; kind = queue; schema = [{name = user; type = string}; {name = seq; type = int64}; {name = stream; type = string}; {name = ts; type = int64}]};
    ];
    inputs = [{queue = "//home/of/a"; file = "a.yson"; format = yson}; {queue = "//home/of/b"; file = "b.yson"; format = yson}];
    results = [{title = "order"; query = "user, seq, stream, ts FROM [//home/of/order] ORDER BY user, seq LIMIT 1000"}];
}`

// TestRunInputOrderingFinite: a pipeline whose two finite input streams interleave in event
// time completes under input_ordering (as each source ends and its outputs are delivered, its
// stream bounds nothing), and its function saw every user's events once each, in stabilized
// event-time order: a at 10 s·k and b at 10 s·k − 2 s, b delayed by 5 s, come as a_0, b_0, a_1, ….
func TestRunInputOrderingFinite(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a pipeline end to end")
	}
	const users, perK, t0 = 5, 30, int64(1_700_000_000)
	dir := t.TempDir()
	var a, b strings.Builder
	for k := range int64(perK) {
		for u := range users {
			fmt.Fprintf(&a, "{user = \"u%d\"; ts = %d};\n", u, t0+10*k)
			fmt.Fprintf(&b, "{user = \"u%d\"; ts = %d};\n", u, t0+10*k-2)
		}
	}
	for name, text := range map[string]string{"a.yson": a.String(), "b.yson": b.String(), "spec.yson": orderingRunSpec, "setup.yson": orderingRunSetup} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, stderr := runCommand(t, 2*time.Minute, "run", "--spec", filepath.Join(dir, "spec.yson"), "--setup", filepath.Join(dir, "setup.yson"),
		"--data-dir", t.TempDir(), "--progress", "0")
	if code != 0 || !strings.Contains(stdout, " completed in ") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	_, table, _ := strings.Cut(stdout, "order:\n")
	var got []string
	for _, line := range strings.Split(table, "\n")[1:] { // after the header
		if f := strings.Fields(line); len(f) == 4 {
			got = append(got, strings.Join(f, " "))
		}
	}
	var want []string
	for u := range users {
		for k := range int64(perK) {
			want = append(want, fmt.Sprintf("u%d %d ea %d", u, 2*k, (t0+10*k)*1_000_000), fmt.Sprintf("u%d %d eb %d", u, 2*k+1, (t0+10*k-2)*1_000_000))
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the function saw (user seq stream ts):\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
