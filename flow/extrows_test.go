package flow

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExternalStateSeveralRowsPerKey: a state whose table has the further key column bucket
// reads the key's rows in order (copies), sees its own SetRow and DeleteRow, and writes only
// the rows it changed (deletions by their key columns); Delete deletes every row; Get and Set
// fail on such a state, Rows on a one-row-per-key state, and a row without the further key
// column fails.
func TestExternalStateSeveralRowsPerKey(t *testing.T) {
	inv := &Invocation{Key: Key{uint64(1), "ann"}, Messages: []Message{{MessageID: "m1"}},
		ExternalSubKeys: map[string][]string{"/b": {"bucket"}},
		ExternalRows: map[string][]Row{"/b": {
			{"bucket": int64(0), "n": int64(1)}, {"bucket": int64(1), "n": int64(2)}, {"bucket": int64(2), "n": int64(3)}}}}
	res, err := PerMessage(func(ctx *Context, m *Message) error {
		b := ExternalStateOf(ctx, "/b")
		rows := b.Rows()
		require.Len(t, rows, 3)
		rows[0]["n"] = int64(100) // a copy
		b.SetRow(Row{"bucket": int64(1), "n": int64(20)})
		b.SetRow(Row{"bucket": int64(5), "n": int64(50)})
		b.DeleteRow(Row{"bucket": int64(2)})
		b.DeleteRow(Row{"bucket": int64(9)}) // none: nothing to delete
		assert.Equal(t, []Row{{"bucket": int64(0), "n": int64(1)}, {"bucket": int64(1), "n": int64(20)}, {"bucket": int64(5), "n": int64(50)}}, b.Rows())
		return nil
	}).Invoke(inv)
	require.NoError(t, err)
	assert.Nil(t, res.ExternalWrites)
	assert.Equal(t, map[string][]RowWrite{"/b": {
		{Row: Row{"bucket": int64(1), "n": int64(20)}},
		{Row: Row{"bucket": int64(2)}, Delete: true},
		{Row: Row{"bucket": int64(5), "n": int64(50)}},
	}}, res.ExternalRowWrites)
	assert.Equal(t, int64(1), inv.ExternalRows["/b"][0]["n"], "the loaded rows are not modified")

	res, err = PerMessage(func(ctx *Context, m *Message) error {
		ExternalStateOf(ctx, "/b").Delete()
		assert.Empty(t, ExternalStateOf(ctx, "/b").Rows())
		return nil
	}).Invoke(inv)
	require.NoError(t, err)
	assert.Len(t, res.ExternalRowWrites["/b"], 3)
	for _, w := range res.ExternalRowWrites["/b"] {
		assert.True(t, w.Delete)
	}

	for _, c := range []struct {
		f    func(ctx *Context)
		want string
	}{
		{func(ctx *Context) { ExternalStateOf(ctx, "/b").Get() }, "external state /b: its table has further key columns [bucket] (several rows per key): use Rows, SetRow, DeleteRow and Delete"},
		{func(ctx *Context) { ExternalStateOf(ctx, "/b").Set(Row{}) }, "several rows per key"},
		{func(ctx *Context) { ExternalStateOf(ctx, "/one").Rows() }, "external state /one: its table has one row per key (key columns = group_by_schema): use Get, Set and Delete"},
		{func(ctx *Context) { ExternalStateOf(ctx, "/b").SetRow(Row{"n": int64(1)}) }, `lacks key column "bucket"`},
	} {
		_, err := PerMessage(func(ctx *Context, m *Message) error { c.f(ctx); return nil }).Invoke(inv)
		assert.ErrorContains(t, err, c.want)
	}
}
