package ytlocal_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yt"

	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytlocal/ytlocaltest"
)

func TestRunReturnsAfterCancelAndCloseIsIdempotent(t *testing.T) {
	s, err := ytlocal.Start(context.Background(), ytlocal.Config{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	rsp, err := http.Get("http://" + s.Addr() + "/hosts")
	require.NoError(t, err)
	require.NoError(t, rsp.Body.Close())
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("Run did not return after cancel")
	}
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	_, err = http.Get("http://" + s.Addr() + "/hosts")
	require.Error(t, err, "the listener must be closed")
}

func TestStartFailsOnBusyAddress(t *testing.T) {
	s := ytlocaltest.Start(t, ytlocal.Config{})
	_, err := ytlocal.Start(context.Background(), ytlocal.Config{Listen: s.Addr()})
	require.Error(t, err)
	require.Contains(t, err.Error(), s.Addr())
}

func TestObjectIDPathsFollowTheNode(t *testing.T) {
	ctx := context.Background()
	yc := newClient(t, ytlocaltest.New(t))
	id, err := yc.CreateNode(ctx, ypath.Path("//tmp/a/b"), yt.NodeMap, &yt.CreateNodeOptions{Recursive: true})
	require.NoError(t, err)
	var p string
	require.NoError(t, yc.GetNode(ctx, id.YPath().Attr("path"), &p, nil))
	require.Equal(t, "//tmp/a/b", p)
	_, err = yc.MoveNode(ctx, ypath.Path("//tmp/a"), ypath.Path("//tmp/c"), nil)
	require.NoError(t, err)
	ok, err := yc.NodeExists(ctx, id.YPath(), nil)
	require.NoError(t, err)
	require.False(t, ok, "a moved subtree gets new ids; the old id is gone")
	ok, err = yc.NodeExists(ctx, ypath.Path("//tmp/c/b"), nil)
	require.NoError(t, err)
	require.True(t, ok)
}

func TestDataDirIsExclusive(t *testing.T) {
	dir := t.TempDir()
	s := ytlocaltest.Start(t, ytlocal.Config{DataDir: dir})
	_, err := ytlocal.Start(context.Background(), ytlocal.Config{DataDir: dir})
	require.Error(t, err)
	require.Contains(t, err.Error(), "in use")
	require.NoError(t, s.Close())
	s2, err := ytlocal.Start(context.Background(), ytlocal.Config{DataDir: dir})
	require.NoError(t, err, "the directory is free again after Close")
	require.NoError(t, s2.Close())
}

func TestBuiltinObjects(t *testing.T) {
	ctx := context.Background()
	yc := newClient(t, ytlocaltest.New(t))
	var account, typ string
	require.NoError(t, yc.GetNode(ctx, ypath.Path("//tmp/@account"), &account, nil))
	require.NoError(t, yc.GetNode(ctx, ypath.Path("//sys/accounts").Child(account).Attr("type"), &typ, nil))
	require.Equal(t, "account", typ)
	require.NoError(t, yc.GetNode(ctx, ypath.Path("//sys/users/root/@type"), &typ, nil))
	require.Equal(t, "user", typ)
	_, err := yc.CreateObject(ctx, yt.NodeAccount, &yt.CreateObjectOptions{Attributes: map[string]any{"name": "team"}})
	require.NoError(t, err)
	ok, err := yc.NodeExists(ctx, ypath.Path("//sys/accounts/team"), nil)
	require.NoError(t, err)
	require.True(t, ok)
}
