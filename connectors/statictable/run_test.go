package statictable_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/app"
	"github.com/ytflow/yt-flow/ytstore"
)

const appearPipeline = `{
    path = "//home/t/pipeline";
    spec = {
        computations = {
            read = {
                computation_class_name = "NYT::NFlow::TSwiftPassthroughOrderedSourceComputation";
                source_streams = {logs = {
                    source_class_name = "NYT::NFlow::NStaticTableConnector::TSource";
                    parameters = {tables_path = "//home/t/logs"; range_row_count = 100; finite = %true};
                }};
                output_stream_ids = ["rows"];
            };
            store = {
                computation_class_name = "NYT::NFlow::TPassthroughComputation";
                group_by_schema = [
                    {name = "hash"; type = "uint64"; required = %true; expression = "farm_hash(id)"};
                    {name = "id"; type = "uint64"; required = %true};
                ];
                input_stream_ids = ["rows"];
                output_stream_ids = ["stored"];
                sinks = {out = {
                    sink_class_name = "NYT::NFlow::NSortedDynamicTable::TSyncSink";
                    input_stream_ids = ["stored"];
                    parameters = {table_path = "//home/t/out"};
                }};
            };
        };
        streams = {
            rows = {schema = [{name = "id"; type = "uint64"; required = %true}]};
            stored = {schema = [{name = "id"; type = "uint64"; required = %true}]};
        };
    };
    dynamic_spec = {computations = {
        read = {batch_duration = 50; source_streams = {logs = {parameters = {max_rows_per_second = 100; throttler_period = 1000}}}};
        store = {batch_duration = 50};
    }};
}`

const appearSetup = `{
    tables = [
        {path = "//home/t/logs/2026-12-06T00:00:00"; kind = static_table; schema = [{name = id; type = uint64}]};
        {path = "//home/t/out"; kind = sorted_table; schema = [
            {name = hash; type = uint64; sort_order = ascending}; {name = id; type = uint64; sort_order = ascending}]};
    ];
    inputs = [{table = "//home/t/logs/2026-12-06T00:00:00"; file = "first.yson"; format = yson}];
    results = [
        {title = "rows"; query = "sum(1) AS rows, max(id) AS last FROM [//home/t/out] GROUP BY 1"};
    ];
}`

// watchWriter collects a command's output and calls on with each complete text so far.
type watchWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
	on  func(text string)
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.buf.Write(p)
	text := w.buf.String()
	w.mu.Unlock()
	w.on(text)
	return len(p), nil
}

func (w *watchWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestTablesAppearWhileRunning runs `yt-flow run` with a finite static table source paced to
// 100 rows a second (a burst of one throttler_period, 1s) over one table of 300 rows, and writes a second table into tables_path
// once the pipeline started: the controller lists its ranges as new partitions, and the
// pipeline completes only after both tables' 400 rows arrived, each once.
func TestTablesAppearWhileRunning(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a pipeline")
	}
	for _, k := range []string{"YT_PROXY", "YT_TOKEN", "YT_TOKEN_PATH", "YT_FLOW_PROXY", "YT_FLOW_TOKEN", "YT_FLOW_TOKEN_PATH", "YT_FLOW_CONFIG_FILE"} {
		t.Setenv(k, "")
	}
	dir := t.TempDir()
	var first strings.Builder
	for id := range 300 {
		fmt.Fprintf(&first, "{id = %du};\n", id)
	}
	for name, text := range map[string]string{"pipeline.yson": appearPipeline, "local.yson": appearSetup, "first.yson": first.String()} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	addr := regexp.MustCompile(`embedded YTsaurus at (\S+),`)
	var once sync.Once
	wrote := make(chan error, 1)
	out := &watchWriter{on: func(text string) {
		m := addr.FindStringSubmatch(text)
		if m == nil || !strings.Contains(text, "target state working") {
			return
		}
		once.Do(func() {
			go func() {
				st, err := ytstore.Open(ctx, ytstore.Config{Proxy: m[1], Path: "//home/t/pipeline"})
				if err != nil {
					wrote <- err
					return
				}
				defer st.Close()
				var rows []map[string]any
				for id := 300; id < 400; id++ {
					rows = append(rows, map[string]any{"id": uint64(id)})
				}
				sc := schema.Schema{Columns: []schema.Column{{Name: "id", Type: schema.TypeUint64}}}
				wrote <- st.WriteStaticTable(ctx, "//home/t/logs/2026-12-06T01:00:00", sc, rows)
			}()
		})
	}}
	var errb bytes.Buffer
	code := app.Run(ctx, []string{"run", "--spec", filepath.Join(dir, "pipeline.yson"), "--data-dir", filepath.Join(dir, "data"), "--progress", "0"}, out, &errb)
	text := out.String()
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", text, errb.String())
	select {
	case err := <-wrote:
		require.NoError(t, err, "writing the second table")
	default:
		t.Fatalf("the second table was never written:\n%s", text)
	}
	require.Contains(t, text, "pipeline //home/t/pipeline completed")
	require.Regexp(t, `(?m)^\s+400\s+399\s*$`, text, "every row of both tables once (the table is keyed by id):\n%s", text)
}
