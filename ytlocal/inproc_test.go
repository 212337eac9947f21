package ytlocal_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yt"
	"go.ytsaurus.tech/yt/go/yt/ythttp"
	"go.ytsaurus.tech/yt/go/yterrors"

	"github.com/ytflow/yt-flow/internal/inproc"
	"github.com/ytflow/yt-flow/ytlocal"
)

// inProcessClient is an SDK client whose transport asks package inproc first, as ytstore's
// does.
func inProcessClient(t testing.TB, addr string) yt.Client {
	t.Helper()
	base := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(base.CloseIdleConnections)
	yc, err := ythttp.NewClient(&yt.Config{
		Proxy:            addr,
		CompressionCodec: yt.ClientCodecNone,
		HTTPClient:       &http.Client{Transport: inproc.Transport{Base: base}},
	})
	require.NoError(t, err)
	t.Cleanup(yc.Stop)
	return yc
}

// startDurableInProcess starts a durable in-process server (closed when the test ends)
// and an SDK client of it whose transport asks package inproc first.
func startDurableInProcess(t *testing.T) (*ytlocal.Server, yt.Client) {
	t.Helper()
	srv, err := ytlocal.Start(context.Background(), ytlocal.Config{InProcess: true, DataDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return srv, inProcessClient(t, srv.Addr())
}

// TestInProcessServesTheSDK: with Config.InProcess, an SDK client of the same process
// whose transport asks package inproc gets the same answers as over TCP — Cypress reads,
// YT errors with their codes, tablet transactions, row reads — without the network.
func TestInProcessServesTheSDK(t *testing.T) {
	ctx := context.Background()
	srv, yc := startDurableInProcess(t)

	before := inproc.Served()
	_, err := yc.CreateNode(ctx, ypath.Path("//tmp/in/process"), yt.NodeMap, &yt.CreateNodeOptions{Recursive: true})
	require.NoError(t, err)
	ok, err := yc.NodeExists(ctx, ypath.Path("//tmp/in/process"), nil)
	require.NoError(t, err)
	assert.True(t, ok)
	var v any
	err = yc.GetNode(ctx, ypath.Path("//tmp/in/missing"), &v, nil)
	require.Error(t, err)
	assert.True(t, yterrors.ContainsResolveError(err), "the YT error and its code survive: %v", err)

	p := newMountedTable(t, ctx, yc, schema.MustInfer(&benchRow{}))
	tx, err := yc.BeginTabletTx(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, tx.InsertRows(ctx, p, batch(0, 100), nil))
	require.NoError(t, tx.Commit())
	r, err := yc.SelectRows(ctx, "sum(1) as n from ["+p.String()+"] group by 1", nil)
	require.NoError(t, err)
	var row struct {
		N int64 `yson:"n"`
	}
	require.True(t, r.Next())
	require.NoError(t, r.Scan(&row))
	require.NoError(t, r.Close())
	assert.Equal(t, int64(100), row.N)
	assert.Greater(t, inproc.Served()-before, uint64(5), "the requests were served in process")

	// A closed server no longer serves in process: the request goes to its address over the
	// network, where nothing listens any more.
	require.NoError(t, srv.Close())
	_, err = yc.NodeExists(ctx, ypath.Path("//tmp"), nil)
	require.Error(t, err)
	var netErr net.Error
	assert.True(t, errors.As(err, &netErr), "a network error, as for any server gone: %v", err)
}

// TestNotInProcessByDefault: a server started without InProcess is reached over TCP even by
// a transport that asks package inproc first (tests keep exercising the network path).
func TestNotInProcessByDefault(t *testing.T) {
	if ytlocalInProcessForced() {
		t.Skip(ytlocal.EnvInProcess + "=1 makes every server in-process")
	}
	ctx := context.Background()
	srv, err := ytlocal.Start(ctx, ytlocal.Config{})
	require.NoError(t, err)
	defer srv.Close()
	yc := inProcessClient(t, srv.Addr())
	before := inproc.Served()
	ok, err := yc.NodeExists(ctx, ypath.Path("//tmp"), nil)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, before, inproc.Served())
}

func ytlocalInProcessForced() bool { return os.Getenv(ytlocal.EnvInProcess) == "1" }

// BenchmarkRequest measures one cheap request (generate_timestamp) through the SDK over
// loopback TCP and in process (Config.InProcess, a transport that asks package inproc
// first): cpu-µs/req is the CPU of both ends together (they share the process).
func BenchmarkRequest(b *testing.B) {
	for _, inProcess := range []bool{false, true} {
		name := "tcp"
		if inProcess {
			name = "in_process"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			srv, err := ytlocal.Start(ctx, ytlocal.Config{InProcess: inProcess})
			require.NoError(b, err)
			defer srv.Close()
			yc := inProcessClient(b, srv.Addr())
			served := inproc.Served()
			b.ResetTimer()
			cpu := cpuTime()
			for i := 0; i < b.N; i++ {
				if _, err := yc.GenerateTimestamp(ctx, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N)/1e3, "cpu-µs/req")
			if got := inproc.Served() - served; inProcess != (got >= uint64(b.N)) {
				b.Fatalf("%d of %d requests served in process", got, b.N)
			}
		})
	}
}

// TestCloseWaitsForInProcessRequests: Close does not release the server's state while a
// request it admitted in process is still being served (here: waiting for its fsync), as
// http.Server.Shutdown waits for the requests of its connections; the request completes.
func TestCloseWaitsForInProcessRequests(t *testing.T) {
	ctx := context.Background()
	srv, yc := startDurableInProcess(t)

	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	restore := ytlocal.SetSyncHook(func() {
		once.Do(func() { // only the first fsync: the request's
			close(entered)
			<-release
		})
	})
	defer restore()
	created := make(chan error, 1)
	go func() {
		_, err := yc.CreateNode(ctx, ypath.Path("//tmp/held"), yt.NodeMap, nil)
		created <- err
	}()
	<-entered // the request is in its fsync, inside the server's handler
	closed := make(chan error, 1)
	go func() { closed <- srv.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a request admitted in process was still served", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	require.NoError(t, <-created, "the request admitted before Close completes")
	require.NoError(t, <-closed)
}
