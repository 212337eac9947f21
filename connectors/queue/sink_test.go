package queue

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/flow"
)

func TestSyncSinkColumnFilter(t *testing.T) {
	s := &SyncSink{QueuePath: "//q", ColumnFilter: []string{"a"}}
	w, err := s.Write([]flow.Message{{Payload: flow.Row{"a": int64(1), "b": "x"}}})
	require.NoError(t, err)
	assert.Equal(t, "//q", w.Path)
	assert.Equal(t, []map[string]any{{"a": int64(1)}}, w.Rows)
	assert.False(t, w.Delete)
}
