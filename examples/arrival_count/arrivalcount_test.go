package arrivalcount_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkyson "go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/app"
	"github.com/ytflow/yt-flow/connectors/arrivalorder"
	_ "github.com/ytflow/yt-flow/examples/static_count"
	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytstore"
)

// TestArrivalCountExampleRuns runs `yt-flow run --spec examples/arrival_count/pipeline.yson`
// in process on a fresh embedded server, then opens the server's data again and reads the
// output directory: @progress names exactly the slot tables there are, and every user's
// largest count in them is the number of its rows in the logs.
func TestArrivalCountExampleRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole example")
	}
	for _, k := range []string{"YT_PROXY", "YT_TOKEN", "YT_TOKEN_PATH", "YT_FLOW_PROXY", "YT_FLOW_TOKEN", "YT_FLOW_TOKEN_PATH", "YT_FLOW_CONFIG_FILE"} {
		t.Setenv(k, "")
	}
	want := map[string]int64{}
	files, err := filepath.Glob("../static_count/logs/*.yson")
	require.NoError(t, err)
	require.Len(t, files, 3)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var rows []map[string]any
		require.NoError(t, sdkyson.Unmarshal(append(append([]byte("["), data...), ']'), &rows))
		for _, r := range rows {
			want[r["user"].(string)]++
		}
	}
	dataDir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	code := app.Run(ctx, []string{"run", "--spec", "pipeline.yson", "--data-dir", dataDir, "--progress", "0"}, &out, &errb)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	require.Contains(t, out.String(), "pipeline //home/arrival_count/pipeline completed")

	srv, err := ytlocal.Start(ctx, ytlocal.Config{DataDir: dataDir})
	require.NoError(t, err)
	defer func() { _ = srv.Close() }()
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: srv.Addr(), Path: "//home/arrival_count/pipeline"})
	require.NoError(t, err)
	defer st.Close()
	dir, err := arrivalorder.ReadDirectory(ctx, st, "//home/arrival_count/visits")
	require.NoError(t, err)
	require.NoError(t, dir.Check())
	require.NotEmpty(t, dir.Tables)
	got := map[string]int64{}
	for _, tb := range dir.Tables {
		for _, row := range tb.Rows {
			u := row["user"].(string)
			got[u] = max(got[u], row["visits"].(int64))
		}
	}
	require.Equal(t, want, got, "largest count per user over %d tables", len(dir.Tables))
}
