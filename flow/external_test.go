package flow

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExternalStateReadsOwnWrites: Get sees the row the epoch read, then the invocation's own
// Set and Delete; the result holds the final row per state (nil: deleted), only for states
// written; Get returns copies; an unkeyed invocation fails.
func TestExternalStateReadsOwnWrites(t *testing.T) {
	inv := &Invocation{Key: Key{uint64(1), "ann"}, Messages: []Message{{MessageID: "m1"}, {MessageID: "m2"}},
		External: map[string]Row{"/t": {"total": int64(5)}, "/other": {"x": int64(1)}}}
	res, err := PerMessage(func(ctx *Context, m *Message) error {
		e := ExternalStateOf(ctx, "/t")
		row, ok := e.Get()
		require.True(t, ok)
		row["total"] = row["total"].(int64) + 1
		e.Set(row)
		if m.MessageID == "m2" {
			got, _ := e.Get()
			assert.Equal(t, int64(7), got["total"], "reads see this invocation's writes")
			ExternalStateOf(ctx, "/gone").Delete()
			_, ok := ExternalStateOf(ctx, "/gone").Get()
			assert.False(t, ok)
		}
		return nil
	}).Invoke(inv)
	require.NoError(t, err)
	assert.Equal(t, map[string]Row{"/t": {"total": int64(7)}, "/gone": nil}, res.ExternalWrites)
	assert.Equal(t, int64(5), inv.External["/t"]["total"], "the loaded row is not modified")

	res, err = PerMessage(func(ctx *Context, m *Message) error { return nil }).Invoke(inv)
	require.NoError(t, err)
	assert.Nil(t, res.ExternalWrites, "no writes")

	_, err = PerMessage(func(ctx *Context, m *Message) error {
		ExternalStateOf(ctx, "/t").Set(Row{"total": int64(1)})
		return nil
	}).Invoke(&Invocation{Messages: []Message{{MessageID: "m1"}}})
	assert.ErrorContains(t, err, "external state /t: only keyed computations have external state")
}

// TestJoinedExternalState: a joined state reads the row the epoch read (a copy); none reads
// as absent.
func TestJoinedExternalState(t *testing.T) {
	inv := &Invocation{Key: Key{uint64(1)}, Messages: []Message{{MessageID: "m1"}}, External: map[string]Row{"/j": {"x": int64(3)}}}
	res, err := PerMessage(func(ctx *Context, m *Message) error {
		row, ok := JoinedExternalStateOf(ctx, "/j")
		require.True(t, ok)
		assert.Equal(t, Row{"x": int64(3)}, row)
		row["x"] = int64(4)
		_, ok = JoinedExternalStateOf(ctx, "/none")
		assert.False(t, ok)
		return nil
	}).Invoke(inv)
	require.NoError(t, err)
	assert.Nil(t, res.ExternalWrites)
	assert.Equal(t, int64(3), inv.External["/j"]["x"], "a copy")
}
