package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/ytflow/yt-flow/internal/chserver"
)

// TestClickHouseEmbeddedThroughTheBinary runs examples/clickhouse_events with
// --clickhouse-embedded through the real binary: it starts a ClickHouse server (chDB) as its
// own child process, creates the example's table from local.yson, runs the pipeline to
// completion and prints the table's counts: 200 events, 200 distinct ids, 7 users.
func TestClickHouseEmbeddedThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	chserver.Lib(t) // $CHDB_LIB, or skip (fail under CI=true)
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--spec", filepath.Join("..", "..", "examples", "clickhouse_events", "pipeline.yson"),
		"--clickhouse-embedded", "--data-dir", filepath.Join(t.TempDir(), "data"), "--progress", "0")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() }) // by pid, also when the test fails; its server dies with it
	if err := cmd.Wait(); err != nil {
		t.Fatalf("yt-flow run: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, re := range []string{
		`(?m)^embedded ClickHouse \(chDB\) at 127\.0\.0\.1:[0-9]+ \(HTTP 127\.0\.0\.1:[0-9]+\), data in .*: 1 sink\(s\) pointed at it$`,
		`(?m)^pipeline //home/clickhouse_events/pipeline completed`,
		`(?m)^events in ClickHouse:\n +events +ids +users *\n +200 +200 +7 *$`,
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("output does not match %s:\n%s", re, text)
		}
	}
}
