package tablet

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/yterrors"
)

// TestInsertColumnErrors: a row naming a column the schema lacks fails with that column's
// error, before any other problem of the row (a missing key, a bad value); system ("$")
// columns and the columns of a non-strict schema are accepted; nothing is written.
func TestInsertColumnErrors(t *testing.T) {
	strict := schema.Schema{Columns: []schema.Column{
		{Name: "k", Type: schema.TypeInt64, SortOrder: schema.SortAscending, Required: true},
		{Name: "v", Type: schema.TypeString},
	}}
	loose := strict
	loose.Strict = new(bool)
	for _, tc := range []struct {
		name string
		s    schema.Schema
		row  map[string]any
		want string // "" = accepted
	}{
		{"unknown and missing key", strict, map[string]any{"x": int64(1)}, `no column "x" in schema`},
		{"unknown and bad value", strict, map[string]any{"k": int64(1), "v": int64(2), "x": 1}, `no column "x" in schema`},
		{"missing key", strict, map[string]any{"v": "a"}, `missing required key column "k"`},
		{"bad value", strict, map[string]any{"k": int64(1), "v": int64(2)}, `column "v"`},
		{"system column", strict, map[string]any{"k": int64(1), "$tablet_index": int64(0)}, ""},
		{"schema columns", strict, map[string]any{"k": int64(1), "v": "a"}, ""},
		{"loose schema", loose, map[string]any{"k": int64(1), "x": "a"}, ""},
		{"loose schema, missing key", loose, map[string]any{"x": "a"}, `missing required key column "k"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(Config{})
			newMounted(t, e, "t", tc.s)
			_, err := e.Run(func(tx string) error {
				return e.Insert(tx, "t", []map[string]any{{"k": int64(0)}, tc.row}, InsertOptions{})
			})
			rs, lerr := e.Lookup("t", []map[string]any{{"k": int64(0)}}, LookupOptions{})
			require.NoError(t, lerr)
			if tc.want == "" {
				require.NoError(t, err)
				require.Len(t, rs.Rows, 1)
				return
			}
			require.Error(t, err)
			require.True(t, yterrors.ContainsErrorCode(err, yterrors.CodeSchemaViolation), "%v", err)
			require.Contains(t, strings.ToLower(err.Error()), strings.ToLower(tc.want))
			require.Empty(t, rs.Rows, "a failed insert writes nothing")
		})
	}
}
