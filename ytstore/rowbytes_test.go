package ytstore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yt"
)

// TestRowBytesInPlace: with the pinned SDK, the table reader of pull_queue_consumer gives
// its rows' bytes in place (the fast path of rowbytes.go is taken), and they are the bytes
// Scan decodes: the same rows, read twice, once each way.
func TestRowBytesInPlace(t *testing.T) {
	s, ctx := epochStore(t)
	qs := schema.Schema{Columns: []schema.Column{{Name: "s", Type: schema.TypeString}, {Name: "a", Type: schema.TypeAny}}}
	require.NoError(t, s.EnsureUserTable(ctx, UserTable{Path: "//tmp/q", Kind: UserQueue, Schema: qs}))
	require.NoError(t, s.EnsureUserTable(ctx, UserTable{Path: "//tmp/consumer", Kind: UserConsumer, Queue: "//tmp/q"}))
	require.NoError(t, s.InsertRows(ctx, "//tmp/q", []map[string]any{
		{"s": "one", "a": int64(1)}, {"s": "two", "a": []any{"x", uint64(2)}}, {"s": "", "a": nil},
	}))

	read := func(inPlace bool) [][]byte {
		t.Helper()
		offset, partition := int64(0), int32(0)
		r, _, err := s.yc.PullQueueConsumer(ctx, ypath.Path("//tmp/consumer"), ypath.Path("//tmp/q"),
			&yt.PullQueueConsumerOptions{Offset: &offset, PartitionIndex: &partition})
		require.NoError(t, err)
		defer func() { _ = r.Close() }()
		row, ok := rowBytesOf(r)
		if inPlace {
			require.True(t, ok, "the pinned SDK's reader (%T) gives its rows in place", r)
		}
		var rows [][]byte
		for r.Next() {
			if inPlace {
				rows = append(rows, append([]byte(nil), row()...))
				continue
			}
			var raw yson.RawValue
			require.NoError(t, r.Scan(&raw))
			rows = append(rows, raw)
		}
		require.NoError(t, r.Err())
		return rows
	}
	inPlace, scanned := read(true), read(false)
	require.Len(t, scanned, 3)
	assert.Equal(t, scanned, inPlace)

	rows, err := s.PullQueue(ctx, "//tmp/q", "//tmp/consumer", 0, 0, 10)
	require.NoError(t, err)
	require.Len(t, rows, 3)
	assert.Equal(t, []any{"x", uint64(2)}, rows[1].Columns["a"])
}

// otherReader is a table reader of another type than the SDK's.
type otherReader struct{ yt.TableReader }

// TestRowBytesOtherReader: a reader of any other type is not read in place (the caller
// falls back to Scan).
func TestRowBytesOtherReader(t *testing.T) {
	_, ok := rowBytesOf(otherReader{})
	assert.False(t, ok)
	_, ok = rowBytesOf(&otherReader{})
	assert.False(t, ok)
	_, ok = rowBytesOf(nil)
	assert.False(t, ok)
}
