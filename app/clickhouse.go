package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	sdkyson "go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/internal/chdb"
	"github.com/ytflow/yt-flow/yson"
)

func init() {
	register(&command{
		name:     "clickhouse-local",
		summary:  "run a ClickHouse server from chDB's libchdb.so on 127.0.0.1, for trying ClickHouse sinks on one machine",
		setup:    setupClickHouseLocal,
		examples: []string{"yt-flow clickhouse-local --lib /path/libchdb.so --data-dir ./ch-data --port 9000 --http-port 8123"},
	})
}

func setupClickHouseLocal(fs *flag.FlagSet, env *environ) runFunc {
	lib := fs.String("lib", "", "path of chDB's libchdb.so (default $"+chdb.LibEnv+"; get it: "+chdb.Install+")")
	dataDir := fs.String("data-dir", "", "data directory (required; kept across restarts)")
	port := fs.Int("port", 9000, "native protocol port on 127.0.0.1")
	httpPort := fs.Int("http-port", 8123, "HTTP port on 127.0.0.1")
	fs.Usage = func() {
		fmt.Fprintln(env.stderr, "usage: yt-flow clickhouse-local --data-dir DIR [--lib FILE] [--port N] [--http-port N]")
		fs.PrintDefaults()
	}
	return func(ctx context.Context, s *settings) int {
		l := *lib
		if l == "" {
			l = os.Getenv(chdb.LibEnv)
		}
		if l == "" || *dataDir == "" {
			fmt.Fprintf(env.stderr, "yt-flow clickhouse-local: --data-dir and --lib (or $%s) are required; get the library: %s\n", chdb.LibEnv, chdb.Install)
			return 2
		}
		if err := os.MkdirAll(*dataDir, 0o755); err != nil {
			fmt.Fprintf(env.stderr, "yt-flow clickhouse-local: %v\n", err)
			return 1
		}
		fmt.Fprintf(env.stdout, "ClickHouse (chDB) starting on 127.0.0.1:%d (HTTP 127.0.0.1:%d), data in %s; stop it with Ctrl-C\n", *port, *httpPort, *dataDir)
		// The library serves until the process ends.
		err := chdb.Serve(l, *dataDir, *port, *httpPort, "")
		fmt.Fprintf(env.stderr, "yt-flow clickhouse-local: %v\n", err)
		return 1
	}
}

// clickHouseSetup is the clickhouse block of a setup file, used with --clickhouse-embedded:
// statements run on the embedded server before the pipeline starts (CREATE TABLE …), and
// queries whose results are printed at the end.
type clickHouseSetup struct {
	Statements []string
	Results    []setupResult
}

func parseClickHouseSetup(w *yson.Walker, n *yson.Node, path string) *clickHouseSetup {
	c := &clickHouseSetup{}
	f := w.Fields(n, path)
	if sn := f.Node("statements"); sn != nil {
		c.Statements, _ = w.Strings(sn, f.Path("statements"), false)
	}
	if rn := f.Node("results"); rn != nil {
		eachList(w, rn, f.Path("results"), func(i int, n *yson.Node, p string) {
			rf := w.Fields(n, p)
			c.Results = append(c.Results, setupResult{Title: rf.String("title", ""), Query: rf.RequiredString("query")})
			rf.Close()
		})
	}
	f.Close()
	return c
}

// embeddedClickHouse is `yt-flow run --clickhouse-embedded`: a ClickHouse server (chDB) in a
// child process of this binary (`yt-flow clickhouse-local`) on loopback, the spec's
// ClickHouse sinks pointed at it, the setup's statements run on it before the pipeline and
// its result queries after. It is for trying a ClickHouse pipeline on one machine.
type embeddedClickHouse struct {
	cmd       *exec.Cmd
	done      chan struct{}
	tcp, http string // 127.0.0.1:port
	logPath   string
}

// startEmbeddedClickHouse starts the server over dataDir/clickhouse and waits until it
// answers.
func startEmbeddedClickHouse(ctx context.Context, dataDir string) (*embeddedClickHouse, error) {
	lib := os.Getenv(chdb.LibEnv)
	if lib == "" {
		return nil, fmt.Errorf("clickhouse-embedded: set %s to chDB's libchdb.so (get it: %s)", chdb.LibEnv, chdb.Install)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("clickhouse-embedded: %w", err)
	}
	dir := filepath.Join(dataDir, "clickhouse")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("clickhouse-embedded: %w", err)
	}
	ports, err := loopbackPorts(2)
	if err != nil {
		return nil, fmt.Errorf("clickhouse-embedded: %w", err)
	}
	e := &embeddedClickHouse{done: make(chan struct{}), logPath: filepath.Join(dir, "server.log"),
		tcp: fmt.Sprintf("127.0.0.1:%d", ports[0]), http: fmt.Sprintf("127.0.0.1:%d", ports[1])}
	logFile, err := os.OpenFile(e.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("clickhouse-embedded: %w", err)
	}
	defer logFile.Close()
	e.cmd = exec.Command(exe, "clickhouse-local", "--lib", lib, "--data-dir", filepath.Join(dir, "data"),
		"--port", fmt.Sprint(ports[0]), "--http-port", fmt.Sprint(ports[1]))
	e.cmd.Stdout, e.cmd.Stderr = logFile, logFile
	// Its own process group, killed by close; and killed with this process if it dies.
	e.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := e.cmd.Start(); err != nil {
		return nil, fmt.Errorf("clickhouse-embedded: start %s clickhouse-local: %w", exe, err)
	}
	go func() { _ = e.cmd.Wait(); close(e.done) }()
	deadline := time.Now().Add(90 * time.Second)
	for {
		if _, err := e.query(ctx, "SELECT 1"); err == nil {
			return e, nil
		}
		select {
		case <-e.done:
			return nil, fmt.Errorf("clickhouse-embedded: the server exited while starting; its log %s ends:\n%s", e.logPath, logTail(e.logPath))
		case <-ctx.Done():
			e.close()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			e.close()
			return nil, fmt.Errorf("clickhouse-embedded: the server did not answer within 90s; its log %s ends:\n%s", e.logPath, logTail(e.logPath))
		}
	}
}

// close kills the server's process group and waits for it.
func (e *embeddedClickHouse) close() {
	if e == nil || e.cmd == nil || e.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
	<-e.done
}

// query runs q over the HTTP interface and returns the response body.
func (e *embeddedClickHouse) query(ctx context.Context, q string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+e.http+"/?"+url.Values{"default_format": {"TSVWithNames"}}.Encode(), strings.NewReader(q))
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	return string(b), nil
}

// prepare runs the setup's statements.
func (e *embeddedClickHouse) prepare(ctx context.Context, c *clickHouseSetup) error {
	if c == nil {
		return nil
	}
	for i, s := range c.Statements {
		if _, err := e.query(ctx, s); err != nil {
			return fmt.Errorf("clickhouse-embedded: setup clickhouse/statements/%d: %w", i, err)
		}
	}
	return nil
}

// report prints the results of the setup's queries as aligned columns.
func (e *embeddedClickHouse) report(ctx context.Context, c *clickHouseSetup, say func(string, ...any)) error {
	if c == nil {
		return nil
	}
	for _, r := range c.Results {
		out, err := e.query(ctx, r.Query)
		if err != nil {
			return fmt.Errorf("result query %q: %w", r.Query, err)
		}
		say("\n%s:", cmpOr(r.Title, r.Query))
		say("%s", alignTSV(out))
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// alignTSV renders TSVWithNames output as aligned, indented columns.
func alignTSV(tsv string) string {
	lines := strings.Split(strings.TrimRight(tsv, "\n"), "\n")
	var rows [][]string
	widths := []int{}
	for _, l := range lines {
		cells := strings.Split(l, "\t")
		for i, c := range cells {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], len(c))
		}
		rows = append(rows, cells)
	}
	if len(rows) <= 1 {
		return "  (no rows)"
	}
	var b strings.Builder
	for _, cells := range rows {
		var line strings.Builder
		line.WriteString(" ")
		for i, c := range cells {
			fmt.Fprintf(&line, " %-*s", widths[i], c)
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// pointClickHouseSinks returns static with every ClickHouse sink's hosts (and every shard of a
// sharded one) set to addr, and how many sinks it changed.
func pointClickHouseSinks(static []byte, addr string) ([]byte, int, error) {
	var sp map[string]any
	if err := sdkyson.Unmarshal(static, &sp); err != nil {
		return nil, 0, fmt.Errorf("clickhouse-embedded: decode the spec: %w", err)
	}
	n := 0
	comps, _ := sp["computations"].(map[string]any)
	for _, c := range comps {
		cm, _ := c.(map[string]any)
		sinks, _ := cm["sinks"].(map[string]any)
		for _, s := range sinks {
			sm, _ := s.(map[string]any)
			cls, _ := sm["sink_class_name"].(string)
			if !strings.Contains(strings.ToLower(cls), "clickhouse") {
				continue
			}
			p, _ := sm["parameters"].(map[string]any)
			if p == nil {
				continue
			}
			delete(p, "host")
			delete(p, "port")
			if shards, ok := p["shard_hosts"].(map[string]any); ok {
				for k := range shards {
					shards[k] = []any{addr}
				}
			} else {
				p["hosts"] = []any{addr}
			}
			n++
		}
	}
	if n == 0 {
		return nil, 0, errors.New("clickhouse-embedded: the spec has no ClickHouse sink")
	}
	out, err := sdkyson.Marshal(sp)
	if err != nil {
		return nil, 0, fmt.Errorf("clickhouse-embedded: encode the spec: %w", err)
	}
	return out, n, nil
}

// loopbackPorts returns n ports of 127.0.0.1 free at the time of the call.
func loopbackPorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// logTail returns the last lines of a log file.
func logTail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
