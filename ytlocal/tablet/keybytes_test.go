package tablet

import (
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
		adjacent := unsafe.Pointer(unsafe.StringData(b)) == unsafe.Add(unsafe.Pointer(unsafe.StringData(a)), len(a))
		require.Equal(t, merged, adjacent, "merged by watermark: %v", merged)
		// The row's key strings point into its map key (shareKeyStrings).
		require.Equal(t, unsafe.Pointer(unsafe.StringData(a)), unsafe.Add(unsafe.Pointer(unsafe.StringData(tb.rows[a].key[0].(string))), -5))
		got, err := e.Lookup("t", []map[string]any{{"k": "a-key"}, {"k": "b-key"}}, LookupOptions{})
		require.NoError(t, err)
		require.Equal(t, [][]any{{"a-key", uint64(7)}, {"b-key", uint64(8)}}, got.Rows)
	}
}
