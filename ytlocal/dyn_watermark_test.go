package ytlocal_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/migrate"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yt"
)

type stampRow struct {
	Key   string  `yson:"key,key"`
	Stamp *uint64 `yson:"stamp"`
}

func stampKeys(t *testing.T, ctx context.Context, yc yt.Client, p ypath.Path) []string {
	t.Helper()
	r, err := yc.SelectRows(ctx, fmt.Sprintf("key FROM [%s]", p), nil)
	require.NoError(t, err)
	defer r.Close()
	var keys []string
	for r.Next() {
		var row struct {
			Key string `yson:"key"`
		}
		require.NoError(t, r.Scan(&row))
		keys = append(keys, row.Key)
	}
	require.NoError(t, r.Err())
	return keys
}

// TestWatermarkRowMerger: a sorted table with @row_merger_type "watermark" loses the rows
// whose column is below the watermark set in @custom_runtime_data (null values stay); a
// table without the merger type keeps them; the merge survives a restart on the data dir.
func TestWatermarkRowMerger(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, yc := startDurable(t, ctx, dir, 0)
	sc := schema.MustInfer(&stampRow{})
	merged, plain := ypath.Path("//tmp/merged"), ypath.Path("//tmp/plain")
	_, err := yc.CreateNode(ctx, merged, yt.NodeTable, &yt.CreateNodeOptions{Attributes: map[string]any{
		"dynamic": true, "schema": sc, "row_merger_type": "watermark", "min_data_versions": 0, "min_data_ttl": 0,
	}})
	require.NoError(t, err)
	_, err = yc.CreateNode(ctx, plain, yt.NodeTable, &yt.CreateNodeOptions{Attributes: map[string]any{"dynamic": true, "schema": sc}})
	require.NoError(t, err)
	u := func(v uint64) *uint64 { return &v }
	rows := []any{&stampRow{"a", u(5)}, &stampRow{"b", u(10)}, &stampRow{"c", u(15)}, &stampRow{"d", nil}, &stampRow{"e", u(9)}}
	for _, p := range []ypath.Path{merged, plain} {
		require.NoError(t, migrate.MountAndWait(ctx, yc, p))
		require.NoError(t, yc.InsertRows(ctx, p, rows, nil))
		require.NoError(t, yc.SetNode(ctx, p.Attr("custom_runtime_data"), map[string]any{
			"watermark": map[string]any{"column_name": "stamp", "watermark": uint64(10)},
		}, nil))
	}
	assert.Equal(t, []string{"b", "c", "d"}, stampKeys(t, ctx, yc, merged), "rows below 10 dropped, null kept")
	assert.Equal(t, []string{"a", "b", "c", "d", "e"}, stampKeys(t, ctx, yc, plain), "no watermark merger: all rows kept")
	_, ok := lookupRow[stampRow](t, ctx, yc, merged, "a")
	assert.False(t, ok, "a dropped row is gone for lookups too")

	// A row written again after the merge is a new row; a higher watermark takes it.
	require.NoError(t, yc.InsertRows(ctx, merged, []any{&stampRow{"a", u(12)}}, nil))
	assert.Equal(t, []string{"a", "b", "c", "d"}, stampKeys(t, ctx, yc, merged))
	require.NoError(t, yc.SetNode(ctx, merged.Attr("custom_runtime_data").Child("watermark").Child("watermark"), uint64(13), nil))
	assert.Equal(t, []string{"c", "d"}, stampKeys(t, ctx, yc, merged))

	require.NoError(t, srv.Close())
	_, yc = startDurable(t, ctx, dir, 0)
	assert.Equal(t, []string{"c", "d"}, stampKeys(t, ctx, yc, merged), "the merge is replayed after a restart")
	assert.Equal(t, []string{"a", "b", "c", "d", "e"}, stampKeys(t, ctx, yc, plain))
}
