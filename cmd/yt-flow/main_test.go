package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yt"
	"go.ytsaurus.tech/yt/go/yt/ythttp"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// buildBinary builds this command once per test process and returns the executable.
func buildBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "yt-flow-cmd-test-"); buildErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", filepath.Join(binDir, "yt-flow"), ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return filepath.Join(binDir, "yt-flow")
}

// TestMain removes the binary built by buildBinary.
func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// startLocal runs the yt-flow binary's local command and returns the process and the
// proxy address it printed. The process is killed in t.Cleanup if still running.
func startLocal(t *testing.T, bin string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"local", "--port", "0"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "yt-flow local must print its address")
	proxy, ok := strings.CutPrefix(strings.TrimSpace(line), "YT_PROXY=")
	require.True(t, ok, "unexpected first line %q", line)
	require.True(t, strings.HasPrefix(proxy, "127.0.0.1:"), "must bind loopback by default, got %s", proxy)
	return cmd, proxy
}

type localRow struct {
	Key   string `yson:"key"`
	Value int64  `yson:"value"`
}

func TestLocalSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	dataDir := t.TempDir()
	ctx := context.Background()

	proc, proxy := startLocal(t, bin, "--data-dir", dataDir)
	yc, err := ythttp.NewClient(&yt.Config{Proxy: proxy})
	require.NoError(t, err)
	table := ypath.Path("//tmp/durable/t")
	_, err = yt.CreateTable(ctx, yc, table, yt.WithRecursive())
	require.NoError(t, err)
	for i := range int64(3) {
		w, err := yc.WriteTable(ctx, ypath.NewRich(string(table)).SetAppend(), nil)
		require.NoError(t, err)
		require.NoError(t, w.Write(localRow{Key: "k", Value: i}))
		require.NoError(t, w.Commit())
	}
	require.NoError(t, yc.SetNode(ctx, table.Attr("owner_note"), "kept", nil))
	// Concurrent writers: every acknowledged create must survive (group commit).
	var wg sync.WaitGroup
	acked := make(chan string, 100)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				p := fmt.Sprintf("//tmp/durable/c%d-%d", g, i)
				if _, err := yc.CreateNode(ctx, ypath.Path(p), yt.NodeMap, nil); err == nil {
					acked <- p
				}
			}
		}()
	}
	wg.Wait()
	close(acked)
	yc.Stop()

	// Every acknowledged mutation was fsynced: SIGKILL loses nothing.
	require.NoError(t, proc.Process.Signal(syscall.SIGKILL))
	_ = proc.Wait()

	proc2, proxy2 := startLocal(t, bin, "--data-dir", dataDir)
	yc2, err := ythttp.NewClient(&yt.Config{Proxy: proxy2})
	require.NoError(t, err)
	defer yc2.Stop()
	r, err := yc2.ReadTable(ctx, table, nil)
	require.NoError(t, err)
	var got []localRow
	for r.Next() {
		var row localRow
		require.NoError(t, r.Scan(&row))
		got = append(got, row)
	}
	require.NoError(t, r.Err())
	require.NoError(t, r.Close())
	require.Equal(t, []localRow{{"k", 0}, {"k", 1}, {"k", 2}}, got)
	var note string
	require.NoError(t, yc2.GetNode(ctx, table.Attr("owner_note"), &note, nil))
	require.Equal(t, "kept", note)
	n := 0
	for p := range acked {
		ok, err := yc2.NodeExists(ctx, ypath.Path(p), nil)
		require.NoError(t, err)
		require.True(t, ok, "acknowledged create of %s lost", p)
		n++
	}
	require.Equal(t, 100, n)

	// SIGTERM stops it cleanly with exit code 0.
	require.NoError(t, proc2.Process.Signal(syscall.SIGTERM))
	done := make(chan error, 1)
	go func() { done <- proc2.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "yt-flow local must exit 0 on SIGTERM")
	case <-time.After(time.Minute):
		t.Fatal("yt-flow local did not exit after SIGTERM")
	}
}
