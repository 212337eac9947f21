package clickhouseevents_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	farm "github.com/dgryski/go-farm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/app"
	_ "github.com/ytflow/yt-flow/examples/clickhouse_events"
	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/flow/flowtest"
	"github.com/ytflow/yt-flow/internal/chserver"
	"github.com/ytflow/yt-flow/spec"
)

func TestMain(m *testing.M) {
	code := m.Run()
	chserver.RemoveBinary()
	os.Exit(code)
}

func event(id uint64, user string) flow.Message {
	return flowtest.Msg("events", flow.Key{farm.Fingerprint64([]byte(user)), user}, flow.Row{"id": id, "user": user, "action": "view"})
}

// TestNumberEvents numbers each user's events from 1 on, across epochs.
func TestNumberEvents(t *testing.T) {
	h := flowtest.New(t, "NumberEvents", flowtest.Options{})
	r := h.Run(flowtest.Epoch{Messages: []flow.Message{event(1, "ann"), event(2, "ann")}})
	var seqs []int64
	for _, row := range r.Payloads("numbered") {
		seqs = append(seqs, row["user_seq"].(int64))
	}
	assert.Equal(t, []int64{1, 2}, seqs)
	r = h.Run(flowtest.Epoch{Messages: []flow.Message{event(3, "ann")}})
	require.Len(t, r.Payloads("numbered"), 1)
	assert.Equal(t, int64(3), r.Payloads("numbered")[0]["user_seq"])
	assert.Equal(t, uint64(3), r.Payloads("numbered")[0]["id"])
}

// TestSpecValidates: the example's spec parses.
func TestSpecValidates(t *testing.T) {
	cfg, err := spec.ParseConfigFile("pipeline.yson")
	require.NoError(t, err)
	require.Contains(t, cfg.Spec.Computations["number"].Sinks, "clickhouse")
}

// Table is the ClickHouse table README.md tells the user to create.
const Table = `CREATE TABLE events (id UInt64, user String, action String, user_seq Int64)
ENGINE = MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 1000`

// TestClickHouseEventsExampleRuns runs the example with `yt-flow run` in process against a
// real ClickHouse server (chDB) whose port replaces 9000 in the spec: the pipeline completes
// and the table holds each of the 200 events once, numbered 1..n per user.
func TestClickHouseEventsExampleRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole example")
	}
	for _, k := range []string{"YT_PROXY", "YT_TOKEN", "YT_TOKEN_PATH", "YT_FLOW_PROXY", "YT_FLOW_TOKEN", "YT_FLOW_TOKEN_PATH", "YT_FLOW_CONFIG_FILE"} {
		t.Setenv(k, "")
	}
	srv := chserver.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{srv.TCPAddr}})
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.Exec(ctx, Table))

	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	require.Contains(t, strings.Join(strings.Fields(string(readme)), " "), strings.Join(strings.Fields(Table), " "), "README.md shows the table of the test")

	dir := t.TempDir()
	_, port, _ := strings.Cut(srv.TCPAddr, ":")
	text, err := os.ReadFile("pipeline.yson")
	require.NoError(t, err)
	patched := strings.Replace(string(text), "port = 9000;", "port = "+port+";", 1)
	require.NotEqual(t, string(text), patched)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pipeline.yson"), []byte(patched), 0o644))
	for _, f := range []string{"local.yson", "input.yson"} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o644))
	}

	var out, errb bytes.Buffer
	code := app.Run(ctx, []string{"run", "--spec", filepath.Join(dir, "pipeline.yson"), "--data-dir", t.TempDir(), "--progress", "0"}, &out, &errb)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	assert.Contains(t, out.String(), "pipeline //home/clickhouse_events/pipeline completed")

	var rows, ids, pairs uint64
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(), uniqExact(id), uniqExact(user, user_seq) FROM events").Scan(&rows, &ids, &pairs))
	assert.Equal(t, [3]uint64{200, 200, 200}, [3]uint64{rows, ids, pairs}, "each event once, each number once")
	var bad uint64
	require.NoError(t, conn.QueryRow(ctx, "SELECT count() FROM (SELECT user, count() AS n, max(user_seq) AS m, min(user_seq) AS lo FROM events GROUP BY user) WHERE n != m OR lo != 1").Scan(&bad))
	assert.Zero(t, bad, "every user numbered 1..n without gaps")
}
