package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSetupParseErrors checks that every problem of a setup file is reported with its
// YSON path, all at once.
func TestSetupParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"not yson", `{tables = [`, []string{"setup:"}},
		{"tables not a list", `{tables = {}}`, []string{"tables", "want list"}},
		{"missing path and kind", `{tables = [{schema = [{name = a; type = string}]}]}`,
			[]string{"tables/0/path", "tables/0/kind"}},
		{"bad kind", `{tables = [{path = "//t"; kind = bucket}]}`, []string{"tables/0/kind"}},
		{"queue without schema", `{tables = [{path = "//q"; kind = queue}]}`, []string{"tables/0/schema", "required for a queue"}},
		{"schema not a list", `{tables = [{path = "//q"; kind = queue; schema = "text"}]}`, []string{"tables/0/schema"}},
		{"consumer without queue", `{tables = [{path = "//c"; kind = consumer}]}`, []string{"tables/0/queue", "required for a consumer"}},
		{"tablet_count out of range", `{tables = [{path = "//q"; kind = queue; tablet_count = 0; schema = [{name = a; type = string}]}]}`, []string{"tables/0/tablet_count"}},
		{"input without column", `{inputs = [{queue = "//q"; file = "in.txt"}]}`, []string{"inputs/0/column", "lines format"}},
		{"input bad format", `{inputs = [{queue = "//q"; file = "in.txt"; format = csv}]}`, []string{"inputs/0/format"}},
		{"input missing file", `{inputs = [{queue = "//q"; column = text}]}`, []string{"inputs/0/file"}},
		{"result without query", `{results = [{title = "x"}]}`, []string{"results/0/query"}},
		{"static table without schema", `{tables = [{path = "//t"; kind = static_table}]}`, []string{"tables/0/schema", "required for a static_table"}},
		{"input without target", `{inputs = [{file = "in.txt"; column = text}]}`, []string{"inputs/0/queue", "required (or table)"}},
		{"input to queue and table", `{inputs = [{queue = "//q"; table = "//t"; file = "in.txt"; column = text}]}`, []string{"inputs/0/table", "not both"}},
		{"input to an undeclared table", `{tables = [{path = "//t"; kind = sorted_table; schema = [{name = a; type = string}]}];
			inputs = [{table = "//u"; file = "in.txt"; column = a}]}`, []string{"inputs/0/table", "//u is not a static_table or sorted_table of tables"}},
		{"input to a queue as a table", `{tables = [{path = "//q"; kind = queue; schema = [{name = a; type = string}]}];
			inputs = [{table = "//q"; file = "in.txt"; column = a}]}`, []string{"inputs/0/table", "//q is not a static_table or sorted_table of tables"}},
		{"unknown key", `{tables = []; tabels = []}`, []string{"tabels"}},
		{"states without file", `{states = [{}]}`, []string{"states/0/file", "required"}},
		{"states not a list", `{states = {file = "s.yson"}}`, []string{"states", "want list"}},
		{"every problem at once", `{tables = [{kind = queue}; {path = "//c"; kind = consumer}]; results = [{}]}`,
			[]string{"tables/0/path", "tables/0/schema", "tables/1/queue", "results/0/query"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseSetup([]byte(tc.text), t.TempDir())
			if err == nil {
				t.Fatalf("parseSetup(%s) succeeded, want an error naming %v", tc.text, tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

// TestSetupUnknownColumnType wants an unknown column type rejected at parse time with the
// schema's path.
func TestSetupUnknownColumnType(t *testing.T) {
	_, err := parseSetup([]byte(`{tables = [{path = "//q"; kind = queue; schema = [{name = a; type = no_such_type}]}]}`), t.TempDir())
	if err == nil {
		t.Fatal("an unknown column type was accepted")
	}
	if !strings.Contains(err.Error(), "tables/0/schema") {
		t.Errorf("error %q does not name tables/0/schema", err)
	}
}

// TestSetupExamplesParse checks that the setup files shipped with the examples parse and
// name their input files, which exist.
func TestSetupExamplesParse(t *testing.T) {
	for _, ex := range []string{"word_count", "sessions", "static_count", "clickhouse_events"} {
		path := filepath.Join("..", "examples", ex, "local.yson")
		s, err := loadSetup(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		results := len(s.Results)
		if s.ClickHouse != nil {
			results += len(s.ClickHouse.Results)
		}
		if len(s.Tables) == 0 || len(s.Inputs) == 0 || results == 0 {
			t.Errorf("%s: %d tables, %d inputs, %d results; want each", path, len(s.Tables), len(s.Inputs), results)
		}
		for _, in := range s.Inputs {
			if _, err := os.Stat(filepath.Join(s.dir, in.File)); err != nil {
				t.Errorf("%s: input %s: %v", path, in.File, err)
			}
		}
	}
}

// TestSetupMissingInputFile checks that a setup whose input file does not exist fails
// naming the queue and the file, before anything is loaded.
func TestSetupMissingInputFile(t *testing.T) {
	dir := t.TempDir()
	setup := filepath.Join(dir, "local.yson")
	if err := os.WriteFile(setup, []byte(`{
    tables = [{path = "//home/t/in"; kind = queue; schema = [{name = text; type = string}]}];
    inputs = [{queue = "//home/t/in"; file = "nope.txt"; column = text}];
}`), 0o644); err != nil {
		t.Fatal(err)
	}
	specFile := filepath.Join(dir, "pipeline.yson")
	if err := os.WriteFile(specFile, []byte(`{
    path = "//home/t/pipeline";
    spec = {
        computations = {
            split = {
                computation_class_name = "NYT::NFlow::TProcessFunctionSourceComputation";
                processing_function = "SplitWords";
                source_streams = {lines = {source_class_name = "NYT::NFlow::TQueueSource";
                    parameters = {queue_path = "//home/t/in"; consumer_path = "//home/t/consumer"; finite = %true}}};
                output_stream_ids = ["words"];
            };
        };
        streams = {words = {schema = [{name = "word"; type = "string"; required = %true}]}};
    };
}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCommand(t, time.Minute, "run", "--spec", specFile, "--data-dir", filepath.Join(dir, "data"), "--progress", "0")
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, s := range []string{"//home/t/in", "nope.txt"} {
		if !strings.Contains(stderr, s) {
			t.Errorf("stderr does not name %q:\n%s", s, stderr)
		}
	}
}

// FuzzParseSetup checks that parseSetup never panics nor hangs and that what it accepts is complete:
// every table has a path and a kind (a consumer its queue), every input a queue, a file
// and a known format, every result a query; and that every rejection says it is the setup.
func FuzzParseSetup(f *testing.F) {
	for _, ex := range []string{"word_count", "sessions", "static_count", "clickhouse_events"} {
		if b, err := os.ReadFile(filepath.Join("..", "examples", ex, "local.yson")); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		`{}`, `{tables = []}`, `{tables = {}}`, `{tables = [{kind = queue}]}`,
		`{tables = [{path = "//c"; kind = consumer}]}`,
		`{inputs = [{queue = "//q"; file = "in.txt"; format = yson}]}`,
		`{results = [{query = "a FROM [//t]"}]}`, `[1;2]`, `{states = [{file = "s.yson"}]}`, `{clickhouse = {statements = ["CREATE TABLE t (a UInt8) ENGINE = Memory"]; results = [{query = "SELECT 1"}]}}`, `{tables = [{path = "//q"; kind = queue; schema = [{name = a}]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var s *setupFile
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			s, err = parseSetup(data, "dir")
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("parseSetup(%q) has not returned within 10s", data)
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "setup:") {
				t.Fatalf("error %q does not start with setup:", err)
			}
			return
		}
		for i, tb := range s.Tables {
			if tb.Path == "" || tb.Kind == "" {
				t.Fatalf("table %d accepted without path or kind: %+v", i, tb)
			}
			if tb.Kind == "consumer" && tb.Queue == "" {
				t.Fatalf("consumer %d accepted without its queue: %+v", i, tb)
			}
		}
		for i, in := range s.Inputs {
			if (in.Queue == "") == (in.Table == "") || in.File == "" || (in.Format != "lines" && in.Format != "yson") || (in.Format == "lines" && in.Column == "") {
				t.Fatalf("input %d accepted incomplete: %+v", i, in)
			}
		}
		for i, r := range s.Results {
			if r.Query == "" {
				t.Fatalf("result %d accepted without a query", i)
			}
		}
		if s.ClickHouse != nil {
			for i, r := range s.ClickHouse.Results {
				if r.Query == "" {
					t.Fatalf("clickhouse result %d accepted without a query", i)
				}
			}
		}
	})
}
