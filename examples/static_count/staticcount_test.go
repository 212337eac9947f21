package staticcount_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	farm "github.com/dgryski/go-farm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkyson "go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/app"
	_ "github.com/ytflow/yt-flow/examples/static_count"
	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/flow/flowtest"
	"github.com/ytflow/yt-flow/spec"
)

func visit(user string) flow.Message {
	return flowtest.Msg("rows", flow.Key{farm.Fingerprint64([]byte(user)), user}, flow.Row{"user": user, "page": "/"})
}

// TestCountVisits keeps a running count per user across epochs and emits one total per key
// and invocation.
func TestCountVisits(t *testing.T) {
	h := flowtest.New(t, "CountVisits", flowtest.Options{})
	r := h.Run(flowtest.Epoch{Messages: []flow.Message{visit("ann"), visit("bo"), visit("ann")}})
	got := map[string]int64{}
	for _, row := range r.Payloads("visits") {
		got[row["user"].(string)] = row["visits"].(int64)
	}
	assert.Equal(t, map[string]int64{"ann": 2, "bo": 1}, got)
	r = h.Run(flowtest.Epoch{Messages: []flow.Message{visit("ann")}})
	require.Len(t, r.Payloads("visits"), 1)
	assert.Equal(t, int64(3), r.Payloads("visits")[0]["visits"])
}

// TestSpecValidates: the example's spec parses, with the static table source finite.
func TestSpecValidates(t *testing.T) {
	cfg, err := spec.ParseConfigFile("pipeline.yson")
	require.NoError(t, err)
	require.True(t, cfg.Spec.Computations["read"].Sources["logs"].Finite())
}

// expectedVisits counts the users of logs/*.yson: "user visits" lines in the order of the
// example's result query (visits descending, then user).
func expectedVisits(t *testing.T) []string {
	files, err := filepath.Glob("logs/*.yson")
	require.NoError(t, err)
	require.Len(t, files, 3)
	counts := map[string]int{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var rows []map[string]any
		require.NoError(t, sdkyson.Unmarshal(append(append([]byte("["), data...), ']'), &rows))
		for _, r := range rows {
			counts[r["user"].(string)]++
		}
	}
	users := make([]string, 0, len(counts))
	for u := range counts {
		users = append(users, u)
	}
	sort.Slice(users, func(i, j int) bool {
		if counts[users[i]] != counts[users[j]] {
			return counts[users[i]] > counts[users[j]]
		}
		return users[i] < users[j]
	})
	var out []string
	for _, u := range users {
		out = append(out, fmt.Sprintf("%s %d", u, counts[u]))
	}
	return out
}

// TestStaticCountExampleRuns runs `yt-flow run --spec examples/static_count/pipeline.yson`
// in process on a fresh embedded server: the setup creates and loads the hourly tables, the
// static table source reads them by row ranges (several partitions per table), the pipeline
// completes and the printed counts equal those of the log files. A second run on the same
// data folder finds the tables loaded and prints the same counts.
func TestStaticCountExampleRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole example")
	}
	for _, k := range []string{"YT_PROXY", "YT_TOKEN", "YT_TOKEN_PATH", "YT_FLOW_PROXY", "YT_FLOW_TOKEN", "YT_FLOW_TOKEN_PATH", "YT_FLOW_CONFIG_FILE"} {
		t.Setenv(k, "")
	}
	want := expectedVisits(t)
	dataDir := t.TempDir()
	run := func(what string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var out, errb bytes.Buffer
		code := app.Run(ctx, []string{"run", "--spec", "pipeline.yson", "--data-dir", dataDir, "--progress", "0"}, &out, &errb)
		require.Equal(t, 0, code, "%s: stdout:\n%s\nstderr:\n%s", what, out.String(), errb.String())
		text := out.String()
		assert.Contains(t, text, "pipeline //home/static_count/pipeline completed", what)
		_, table, ok := strings.Cut(text, "visits per user:\n")
		require.True(t, ok, "%s: no result section:\n%s", what, text)
		var got []string
		for _, line := range strings.Split(table, "\n")[1:] { // after the header
			if f := strings.Fields(line); len(f) == 2 {
				got = append(got, f[0]+" "+f[1])
			}
		}
		assert.Equal(t, want, got, "%s:\n%s", what, text)
		return text
	}
	first := run("first run")
	assert.Regexp(t, regexp.MustCompile(`loaded 20 rows from logs/00.yson into //home/static_count/logs/2026-12-06T00:00:00`), first)
	second := run("second run")
	assert.Contains(t, second, "input logs/02.yson already loaded into //home/static_count/logs/2026-12-06T02:00:00")
}
