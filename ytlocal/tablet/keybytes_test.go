package tablet

import (
	"fmt"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"
)

// TestRowKeysOwnTheirBytes: the encoded keys of one insert come from one buffer
// (appendRowOps); a row added to a table not merged by watermark keeps a copy of its key, so
// that it does not keep the buffer of the whole call alive, and a row of a table merged by
// watermark keeps its view of the buffer (its rows go together). Rows read back unchanged.
func TestRowKeysOwnTheirBytes(t *testing.T) {
	s := schema.Schema{Columns: []schema.Column{
		{Name: "k", Type: schema.TypeString, SortOrder: schema.SortAscending},
		{Name: "ts", Type: schema.TypeUint64},
	}}
	rows := []map[string]any{{"k": "a-key", "ts": uint64(7)}, {"k": "b-key", "ts": uint64(8)}}
	for _, merged := range []bool{false, true} {
		e := New(Config{})
		newMounted(t, e, "t", s)
		if merged {
			_, err := e.MergeWatermark("t", "ts", 0)
			require.NoError(t, err)
		}
		insert(t, e, "t", InsertOptions{}, rows...)
		tb := e.tables["t"]
		var a, b string
		for k, r := range tb.rows {
			switch r.key[0] {
			case "a-key":
				a = k
			case "b-key":
				b = k
			}
		}
		require.NotEmpty(t, a)
		require.NotEmpty(t, b)
		addr := func(s string) uintptr { return uintptr(unsafe.Pointer(unsafe.StringData(s))) }
		adjacent := addr(b) == addr(a)+uintptr(len(a))
		require.Equal(t, merged, adjacent, "merged by watermark: %v", merged)
		// The row's key strings point into its map key (shareKeyStrings).
		require.Equal(t, addr(a)+5, addr(tb.rows[a].key[0].(string)))
		got, err := e.Lookup("t", []map[string]any{{"k": "a-key"}, {"k": "b-key"}}, LookupOptions{})
		require.NoError(t, err)
		require.Equal(t, [][]any{{"a-key", uint64(7)}, {"b-key", uint64(8)}}, got.Rows)
	}
}

// TestDedupInsertAllocatesPerCall: an insert of new rows into a table merged by watermark
// takes its values, encoded keys, key string headers, present flags and rows from blocks:
// its allocations do not grow with its rows (the rows' maps are the caller's). The rows read
// back intact after collections that reuse the memory around them.
func TestDedupInsertAllocatesPerCall(t *testing.T) {
	e := New(Config{})
	newMounted(t, e, "d", schema.Schema{Columns: []schema.Column{
		{Name: "k", Type: schema.TypeBytes, SortOrder: schema.SortAscending},
		{Name: "ts", Type: schema.TypeUint64},
	}})
	_, err := e.MergeWatermark("d", "ts", 0)
	require.NoError(t, err)
	const batch = 256
	rows := make([]map[string]any, batch)
	calls := 0
	fill := func() {
		for j := range rows {
			rows[j] = map[string]any{"k": fmt.Sprintf("key-%d-%d", calls, j), "ts": uint64(calls + 1)}
		}
		calls++
	}
	fill()
	tx := "tx"
	_, err = e.StartTx(tx, 0)
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(20, func() {
		if err := e.Insert(tx, "d", rows, InsertOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	require.Less(t, allocs, float64(batch)/8, "allocations per insert of %d rows", batch)
	require.NoError(t, e.Abort(tx))
	for range 20 {
		fill()
		insert(t, e, "d", InsertOptions{}, rows...)
	}
	for range 2 {
		runtime.GC()
		junk := make([][]byte, 0, 10000)
		for i := range 10000 {
			junk = append(junk, []byte(fmt.Sprintf("junk-%d-%d", i, i)))
		}
		runtime.KeepAlive(junk)
	}
	for c := 1; c <= 20; c++ {
		keys := make([]map[string]any, batch)
		for j := range keys {
			keys[j] = map[string]any{"k": fmt.Sprintf("key-%d-%d", c, j)}
		}
		got, err := e.Lookup("d", keys, LookupOptions{})
		require.NoError(t, err)
		require.Len(t, got.Rows, batch)
		for j, r := range got.Rows {
			require.Equal(t, []any{fmt.Sprintf("key-%d-%d", c, j), uint64(c + 1)}, r)
		}
	}
}
