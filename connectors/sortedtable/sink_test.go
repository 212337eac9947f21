package sortedtable

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/flow"
)

func TestSinkWrite(t *testing.T) {
	msgs := []flow.Message{{Payload: flow.Row{"k": "a", "v": int64(1), "x": true}}, {Payload: flow.Row{"k": "a", "v": int64(2)}}}

	w, err := (&Sink{TablePath: "//t"}).Write(msgs)
	require.NoError(t, err)
	assert.Equal(t, "//t", w.Path)
	assert.False(t, w.Delete)
	assert.Equal(t, []map[string]any{{"k": "a", "v": int64(1), "x": true}, {"k": "a", "v": int64(2)}}, w.Rows, "rows in message order")

	w, err = (&Sink{TablePath: "//t", ColumnFilter: []string{"k"}, DeleteRows: true}).Write(msgs)
	require.NoError(t, err)
	assert.True(t, w.Delete)
	assert.Equal(t, []map[string]any{{"k": "a"}, {"k": "a"}}, w.Rows, "delete_rows keeps the key columns of the filter")
}
