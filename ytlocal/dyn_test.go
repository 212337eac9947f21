package ytlocal_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/migrate"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yt"
	"go.ytsaurus.tech/yt/go/yt/ythttp"

	"github.com/ytflow/yt-flow/ytlocal/ytlocaltest"
)

type kvRow struct {
	Key   string `yson:"key,key"`
	Value int64  `yson:"value"`
}

type kvKey struct {
	Key string `yson:"key"`
}

func newDynClient(t *testing.T) (context.Context, yt.Client) {
	t.Helper()
	addr := ytlocaltest.New(t)
	yc, err := ythttp.NewClient(&yt.Config{Proxy: addr})
	require.NoError(t, err)
	t.Cleanup(yc.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx, yc
}

func newSortedTable(t *testing.T, ctx context.Context, yc yt.Client) ypath.Path {
	t.Helper()
	p := ypath.Path("//tmp/" + guid.New().String())
	require.NoError(t, migrate.Create(ctx, yc, p, schema.MustInfer(&kvRow{})))
	require.NoError(t, migrate.MountAndWait(ctx, yc, p))
	return p
}

func lookupValue(t *testing.T, ctx context.Context, yc yt.Client, p ypath.Path, key string) (int64, bool) {
	t.Helper()
	r, err := yc.LookupRows(ctx, p, []any{&kvKey{key}}, nil)
	require.NoError(t, err)
	defer r.Close()
	if !r.Next() {
		require.NoError(t, r.Err())
		return 0, false
	}
	var row kvRow
	require.NoError(t, r.Scan(&row))
	return row.Value, true
}

func TestDynInsertLookupSelect(t *testing.T) {
	ctx, yc := newDynClient(t)
	p := newSortedTable(t, ctx, yc)
	require.NoError(t, yc.InsertRows(ctx, p, []any{&kvRow{"b", 2}, &kvRow{"a", 1}}, nil))
	v, ok := lookupValue(t, ctx, yc, p, "a")
	require.True(t, ok)
	assert.Equal(t, int64(1), v)

	r, err := yc.SelectRows(ctx, fmt.Sprintf("key, value FROM [%s] WHERE value > 0", p), nil)
	require.NoError(t, err)
	defer r.Close()
	var got []kvRow
	for r.Next() {
		var row kvRow
		require.NoError(t, r.Scan(&row))
		got = append(got, row)
	}
	require.NoError(t, r.Err())
	assert.Equal(t, []kvRow{{"a", 1}, {"b", 2}}, got)

	var state string
	require.NoError(t, yc.GetNode(ctx, p.Attr("tablet_state"), &state, nil))
	assert.Equal(t, "mounted", state)
}
