package queue

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/flow"
)

func TestBestEffortDrops(t *testing.T) {
	row := map[string]any{"data": "0123456789"}
	size := RowSize(row)
	b := NewBestEffort(nil, "//q", 3*size)
	b.Offer([]map[string]any{row, row})
	assert.Equal(t, int64(0), b.Dropped())
	b.Offer([]map[string]any{row, row, row})
	assert.Equal(t, 3, b.Len(), "the queue holds what fits in the byte limit")
	assert.Equal(t, int64(2), b.Dropped(), "what does not fit is dropped and counted, without an error")
}

func TestSyncSinkColumnFilter(t *testing.T) {
	s := &SyncSink{QueuePath: "//q", ColumnFilter: []string{"a"}}
	w, err := s.Write([]flow.Message{{Payload: flow.Row{"a": int64(1), "b": "x"}}})
	require.NoError(t, err)
	assert.Equal(t, "//q", w.Path)
	assert.Equal(t, []map[string]any{{"a": int64(1)}}, w.Rows)
	assert.False(t, w.Delete)
}
