package ytlocal_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yt"
	"go.ytsaurus.tech/yt/go/yt/ythttp"

	"github.com/ytflow/yt-flow/ytlocal/ytlocaltest"
)

type kv struct {
	Key   string `yson:"key"`
	Value int64  `yson:"value"`
}

func newClient(t *testing.T, proxy string) yt.Client {
	t.Helper()
	yc, err := ythttp.NewClient(&yt.Config{Proxy: proxy})
	require.NoError(t, err)
	t.Cleanup(yc.Stop)
	return yc
}

func TestSmokeCypressAndTables(t *testing.T) {
	ctx := context.Background()
	yc := newClient(t, ytlocaltest.New(t))

	p := ypath.Path("//tmp/a/b")
	_, err := yc.CreateNode(ctx, p, yt.NodeMap, &yt.CreateNodeOptions{Recursive: true})
	require.NoError(t, err)
	ok, err := yc.NodeExists(ctx, p, nil)
	require.NoError(t, err)
	require.True(t, ok)

	require.NoError(t, yc.SetNode(ctx, p.Attr("foo"), "bar", nil))
	var foo string
	require.NoError(t, yc.GetNode(ctx, p.Attr("foo"), &foo, nil))
	require.Equal(t, "bar", foo)

	tbl := ypath.Path("//tmp/t")
	_, err = yt.CreateTable(ctx, yc, tbl)
	require.NoError(t, err)
	w, err := yc.WriteTable(ctx, tbl, nil)
	require.NoError(t, err)
	require.NoError(t, w.Write(kv{"a", 1}))
	require.NoError(t, w.Write(kv{"b", 2}))
	require.NoError(t, w.Commit())

	r, err := yc.ReadTable(ctx, tbl, nil)
	require.NoError(t, err)
	var got []kv
	for r.Next() {
		var row kv
		require.NoError(t, r.Scan(&row))
		got = append(got, row)
	}
	require.NoError(t, r.Err())
	require.NoError(t, r.Close())
	require.Equal(t, []kv{{"a", 1}, {"b", 2}}, got)

	tx, err := yc.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.CreateNode(ctx, ypath.Path("//tmp/intx"), yt.NodeMap, nil)
	require.NoError(t, err)
	ok, err = yc.NodeExists(ctx, ypath.Path("//tmp/intx"), nil)
	require.NoError(t, err)
	require.False(t, ok)
	require.NoError(t, tx.Commit())
	ok, err = yc.NodeExists(ctx, ypath.Path("//tmp/intx"), nil)
	require.NoError(t, err)
	require.True(t, ok)
}
