package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ytflow/yt-flow/ytstore"
)

// Cluster is the YTsaurus the test runs against: a real cluster when YT_PROXY is set,
// else a `yt-flow local` process with a data folder (so that it can be killed and
// restarted with its data).
type Cluster struct {
	t       testing.TB
	Proxy   string
	DataDir string
	local   *Proc
	port    string
	// args are extra arguments of `yt-flow local` (NewAuthCluster).
	args []string
}

// Real reports whether the tests run against a real cluster (YT_PROXY set).
func (c *Cluster) Real() bool { return c.local == nil }

// NewCluster returns the cluster for a test.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	if p := os.Getenv("YT_PROXY"); p != "" {
		return &Cluster{t: t, Proxy: p}
	}
	c := &Cluster{t: t, DataDir: filepath.Join(t.TempDir(), "ytlocal")}
	c.startLocal("127.0.0.1:0")
	return c
}

// NewAuthCluster starts `yt-flow local --auth --users usersFile --verbose` for a test (never
// a real cluster): the test's processes authenticate with $YT_TOKEN, which the caller sets
// (t.Setenv) to a token of usersFile before.
func NewAuthCluster(t testing.TB, usersFile string) *Cluster {
	t.Helper()
	c := &Cluster{t: t, DataDir: filepath.Join(t.TempDir(), "ytlocal"), args: []string{"--auth", "--users", usersFile, "--verbose"}}
	c.startLocal("127.0.0.1:0")
	return c
}

// Local is the process of the embedded server (nil on a real cluster).
func (c *Cluster) Local() *Proc { return c.local }

func (c *Cluster) startLocal(listen string) {
	c.local = Start(c.t, "ytlocal", append([]string{"local", "--listen", listen, "--data-dir", c.DataDir}, c.args...)...)
	c.Proxy = c.local.WaitAddr(c.t, 30*time.Second)
	c.port = c.Proxy[strings.LastIndexByte(c.Proxy, ':')+1:]
}

// LocalPid is the process id of the embedded server (0 on a real cluster).
func (c *Cluster) LocalPid() int {
	if c.local == nil {
		return 0
	}
	return c.local.Pid()
}

// KillLocal kills the embedded server with SIGKILL; RestartLocal starts it again on the
// same port and data folder. Only for ytlocal (skip on a real cluster).
func (c *Cluster) KillLocal() { c.local.Kill() }

// RestartLocal starts ytlocal again on the same address and data folder.
func (c *Cluster) RestartLocal() {
	c.startLocal("127.0.0.1:" + c.port)
}

// Store opens a store for the pipeline at path.
func (c *Cluster) Store(path string) *ytstore.Store {
	c.t.Helper()
	st, err := ytstore.Open(context.Background(), ytstore.Config{Proxy: c.Proxy, Path: path, Token: os.Getenv("YT_TOKEN")})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(st.Close)
	return st
}

// Root returns a fresh Cypress folder for one test: under //tmp on a real cluster,
// //home/e2e on ytlocal.
func (c *Cluster) Root(name string) string {
	base := "//home/e2e"
	if c.Real() {
		base = "//tmp/yt-flow-e2e"
	}
	return fmt.Sprintf("%s/%s-%d-%06d", base, name, time.Now().Unix(), rand.IntN(1000000))
}
