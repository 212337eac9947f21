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
)

// TestDynCreateWithTablets: tablet_count or pivot_keys among the attributes of a new
// dynamic table make its tablets, as on YTsaurus, through the SDK: an ordered table with
// tablet_count 4 has four tablets that take rows by $tablet_index, a sorted table with three
// pivot keys has three tablets starting at them; both survive a restart. Invalid values are
// refused at creation.
func TestDynCreateWithTablets(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	srv, yc := startDurable(t, ctx, dir, 0)

	ordered := ypath.Path("//tmp/" + guid.New().String())
	_, err := yc.CreateNode(ctx, ordered, yt.NodeTable, &yt.CreateNodeOptions{Attributes: map[string]any{
		"dynamic": true, "schema": schema.MustInfer(&queueRow{}), "tablet_count": 4,
	}})
	require.NoError(t, err)
	sorted := ypath.Path("//tmp/" + guid.New().String())
	_, err = yc.CreateNode(ctx, sorted, yt.NodeTable, &yt.CreateNodeOptions{Attributes: map[string]any{
		"dynamic": true, "schema": schema.MustInfer(&kvRow{}), "pivot_keys": [][]any{{}, {"g"}, {"p"}},
	}})
	require.NoError(t, err)

	check := func(yc yt.Client) {
		t.Helper()
		var count int64
		require.NoError(t, yc.GetNode(ctx, ordered.Attr("tablet_count"), &count, nil))
		assert.Equal(t, int64(4), count, "ordered table with tablet_count 4")
		require.NoError(t, yc.GetNode(ctx, sorted.Attr("tablet_count"), &count, nil))
		assert.Equal(t, int64(3), count, "sorted table with three pivot keys")
		var pivots [][]any
		require.NoError(t, yc.GetNode(ctx, sorted.Attr("pivot_keys"), &pivots, nil))
		assert.Equal(t, "[[] [g] [p]]", fmt.Sprint(pivots))
	}
	check(yc)

	require.NoError(t, migrate.MountAndWait(ctx, yc, ordered))
	require.NoError(t, yc.InsertRows(ctx, ordered, []any{&queueRow{3, "x"}}, nil))
	var tablets []struct {
		RowCount int64 `yson:"total_row_count"`
	}
	require.NoError(t, yc.GetNode(ctx, ordered.Attr("tablets"), &tablets, nil))
	require.Len(t, tablets, 4)
	assert.Equal(t, int64(1), tablets[3].RowCount, "the row went to tablet 3")

	require.NoError(t, srv.Close())
	_, yc = startDurable(t, ctx, dir, 0)
	check(yc)

	for name, attrs := range map[string]map[string]any{
		"tablet_count 0":          {"dynamic": true, "schema": schema.MustInfer(&queueRow{}), "tablet_count": 0},
		"tablet_count of static":  {"schema": schema.MustInfer(&queueRow{}), "tablet_count": 2},
		"first pivot key not []":  {"dynamic": true, "schema": schema.MustInfer(&kvRow{}), "pivot_keys": [][]any{{"a"}}},
		"tablet_count and pivots": {"dynamic": true, "schema": schema.MustInfer(&kvRow{}), "tablet_count": 2, "pivot_keys": [][]any{{}, {"a"}}},
	} {
		_, err := yc.CreateNode(ctx, ypath.Path("//tmp/"+guid.New().String()), yt.NodeTable, &yt.CreateNodeOptions{Attributes: attrs})
		assert.Error(t, err, name)
	}
}
