package totals_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkyson "go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/app"
	_ "github.com/ytflow/yt-flow/examples/totals"
)

// Model is the totals table that events produce: user -> "total events", users whose
// account a negative amount closed (and who had no event since) absent.
func Model(events []map[string]any) map[string]string {
	type acc struct{ total, events int64 }
	m := map[string]*acc{}
	for _, e := range events {
		u, a := e["user"].(string), e["amount"].(int64)
		if a < 0 {
			delete(m, u)
			continue
		}
		if m[u] == nil {
			m[u] = &acc{}
		}
		m[u].total += a
		m[u].events++
	}
	out := map[string]string{}
	for u, a := range m {
		out[u] = fmt.Sprintf("%d %d", a.total, a.events)
	}
	return out
}

func readEvents(t *testing.T) []map[string]any {
	data, err := os.ReadFile("events.yson")
	require.NoError(t, err)
	var rows []map[string]any
	require.NoError(t, sdkyson.Unmarshal(append(append([]byte("["), data...), ']'), &rows))
	return rows
}

// TestExternalStateFollowsModel runs `yt-flow run --spec examples/totals/pipeline.yson` in
// process on a fresh embedded server: KeepTotals keeps each user's total in the external
// state table, deleting closed accounts, and the table the run prints equals the model the
// test computes from events.yson (every user, total and event count; closed accounts absent).
func TestExternalStateFollowsModel(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole example")
	}
	for _, k := range []string{"YT_PROXY", "YT_TOKEN", "YT_TOKEN_PATH", "YT_FLOW_PROXY", "YT_FLOW_TOKEN", "YT_FLOW_TOKEN_PATH", "YT_FLOW_CONFIG_FILE"} {
		t.Setenv(k, "")
	}
	events := readEvents(t)
	want := Model(events)
	require.NotEmpty(t, want)
	require.Less(t, len(want), 8, "events.yson closes some account for good")
	got, text := runExample(t, t.TempDir(), "pipeline.yson", "", "//home/totals/pipeline", "totals per user")
	users := make([]string, 0, len(want))
	for u := range want {
		users = append(users, u)
	}
	sort.Strings(users)
	assert.Equal(t, want, got, "totals table of %d events (users %v):\n%s", len(events), users, text)
}

// runExample runs spec (with setup, when not "") on the embedded server in dataDir and
// returns the result section title as user -> "total events", and the run's output.
func runExample(t *testing.T, dataDir, spec, setup, pipeline, title string) (map[string]string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"run", "--spec", spec, "--data-dir", dataDir, "--progress", "0"}
	if setup != "" {
		args = append(args, "--setup", setup)
	}
	var out, errb bytes.Buffer
	code := app.Run(ctx, args, &out, &errb)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	text := out.String()
	assert.Contains(t, text, "pipeline "+pipeline+" completed")
	_, table, ok := strings.Cut(text, title+":\n")
	require.True(t, ok, "no result section %q:\n%s", title, text)
	got := map[string]string{}
	for _, line := range strings.Split(table, "\n")[1:] { // after the header
		if f := strings.Fields(line); len(f) == 3 {
			got[f[0]] = f[1] + " " + f[2]
		}
	}
	return got, text
}

// TestTotalsReportRuns runs pipeline.yson, then report.yson on the same data: the service log
// source reads the totals table KeepTotals kept (one cycle, two hash ranges) and the report
// table ReportTotals fills holds every row of it — the model of events.yson.
func TestTotalsReportRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole example")
	}
	for _, k := range []string{"YT_PROXY", "YT_TOKEN", "YT_TOKEN_PATH", "YT_FLOW_PROXY", "YT_FLOW_TOKEN", "YT_FLOW_TOKEN_PATH", "YT_FLOW_CONFIG_FILE"} {
		t.Setenv(k, "")
	}
	want := Model(readEvents(t))
	dataDir := t.TempDir()
	runExample(t, dataDir, "pipeline.yson", "", "//home/totals/pipeline", "totals per user")
	got, text := runExample(t, dataDir, "report.yson", "report.local.yson", "//home/totals/report_pipeline", "report")
	assert.Equal(t, want, got, "report:\n%s", text)
}

// TestCappedTotalsRuns runs capped.yson: KeepCappedTotals reads each user's cap from the joined
// external state (external_state_joiners, caps.yson) and never writes it; the capped totals
// table equals the model with each total capped, and the caps table is unchanged.
func TestCappedTotalsRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole example")
	}
	for _, k := range []string{"YT_PROXY", "YT_TOKEN", "YT_TOKEN_PATH", "YT_FLOW_PROXY", "YT_FLOW_TOKEN", "YT_FLOW_TOKEN_PATH", "YT_FLOW_CONFIG_FILE"} {
		t.Setenv(k, "")
	}
	caps := map[string]int64{"alice": 300, "bob": 100, "erin": 1000} // caps.yson
	want := Model(readEvents(t))
	capped := 0
	for u, c := range caps {
		var total, events int64
		if _, err := fmt.Sscanf(want[u], "%d %d", &total, &events); err != nil {
			continue // a closed account
		}
		if total > c {
			want[u] = fmt.Sprintf("%d %d", c, events)
			capped++
		}
	}
	require.Equal(t, 2, capped, "caps.yson caps two users' totals")
	got, text := runExample(t, t.TempDir(), "capped.yson", "capped.local.yson", "//home/totals/capped_pipeline", "capped totals")
	assert.Equal(t, want, got, "capped totals:\n%s", text)
}

// TestAuditRuns runs audit.yson: AuditEvents reads CountEvents' committed internal state
// through a state joiner; every user's audited count equals its number of events in
// events.yson, and no message read a count below the one it carried (behind 0).
func TestAuditRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole example")
	}
	for _, k := range []string{"YT_PROXY", "YT_TOKEN", "YT_TOKEN_PATH", "YT_FLOW_PROXY", "YT_FLOW_TOKEN", "YT_FLOW_TOKEN_PATH", "YT_FLOW_CONFIG_FILE"} {
		t.Setenv(k, "")
	}
	want := map[string]string{}
	counts := map[string]int{}
	for _, e := range readEvents(t) {
		counts[e["user"].(string)]++
	}
	for u, n := range counts {
		want[u] = fmt.Sprintf("%d 0", n)
	}
	got, text := runExample(t, t.TempDir(), "audit.yson", "audit.local.yson", "//home/totals/audit_pipeline", "audit")
	assert.Equal(t, want, got, "audit:\n%s", text)
}

// TestSeveralRowsPerKeyRuns runs buckets.yson: KeepBuckets keeps per-user amount buckets in
// an external state table keyed by hash, user and bucket (several rows per key: Rows, SetRow,
// DeleteRow, Delete); the table equals the model computed from events.yson row by row.
func TestSeveralRowsPerKeyRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole example")
	}
	for _, k := range []string{"YT_PROXY", "YT_TOKEN", "YT_TOKEN_PATH", "YT_FLOW_PROXY", "YT_FLOW_TOKEN", "YT_FLOW_TOKEN_PATH", "YT_FLOW_CONFIG_FILE"} {
		t.Setenv(k, "")
	}
	type acc struct{ count, total int64 }
	model := map[string]map[int64]*acc{}
	deletes := 0
	for _, e := range readEvents(t) {
		u, a := e["user"].(string), e["amount"].(int64)
		switch {
		case a < 0:
			delete(model, u)
		case a%7 == 0:
			delete(model[u], a/25)
			deletes++
		default:
			if model[u] == nil {
				model[u] = map[int64]*acc{}
			}
			if model[u][a/25] == nil {
				model[u][a/25] = &acc{}
			}
			model[u][a/25].count++
			model[u][a/25].total += a
		}
	}
	require.Positive(t, deletes, "events.yson deletes some bucket row")
	want := map[string]string{}
	for u, bs := range model {
		for b, a := range bs {
			want[fmt.Sprintf("%s/%d", u, b)] = fmt.Sprintf("%d %d", a.count, a.total)
		}
	}
	most := 0
	for _, bs := range model {
		most = max(most, len(bs))
	}
	require.GreaterOrEqual(t, most, 2, "some user has several rows")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	code := app.Run(ctx, []string{"run", "--spec", "buckets.yson", "--setup", "buckets.local.yson", "--data-dir", t.TempDir(), "--progress", "0"}, &out, &errb)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	_, table, ok := strings.Cut(out.String(), "buckets:\n")
	require.True(t, ok, out.String())
	got := map[string]string{}
	for _, line := range strings.Split(table, "\n")[1:] {
		if f := strings.Fields(line); len(f) == 4 {
			got[f[0]+"/"+f[1]] = f[2] + " " + f[3]
		}
	}
	assert.Equal(t, want, got, "buckets:\n%s", out.String())
}
