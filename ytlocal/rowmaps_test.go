package ytlocal_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/yt"
)

type wideRow struct {
	Key   string `yson:"key,key"`
	Value int64  `yson:"value"`
	Note  string `yson:"note,omitempty"`
}

// The server reuses the row maps of one insert_rows / push_queue_producer request for the
// next (ytlocal's rowMaps): a request whose rows carry fewer columns than the previous
// request's must not see any value of those rows. Partial updates (update=true) of rows
// without "note" after full rows with one leave the stored note as it was, and fresh rows
// written that way have none.
func TestRecycledRowMapsCarryNothingOver(t *testing.T) {
	ctx, yc := newDynClient(t)
	p := newMountedTable(t, ctx, yc, schema.MustInfer(&wideRow{}))

	const n = 200
	full := make([]any, n)
	for i := range full {
		full[i] = &wideRow{Key: fmt.Sprintf("a%03d", i), Value: int64(i), Note: "full"}
	}
	require.NoError(t, yc.InsertRows(ctx, p, full, nil))
	// The same number of rows, other keys, no note: with a map left as the last request
	// filled it, every one of them would get note "full".
	partial := make([]any, n)
	for i := range partial {
		partial[i] = map[string]any{"key": fmt.Sprintf("b%03d", i), "value": int64(1000 + i)}
	}
	update := true
	require.NoError(t, yc.InsertRows(ctx, p, partial, &yt.InsertRowsOptions{Update: &update}))
	// Updates of the first rows' values only keep their notes.
	for i := range partial {
		partial[i] = map[string]any{"key": fmt.Sprintf("a%03d", i), "value": int64(2000 + i)}
	}
	require.NoError(t, yc.InsertRows(ctx, p, partial, &yt.InsertRowsOptions{Update: &update}))

	for i := 0; i < n; i++ {
		a, ok := lookupRow[wideRow](t, ctx, yc, p, fmt.Sprintf("a%03d", i))
		require.True(t, ok)
		require.Equal(t, wideRow{Key: fmt.Sprintf("a%03d", i), Value: int64(2000 + i), Note: "full"}, a)
		b, ok := lookupRow[wideRow](t, ctx, yc, p, fmt.Sprintf("b%03d", i))
		require.True(t, ok)
		require.Equal(t, wideRow{Key: fmt.Sprintf("b%03d", i), Value: int64(1000 + i)}, b, "row b%03d", i)
	}
}
