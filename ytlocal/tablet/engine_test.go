package tablet

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yterrors"
)

func kvSchema() schema.Schema {
	return schema.Schema{Columns: []schema.Column{
		{Name: "k", Type: schema.TypeString, Required: true, SortOrder: schema.SortAscending},
		{Name: "v", Type: schema.TypeInt64},
		{Name: "w", Type: schema.TypeString, Lock: "w"},
	}}
}

func newMounted(t testing.TB, e *Engine, id string, s schema.Schema) {
	t.Helper()
	require.NoError(t, e.CreateTable(id, "//tmp/"+id, s, ""))
	require.NoError(t, e.SetState(id, StateMounted))
}

func insert(t testing.TB, e *Engine, id string, opts InsertOptions, rows ...map[string]any) {
	t.Helper()
	_, err := e.Run(func(tx string) error { return e.Insert(tx, id, rows, opts) })
	require.NoError(t, err)
}

func lookup(t *testing.T, e *Engine, id string, o LookupOptions, keys ...map[string]any) [][]any {
	t.Helper()
	rs, err := e.Lookup(id, keys, o)
	require.NoError(t, err)
	return rs.Rows
}

func requireCode(t *testing.T, err error, code yterrors.ErrorCode) {
	t.Helper()
	require.Error(t, err)
	require.True(t, yterrors.ContainsErrorCode(err, code), "want code %d, got %v", code, err)
}

func TestInsertLookupDelete(t *testing.T) {
	e := New(Config{})
	newMounted(t, e, "t", kvSchema())
	insert(t, e, "t", InsertOptions{}, map[string]any{"k": "b", "v": int64(2)}, map[string]any{"k": "a", "v": uint64(1), "w": "x"})

	rows := lookup(t, e, "t", LookupOptions{}, map[string]any{"k": "a"}, map[string]any{"k": "zz"}, map[string]any{"k": "b"})
	assert.Equal(t, [][]any{{"a", int64(1), "x"}, {"b", int64(2), nil}}, rows)

	rows = lookup(t, e, "t", LookupOptions{KeepMissingRows: true, Columns: []string{"v", "k"}}, map[string]any{"k": "a"}, map[string]any{"k": "zz"})
	assert.Equal(t, [][]any{{int64(1), "a"}, nil}, rows)

	_, err := e.Run(func(tx string) error { return e.Delete(tx, "t", []map[string]any{{"k": "a"}}) })
	require.NoError(t, err)
	assert.Empty(t, lookup(t, e, "t", LookupOptions{}, map[string]any{"k": "a"}))

	var keys []any
	require.NoError(t, e.Scan("t", ReadOptions{}, func(r map[string]any) bool { keys = append(keys, r["k"]); return true }))
	assert.Equal(t, []any{"b"}, keys)
}

func TestScanInKeyOrder(t *testing.T) {
	e := New(Config{})
	newMounted(t, e, "t", kvSchema())
	for _, k := range []string{"m", "c", "x", "a"} {
		insert(t, e, "t", InsertOptions{}, map[string]any{"k": k})
	}
	var keys []any
	require.NoError(t, e.Scan("t", ReadOptions{}, func(r map[string]any) bool { keys = append(keys, r["k"]); return true }))
	assert.Equal(t, []any{"a", "c", "m", "x"}, keys)
}

func TestReadAtTimestamp(t *testing.T) {
	e := New(Config{})
	newMounted(t, e, "t", kvSchema())
	insert(t, e, "t", InsertOptions{}, map[string]any{"k": "a", "v": int64(1)})
	ts := Timestamp(e.Oracle().Next())
	insert(t, e, "t", InsertOptions{}, map[string]any{"k": "a", "v": int64(2)})
	_, err := e.Run(func(tx string) error { return e.Delete(tx, "t", []map[string]any{{"k": "a"}}) })
	require.NoError(t, err)

	assert.Equal(t, [][]any{{"a", int64(1), nil}}, lookup(t, e, "t", LookupOptions{ReadOptions: ReadOptions{Timestamp: ts}}, map[string]any{"k": "a"}))
	assert.Empty(t, lookup(t, e, "t", LookupOptions{ReadOptions: ReadOptions{Timestamp: SyncLastCommitted}}, map[string]any{"k": "a"}))

	// A transaction reads the snapshot at its start timestamp.
	insert(t, e, "t", InsertOptions{}, map[string]any{"k": "a", "v": int64(3)})
	_, err = e.StartTx("reader", time.Minute)
	require.NoError(t, err)
	insert(t, e, "t", InsertOptions{}, map[string]any{"k": "a", "v": int64(4)})
	assert.Equal(t, [][]any{{"a", int64(3), nil}}, lookup(t, e, "t", LookupOptions{ReadOptions: ReadOptions{Tx: "reader"}}, map[string]any{"k": "a"}))
}

func TestUpdateAndAggregate(t *testing.T) {
	s := schema.Schema{Columns: []schema.Column{
		{Name: "k", Type: schema.TypeInt64, SortOrder: schema.SortAscending},
		{Name: "sum", Type: schema.TypeInt64, Aggregate: "sum"},
		{Name: "max", Type: schema.TypeString, Aggregate: "max"},
		{Name: "note", Type: schema.TypeString},
	}}
	e := New(Config{})
	newMounted(t, e, "t", s)
	insert(t, e, "t", InsertOptions{}, map[string]any{"k": int64(1), "sum": int64(5), "max": "b", "note": "first"})
	insert(t, e, "t", InsertOptions{Update: true, Aggregate: true}, map[string]any{"k": int64(1), "sum": int64(7), "max": "a"})
	assert.Equal(t, [][]any{{int64(1), int64(12), "b", "first"}}, lookup(t, e, "t", LookupOptions{}, map[string]any{"k": int64(1)}))

	// Without update, columns the row omits become null.
	insert(t, e, "t", InsertOptions{}, map[string]any{"k": int64(1), "sum": int64(1)})
	assert.Equal(t, [][]any{{int64(1), int64(1), nil, nil}}, lookup(t, e, "t", LookupOptions{}, map[string]any{"k": int64(1)}))

	// Two writes of one row in one transaction: the second sees the first.
	_, err := e.Run(func(tx string) error {
		if err := e.Insert(tx, "t", []map[string]any{{"k": int64(1), "note": "n"}}, InsertOptions{Update: true}); err != nil {
			return err
		}
		return e.Insert(tx, "t", []map[string]any{{"k": int64(1), "sum": int64(2)}}, InsertOptions{Update: true, Aggregate: true})
	})
	require.NoError(t, err)
	assert.Equal(t, [][]any{{int64(1), int64(3), nil, "n"}}, lookup(t, e, "t", LookupOptions{}, map[string]any{"k": int64(1)}))
}

func TestSchemaViolations(t *testing.T) {
	s := schema.Schema{Strict: ptrTrue(), Columns: []schema.Column{
		{Name: "k", Type: schema.TypeInt64, SortOrder: schema.SortAscending},
		{Name: "r", Type: schema.TypeString, Required: true},
		{Name: "u", Type: schema.TypeUint8},
	}}
	e := New(Config{})
	newMounted(t, e, "t", s)
	for name, row := range map[string]map[string]any{
		"wrong type":       {"k": "x", "r": "a"},
		"missing required": {"k": int64(1)},
		"null required":    {"k": int64(1), "r": nil},
		"unknown column":   {"k": int64(1), "r": "a", "zzz": int64(1)},
		"out of range":     {"k": int64(1), "r": "a", "u": int64(300)},
		"negative uint":    {"k": int64(1), "r": "a", "u": int64(-1)},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := e.Run(func(tx string) error { return e.Insert(tx, "t", []map[string]any{row}, InsertOptions{}) })
			requireCode(t, err, yterrors.CodeSchemaViolation)
			assert.Contains(t, err.Error(), "//tmp/t")
		})
	}
	// Update mode may omit a required column only if the row already has it.
	_, err := e.Run(func(tx string) error {
		return e.Insert(tx, "t", []map[string]any{{"k": int64(9), "u": int64(1)}}, InsertOptions{Update: true})
	})
	requireCode(t, err, yterrors.CodeSchemaViolation)
	insert(t, e, "t", InsertOptions{}, map[string]any{"k": int64(9), "r": "a"})
	insert(t, e, "t", InsertOptions{Update: true}, map[string]any{"k": int64(9), "u": uint64(3)})
	assert.Equal(t, [][]any{{int64(9), "a", uint64(3)}}, lookup(t, e, "t", LookupOptions{}, map[string]any{"k": int64(9)}))
}

func TestMountStates(t *testing.T) {
	e := New(Config{})
	require.NoError(t, e.CreateTable("t", "//tmp/t", kvSchema(), ""))
	_, err := e.Run(func(tx string) error { return e.Insert(tx, "t", []map[string]any{{"k": "a"}}, InsertOptions{}) })
	requireCode(t, err, yterrors.CodeTabletNotMounted)
	_, err = e.Lookup("t", []map[string]any{{"k": "a"}}, LookupOptions{})
	requireCode(t, err, yterrors.CodeTabletNotMounted)
	requireCode(t, e.SetState("t", StateFrozen), yterrors.CodeInvalidTabletState)

	require.NoError(t, e.SetState("t", StateMounted))
	require.NoError(t, e.SetState("t", StateMounted))
	insert(t, e, "t", InsertOptions{}, map[string]any{"k": "a"})
	requireCode(t, e.Reshard("t", 2, nil), yterrors.CodeInvalidTabletState)

	require.NoError(t, e.SetState("t", StateFrozen))
	_, err = e.Run(func(tx string) error { return e.Insert(tx, "t", []map[string]any{{"k": "b"}}, InsertOptions{}) })
	require.Error(t, err)
	assert.Len(t, lookup(t, e, "t", LookupOptions{}, map[string]any{"k": "a"}), 1)

	// A table unmounted between the write and the commit fails the commit.
	require.NoError(t, e.SetState("t", StateMounted))
	_, err = e.StartTx("x", time.Minute)
	require.NoError(t, err)
	require.NoError(t, e.Insert("x", "t", []map[string]any{{"k": "c"}}, InsertOptions{}))
	require.NoError(t, e.SetState("t", StateUnmounted))
	_, err = e.Commit("x", nil, nil)
	requireCode(t, err, yterrors.CodeTabletNotMounted)
}

func TestReshardValidation(t *testing.T) {
	s := schema.Schema{Columns: []schema.Column{
		{Name: "a", Type: schema.TypeString, SortOrder: schema.SortAscending},
		{Name: "b", Type: schema.TypeUint64, SortOrder: schema.SortAscending},
		{Name: "c", Type: schema.TypeString},
	}}
	e := New(Config{})
	require.NoError(t, e.CreateTable("t", "//tmp/t", s, ""))
	require.Error(t, e.Reshard("t", 0, [][]any{{"a"}}))
	require.Error(t, e.Reshard("t", 0, [][]any{{}, {"b"}, {"a"}}))
	require.Error(t, e.Reshard("t", 0, [][]any{{}, {int64(1)}}))
	require.NoError(t, e.Reshard("t", 0, [][]any{{}, {"a"}, {"b", uint64(42)}}))
	tablets, err := e.Tablets("t")
	require.NoError(t, err)
	require.Len(t, tablets, 3)
	assert.Equal(t, []any{"b", uint64(42)}, tablets[2].PivotKey)
	require.NoError(t, e.Reshard("t", 6, nil))
	tablets, err = e.Tablets("t")
	require.NoError(t, err)
	assert.Len(t, tablets, 6)
}

func TestConcurrentWriteConflict(t *testing.T) {
	e := New(Config{})
	newMounted(t, e, "t", kvSchema())
	for _, id := range []string{"tx1", "tx2"} {
		_, err := e.StartTx(id, time.Minute)
		require.NoError(t, err)
	}
	require.NoError(t, e.Insert("tx1", "t", []map[string]any{{"k": "a", "v": int64(1)}}, InsertOptions{}))
	require.NoError(t, e.Insert("tx2", "t", []map[string]any{{"k": "a", "v": int64(2)}, {"k": "b", "v": int64(2)}}, InsertOptions{}))
	_, err := e.Commit("tx1", nil, nil)
	require.NoError(t, err)
	_, err = e.Commit("tx2", nil, nil)
	requireCode(t, err, yterrors.CodeTransactionLockConflict)

	assert.Equal(t, [][]any{{"a", int64(1), nil}, nil}, lookup(t, e, "t", LookupOptions{KeepMissingRows: true}, map[string]any{"k": "a"}, map[string]any{"k": "b"}))
	// The loser is gone.
	requireCode(t, e.Ping("tx2"), yterrors.CodeNoSuchTransaction)
}

func TestLockGroupsAreIndependent(t *testing.T) {
	e := New(Config{})
	newMounted(t, e, "t", kvSchema())
	insert(t, e, "t", InsertOptions{}, map[string]any{"k": "a", "v": int64(0), "w": "0"})
	for _, id := range []string{"tx1", "tx2"} {
		_, err := e.StartTx(id, time.Minute)
		require.NoError(t, err)
	}
	require.NoError(t, e.Insert("tx1", "t", []map[string]any{{"k": "a", "v": int64(1)}}, InsertOptions{Update: true}))
	require.NoError(t, e.Insert("tx2", "t", []map[string]any{{"k": "a", "w": "2"}}, InsertOptions{Update: true}))
	_, err := e.Commit("tx1", nil, nil)
	require.NoError(t, err)
	_, err = e.Commit("tx2", nil, nil)
	require.NoError(t, err)
	assert.Equal(t, [][]any{{"a", int64(1), "2"}}, lookup(t, e, "t", LookupOptions{}, map[string]any{"k": "a"}))
}

func TestLockRowsConflict(t *testing.T) {
	e := New(Config{})
	newMounted(t, e, "t", kvSchema())
	insert(t, e, "t", InsertOptions{}, map[string]any{"k": "a", "w": "0"})
	key := []map[string]any{{"k": "a"}}

	// A write committed after the locker started breaks its shared lock.
	_, err := e.StartTx("tx0", time.Minute)
	require.NoError(t, err)
	insert(t, e, "t", InsertOptions{}, map[string]any{"k": "a", "w": "1"})
	require.NoError(t, e.LockRows("tx0", "t", key, []string{"w"}, LockSharedStrong))
	_, err = e.Commit("tx0", nil, nil)
	requireCode(t, err, yterrors.CodeTransactionLockConflict)

	// A committed strong lock breaks a writer that started before it.
	_, err = e.StartTx("writer", time.Minute)
	require.NoError(t, err)
	_, err = e.StartTx("locker", time.Minute)
	require.NoError(t, err)
	require.NoError(t, e.LockRows("locker", "t", key, []string{"w"}, LockSharedStrong))
	_, err = e.Commit("locker", nil, nil)
	require.NoError(t, err)
	require.NoError(t, e.Insert("writer", "t", []map[string]any{{"k": "a", "w": "2"}}, InsertOptions{Update: true}))
	_, err = e.Commit("writer", nil, nil)
	requireCode(t, err, yterrors.CodeTransactionLockConflict)

	// Weak locks do not block writers; unknown lock names are rejected.
	_, err = e.StartTx("writer2", time.Minute)
	require.NoError(t, err)
	_, err = e.Run(func(tx string) error { return e.LockRows(tx, "t", key, []string{"w"}, LockSharedWeak) })
	require.NoError(t, err)
	require.NoError(t, e.Insert("writer2", "t", []map[string]any{{"k": "a", "w": "3"}}, InsertOptions{Update: true}))
	_, err = e.Commit("writer2", nil, nil)
	require.NoError(t, err)
	_, err = e.Run(func(tx string) error { return e.LockRows(tx, "t", key, []string{"nope"}, LockSharedWeak) })
	require.Error(t, err)
}

// prereqs is a fixed set of live master transactions.
type prereqs map[string]bool

func (p prereqs) WhileAlive(ids []string, commit func() error) error {
	for _, id := range ids {
		if !p[id] {
			return yterrors.Err(yterrors.CodePrerequisiteCheckFailed, fmt.Sprintf("Prerequisite check failed: transaction %s is missing", id))
		}
	}
	return commit()
}

func TestCommitPrerequisiteFencing(t *testing.T) {
	e := New(Config{})
	newMounted(t, e, "t", kvSchema())
	alive := prereqs{"master": true}

	_, err := e.StartTx("zombie", time.Minute)
	require.NoError(t, err)
	require.NoError(t, e.Insert("zombie", "t", []map[string]any{{"k": "z"}}, InsertOptions{}))
	_, err = e.Commit("zombie", []string{"dead"}, alive)
	requireCode(t, err, yterrors.CodePrerequisiteCheckFailed)
	assert.Empty(t, lookup(t, e, "t", LookupOptions{}, map[string]any{"k": "z"}))
	requireCode(t, e.Ping("zombie"), yterrors.CodeNoSuchTransaction)

	_, err = e.StartTx("leader", time.Minute)
	require.NoError(t, err)
	require.NoError(t, e.Insert("leader", "t", []map[string]any{{"k": "l"}}, InsertOptions{}))
	_, err = e.Commit("leader", []string{"master"}, alive)
	require.NoError(t, err)
	assert.Len(t, lookup(t, e, "t", LookupOptions{}, map[string]any{"k": "l"}), 1)

	_, err = e.StartTx("noprovider", time.Minute)
	require.NoError(t, err)
	_, err = e.Commit("noprovider", []string{"master"}, nil)
	requireCode(t, err, yterrors.CodePrerequisiteCheckFailed)
}

func TestTxLease(t *testing.T) {
	now := time.Unix(100, 0)
	e := New(Config{Clock: func() time.Time { return now }})
	newMounted(t, e, "t", kvSchema())
	_, err := e.StartTx("tx", 10*time.Second)
	require.NoError(t, err)
	now = now.Add(8 * time.Second)
	require.NoError(t, e.Ping("tx"))
	now = now.Add(8 * time.Second)
	require.NoError(t, e.Insert("tx", "t", []map[string]any{{"k": "a"}}, InsertOptions{}))
	now = now.Add(11 * time.Second)
	assert.Equal(t, []string{"tx"}, e.Expire(now))
	_, err = e.Commit("tx", nil, nil)
	requireCode(t, err, yterrors.CodeNoSuchTransaction)
	requireCode(t, e.Abort("tx"), yterrors.CodeNoSuchTransaction)
}

func orderedSchema() schema.Schema {
	return schema.Schema{Columns: []schema.Column{{Name: "value", Type: schema.TypeString, Required: true}}}
}

func TestOrderedTablets(t *testing.T) {
	e := New(Config{})
	require.NoError(t, e.CreateTable("q", "//tmp/q", orderedSchema(), ""))
	require.NoError(t, e.Reshard("q", 3, nil))
	require.NoError(t, e.SetState("q", StateMounted))
	insert(t, e, "q", InsertOptions{},
		map[string]any{"$tablet_index": int64(2), "value": "a"},
		map[string]any{"$tablet_index": int64(2), "value": "b"},
		map[string]any{"$tablet_index": int64(0), "value": "c"})
	_, err := e.Run(func(tx string) error {
		return e.Insert(tx, "q", []map[string]any{{"$tablet_index": int64(3), "value": "x"}}, InsertOptions{})
	})
	require.Error(t, err)

	var got []map[string]any
	require.NoError(t, e.Scan("q", ReadOptions{}, func(r map[string]any) bool { got = append(got, maps.Clone(r)); return true }))
	assert.Equal(t, []map[string]any{
		{"$tablet_index": int64(0), "$row_index": int64(0), "value": "c"},
		{"$tablet_index": int64(2), "$row_index": int64(0), "value": "a"},
		{"$tablet_index": int64(2), "$row_index": int64(1), "value": "b"},
	}, got)

	require.NoError(t, e.Trim("q", 2, 1))
	require.Error(t, e.Trim("q", 2, 5))
	insert(t, e, "q", InsertOptions{}, map[string]any{"$tablet_index": int64(2), "value": "d"})
	got = nil
	require.NoError(t, e.Scan("q", ReadOptions{}, func(r map[string]any) bool {
		if r["$tablet_index"] == int64(2) {
			got = append(got, maps.Clone(r))
		}
		return true
	}))
	assert.Equal(t, []map[string]any{
		{"$tablet_index": int64(2), "$row_index": int64(1), "value": "b"},
		{"$tablet_index": int64(2), "$row_index": int64(2), "value": "d"},
	}, got)
	tablets, err := e.Tablets("q")
	require.NoError(t, err)
	assert.Equal(t, int64(1), tablets[2].TrimmedRowCount)
	assert.Equal(t, int64(3), tablets[2].RowCount)

	// Remount keeps data and numbering; reshard grows with empty tablets.
	require.NoError(t, e.SetState("q", StateUnmounted))
	require.NoError(t, e.Reshard("q", 6, nil))
	require.NoError(t, e.SetState("q", StateMounted))
	tablets, err = e.Tablets("q")
	require.NoError(t, err)
	require.Len(t, tablets, 6)
	assert.Equal(t, int64(3), tablets[2].RowCount)
}

func setupQueue(t testing.TB, e *Engine) {
	t.Helper()
	require.NoError(t, e.CreateTable("q", "//tmp/q", orderedSchema(), ""))
	require.NoError(t, e.Reshard("q", 3, nil))
	require.NoError(t, e.SetState("q", StateMounted))
	require.NoError(t, e.CreateTable("c", "//tmp/c", ConsumerSchema(), StateMounted))
	require.NoError(t, e.CreateTable("p", "//tmp/p", ProducerSchema(), StateMounted))
}

func TestConsumerPullAndAdvance(t *testing.T) {
	e := New(Config{})
	setupQueue(t, e)
	insert(t, e, "q", InsertOptions{},
		map[string]any{"$tablet_index": int64(1), "value": "r0"},
		map[string]any{"$tablet_index": int64(1), "value": "r1"},
		map[string]any{"$tablet_index": int64(1), "value": "r2"})

	_, err := e.PullConsumer("c", "//tmp/c", "q", "//tmp/q", 1, PullOptions{})
	requireCode(t, err, yterrors.CodeAuthorizationError)
	require.NoError(t, e.RegisterConsumer(Registration{Queue: "q", QueuePath: "//tmp/q", Consumer: "c", ConsumerPath: "//tmp/c", Vital: true}))

	rs, err := e.PullConsumer("c", "//tmp/c", "q", "//tmp/q", 1, PullOptions{Offset: 1, MaxRowCount: 1})
	require.NoError(t, err)
	assert.Equal(t, []string{"$tablet_index", "$row_index", "value"}, rs.Columns)
	assert.Equal(t, [][]any{{int64(1), int64(1), "r1"}}, rs.Rows)

	advance := func(old *int64, new int64) error {
		_, err := e.Run(func(tx string) error { return e.AdvanceConsumer(tx, "c", "//tmp/c", "//tmp/q", 1, old, new) })
		return err
	}
	zero, two := int64(0), int64(2)
	require.NoError(t, advance(&zero, 2))
	err = advance(&zero, 3)
	requireCode(t, err, yterrors.CodeConsumerOffsetConflict)
	require.NoError(t, advance(&two, 3))
	off, err := e.ConsumerOffset("c", "//tmp/q", 1)
	require.NoError(t, err)
	assert.Equal(t, int64(3), off)

	// Two transactions advancing from the same offset: the second gets 1700.
	for _, id := range []string{"a1", "a2"} {
		_, err := e.StartTx(id, time.Minute)
		require.NoError(t, err)
		three := int64(3)
		require.NoError(t, e.AdvanceConsumer(id, "c", "//tmp/c", "//tmp/q", 1, &three, 4))
	}
	_, err = e.Commit("a1", nil, nil)
	require.NoError(t, err)
	_, err = e.Commit("a2", nil, nil)
	requireCode(t, err, yterrors.CodeTransactionLockConflict)

	// Trimmed rows are skipped by pulls.
	require.NoError(t, e.Trim("q", 1, 2))
	rs, err = e.PullConsumer("c", "//tmp/c", "q", "//tmp/q", 1, PullOptions{Offset: 0})
	require.NoError(t, err)
	assert.Equal(t, [][]any{{int64(1), int64(2), "r2"}}, rs.Rows)

	require.NoError(t, e.UnregisterConsumer("q", "c"))
	require.Error(t, e.UnregisterConsumer("q", "c"))
}

// TestTxSeesOwnWritesAcrossCalls: a transaction written to by several calls (the engine
// keeps each call's operations apart) reads its own buffered writes across them: the second
// and third advances of one consumer partition see the earlier ones, a queue write between
// them changes nothing, and the commit leaves the last offset and the queue row.
func TestTxSeesOwnWritesAcrossCalls(t *testing.T) {
	e := New(Config{})
	setupQueue(t, e)
	require.NoError(t, e.RegisterConsumer(Registration{Queue: "q", QueuePath: "//tmp/q", Consumer: "c", ConsumerPath: "//tmp/c", Vital: true}))
	_, err := e.StartTx("t", time.Minute)
	require.NoError(t, err)
	zero, three, five := int64(0), int64(3), int64(5)
	require.NoError(t, e.AdvanceConsumer("t", "c", "//tmp/c", "//tmp/q", 1, &zero, 3))
	require.NoError(t, e.Insert("t", "q", []map[string]any{{"$tablet_index": int64(1), "value": "r0"}}, InsertOptions{}))
	require.NoError(t, e.AdvanceConsumer("t", "c", "//tmp/c", "//tmp/q", 1, &three, 5))
	requireCode(t, e.AdvanceConsumer("t", "c", "//tmp/c", "//tmp/q", 1, &three, 6), yterrors.CodeConsumerOffsetConflict)
	require.NoError(t, e.AdvanceConsumer("t", "c", "//tmp/c", "//tmp/q", 1, &five, 6))
	_, err = e.Commit("t", nil, nil)
	require.NoError(t, err)
	off, err := e.ConsumerOffset("c", "//tmp/q", 1)
	require.NoError(t, err)
	assert.Equal(t, int64(6), off)
	assert.Equal(t, []any{"r0"}, queueValues(t, e, 1))
}

func queueValues(t *testing.T, e *Engine, tablet int64) []any {
	var out []any
	require.NoError(t, e.Scan("q", ReadOptions{}, func(r map[string]any) bool {
		if r["$tablet_index"] == tablet {
			out = append(out, r["value"])
		}
		return true
	}))
	return out
}

func TestPushSkipsDuplicates(t *testing.T) {
	e := New(Config{})
	setupQueue(t, e)
	s, err := e.CreateProducerSession("p", "//tmp/q", "s", map[string]any{"v": "1"}, true)
	require.NoError(t, err)
	assert.Equal(t, Session{Epoch: 0, SequenceNumber: -1, UserMeta: map[string]any{"v": "1"}}, s)

	push := func(epoch int64, start *int64, values ...string) (PushResult, error) {
		var rows []map[string]any
		for _, v := range values {
			rows = append(rows, map[string]any{"$tablet_index": int64(2), "value": v})
		}
		var res PushResult
		_, err := e.Run(func(tx string) error {
			var err error
			res, err = e.PushProducer(tx, "p", "//tmp/p", "q", "//tmp/q", "s", epoch, rows, PushOptions{SequenceNumber: start})
			return err
		})
		return res, err
	}
	seq := func(n int64) *int64 { return &n }
	res, err := push(0, seq(0), "a", "b", "c")
	require.NoError(t, err)
	assert.Equal(t, PushResult{LastSequenceNumber: 2, SkippedRowCount: 0}, res)
	res, err = push(0, seq(2), "c", "d", "e")
	require.NoError(t, err)
	assert.Equal(t, PushResult{LastSequenceNumber: 4, SkippedRowCount: 1}, res)
	res, err = push(0, seq(0), "a", "b")
	require.NoError(t, err)
	assert.Equal(t, PushResult{LastSequenceNumber: 4, SkippedRowCount: 2}, res)
	assert.Equal(t, []any{"a", "b", "c", "d", "e"}, queueValues(t, e, 2))

	_, err = push(1, seq(5), "f")
	requireCode(t, err, yterrors.CodeQueueClientInvalidEpoch)

	s, err = e.CreateProducerSession("p", "//tmp/q", "s", nil, false)
	require.NoError(t, err)
	assert.Equal(t, Session{Epoch: 1, SequenceNumber: 4, UserMeta: map[string]any{"v": "1"}}, s)
	_, err = push(0, seq(5), "f")
	requireCode(t, err, yterrors.CodeZombieEpoch)
	assert.Equal(t, []any{"a", "b", "c", "d", "e"}, queueValues(t, e, 2))

	require.NoError(t, e.RemoveProducerSession("p", "//tmp/q", "s"))
	s, err = e.CreateProducerSession("p", "//tmp/q", "s", nil, false)
	require.NoError(t, err)
	assert.Equal(t, Session{Epoch: 0, SequenceNumber: -1}, s)
}

func TestPushSequenceNumberRules(t *testing.T) {
	e := New(Config{})
	setupQueue(t, e)
	_, err := e.CreateProducerSession("p", "//tmp/q", "s", nil, false)
	require.NoError(t, err)
	push := func(rows []map[string]any, start *int64) (PushResult, error) {
		var res PushResult
		_, err := e.Run(func(tx string) error {
			var err error
			res, err = e.PushProducer(tx, "p", "//tmp/p", "q", "//tmp/q", "s", 0, rows, PushOptions{SequenceNumber: start})
			return err
		})
		return res, err
	}
	row := func(seq any) map[string]any {
		r := map[string]any{"$tablet_index": int64(0), "value": "x"}
		if seq != nil {
			r["$sequence_number"] = seq
		}
		return r
	}
	start := int64(0)
	for name, tc := range map[string]struct {
		rows  []map[string]any
		start *int64
	}{
		"neither":        {[]map[string]any{row(nil)}, nil},
		"both":           {[]map[string]any{row(int64(1))}, &start},
		"mixed":          {[]map[string]any{row(int64(1)), row(nil)}, nil},
		"not an integer": {[]map[string]any{row("1")}, nil},
		"not increasing": {[]map[string]any{row(int64(2)), row(int64(2))}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := push(tc.rows, tc.start)
			requireCode(t, err, yterrors.CodeInvalidRowSequenceNumbers)
		})
	}
	res, err := push([]map[string]any{row(int64(6)), row(int64(10)), row(int64(14))}, nil)
	require.NoError(t, err)
	assert.Equal(t, PushResult{LastSequenceNumber: 14}, res)
	assert.Equal(t, []any{"x", "x", "x"}, queueValues(t, e, 0))

	_, err = e.Run(func(tx string) error {
		_, err := e.PushProducer(tx, "p", "//tmp/p", "q", "//tmp/q", "unknown", 0, []map[string]any{row(int64(20))}, PushOptions{})
		return err
	})
	require.Error(t, err)

	require.NoError(t, e.SetState("q", StateUnmounted))
	_, err = push([]map[string]any{row(int64(20))}, nil)
	requireCode(t, err, yterrors.CodeTabletNotMounted)
}

// firstByte is a computed column "first byte of column k" standing in
// for a query-language expression.
type firstByte struct{}

func (firstByte) Eval(row map[string]any) (any, error) {
	s, _ := row["k"].(string)
	if s == "" {
		return nil, nil
	}
	return uint64(s[0]), nil
}
func (firstByte) Columns() []string { return []string{"k"} }

func TestComputedKeyColumn(t *testing.T) {
	s := schema.Schema{Columns: []schema.Column{
		{Name: "h", Type: schema.TypeUint64, SortOrder: schema.SortAscending, Expression: "first_byte(k)"},
		{Name: "k", Type: schema.TypeString, SortOrder: schema.SortAscending},
		{Name: "v", Type: schema.TypeInt64},
	}}
	e := New(Config{})
	require.Error(t, e.CreateTable("t", "//tmp/t", s, ""))

	e = New(Config{Compile: func(string) (Evaluator, error) { return firstByte{}, nil }})
	newMounted(t, e, "t", s)
	insert(t, e, "t", InsertOptions{}, map[string]any{"k": "b", "v": int64(1)}, map[string]any{"k": "a", "v": int64(2)})
	assert.Equal(t, [][]any{{uint64('b'), "b", int64(1)}}, lookup(t, e, "t", LookupOptions{}, map[string]any{"k": "b"}))
	var keys []any
	require.NoError(t, e.Scan("t", ReadOptions{}, func(r map[string]any) bool { keys = append(keys, r["h"]); return true }))
	assert.Equal(t, []any{uint64('a'), uint64('b')}, keys)
}

// recorder is a journal keeping YSON-encoded records.
type recorder struct{ records [][]byte }

func (r *recorder) Append(rec *Record) error {
	data, err := yson.MarshalFormat(rec, yson.FormatBinary)
	if err != nil {
		return err
	}
	r.records = append(r.records, data)
	return nil
}

func populate(t testing.TB, e *Engine) {
	setupQueue(t, e)
	newMounted(t, e, "t", kvSchema())
	insert(t, e, "t", InsertOptions{}, map[string]any{"k": "a", "v": int64(1)}, map[string]any{"k": "b", "w": "x"})
	_, err := e.Run(func(tx string) error { return e.Delete(tx, "t", []map[string]any{{"k": "b"}}) })
	require.NoError(t, err)
	insert(t, e, "t", InsertOptions{Update: true}, map[string]any{"k": "a", "w": "y"})
	insert(t, e, "q", InsertOptions{}, map[string]any{"$tablet_index": int64(1), "value": "r0"}, map[string]any{"$tablet_index": int64(1), "value": "r1"})
	require.NoError(t, e.Trim("q", 1, 1))
	require.NoError(t, e.RegisterConsumer(Registration{Queue: "q", QueuePath: "//tmp/q", Consumer: "c", ConsumerPath: "//tmp/c"}))
	_, err = e.Run(func(tx string) error { return e.AdvanceConsumer(tx, "c", "//tmp/c", "//tmp/q", 1, nil, 2) })
	require.NoError(t, err)
	_, err = e.CreateProducerSession("p", "//tmp/q", "s", "meta", true)
	require.NoError(t, err)
}

func dump(t *testing.T, e *Engine) map[string][]map[string]any {
	out := map[string][]map[string]any{}
	for _, id := range []string{"q", "c", "p", "t"} {
		require.NoError(t, e.Scan(id, ReadOptions{}, func(r map[string]any) bool { out[id] = append(out[id], maps.Clone(r)); return true }))
	}
	return out
}

func TestReplayReproducesState(t *testing.T) {
	j := &recorder{}
	e := New(Config{Journal: j})
	populate(t, e)
	want := dump(t, e)
	require.NotEmpty(t, want["t"])

	replayed := New(Config{})
	for i, data := range j.records {
		var rec Record
		require.NoError(t, yson.Unmarshal(data, &rec))
		require.NoError(t, replayed.Apply(&rec), "record %d", i)
	}
	assert.Equal(t, want, dump(t, replayed))
	assert.Len(t, replayed.Registrations("q"), 1)
	assert.GreaterOrEqual(t, replayed.Oracle().Last(), e.Oracle().Last()-1)

	// The history survives too: a read at an old timestamp sees the deleted row.
	var first Record
	for _, data := range j.records {
		var rec Record
		require.NoError(t, yson.Unmarshal(data, &rec))
		if rec.Kind == RecordCommit && slices.ContainsFunc(rec.Commit.Writes, func(w RowWrite) bool { return w.Table == "t" }) {
			first = rec
			break
		}
	}
	rows := lookup(t, replayed, "t", LookupOptions{ReadOptions: ReadOptions{Timestamp: first.Commit.Timestamp}}, map[string]any{"k": "b"})
	assert.Equal(t, [][]any{{"b", nil, "x"}}, rows)
}

func TestSnapshotRestore(t *testing.T) {
	e := New(Config{})
	populate(t, e)
	data, err := e.Snapshot()
	require.NoError(t, err)
	restored := New(Config{})
	require.NoError(t, restored.Restore(data))
	assert.Equal(t, dump(t, e), dump(t, restored))
	assert.Equal(t, e.Oracle().Last(), restored.Oracle().Last())
	assert.Less(t, e.Oracle().Last(), restored.Oracle().Next())
	tablets, err := restored.Tablets("q")
	require.NoError(t, err)
	assert.Equal(t, int64(1), tablets[1].TrimmedRowCount)

	// Conflict bookkeeping survives: a tx started before the snapshot's last
	// write of "a" would conflict; a new one does not.
	_, err = restored.StartTx("tx", time.Minute)
	require.NoError(t, err)
	require.NoError(t, restored.Insert("tx", "t", []map[string]any{{"k": "a"}}, InsertOptions{}))
	_, err = restored.Commit("tx", nil, nil)
	require.NoError(t, err)
	require.Error(t, restored.Restore([]byte("{garbage")))
}

func TestDeletedRowsAreCollected(t *testing.T) {
	now := time.Unix(10_000, 0)
	e := New(Config{Clock: func() time.Time { return now }, VersionRetention: time.Minute})
	newMounted(t, e, "t", kvSchema())
	insert(t, e, "t", InsertOptions{}, map[string]any{"k": "a", "v": int64(1)})
	before := Timestamp(e.Oracle().Next())
	_, err := e.Run(func(tx string) error { return e.Delete(tx, "t", []map[string]any{{"k": "a"}, {"k": "never-written"}}) })
	require.NoError(t, err)

	// Within the retention window the deleted row is still readable at an old timestamp
	// and its delete still conflicts with transactions that started before it.
	now = now.Add(30 * time.Second)
	insert(t, e, "t", InsertOptions{}, map[string]any{"k": "b"})
	assert.Len(t, lookup(t, e, "t", LookupOptions{ReadOptions: ReadOptions{Timestamp: before}}, map[string]any{"k": "a"}), 1)
	assert.Len(t, e.tables["t"].rows, 3)

	now = now.Add(2 * time.Minute)
	insert(t, e, "t", InsertOptions{}, map[string]any{"k": "c"})
	assert.Len(t, e.tables["t"].rows, 2, "rows a and never-written are gone")
	var keys []any
	require.NoError(t, e.Scan("t", ReadOptions{}, func(r map[string]any) bool { keys = append(keys, r["k"]); return true }))
	assert.Equal(t, []any{"b", "c"}, keys)
}

func TestDeleteOfMissingRowConflicts(t *testing.T) {
	e := New(Config{})
	newMounted(t, e, "t", kvSchema())
	_, err := e.StartTx("writer", time.Minute)
	require.NoError(t, err)
	_, err = e.Run(func(tx string) error { return e.Delete(tx, "t", []map[string]any{{"k": "x"}}) })
	require.NoError(t, err)
	require.NoError(t, e.Insert("writer", "t", []map[string]any{{"k": "x"}}, InsertOptions{}))
	_, err = e.Commit("writer", nil, nil)
	requireCode(t, err, yterrors.CodeTransactionLockConflict)
}

func TestLoadIntoUnmountedTables(t *testing.T) {
	e := New(Config{})
	require.NoError(t, e.CreateTable("t", "//tmp/t", kvSchema(), ""))
	require.NoError(t, e.Load("t", []map[string]any{{"k": "a", "v": int64(1)}, {"k": "a", "v": int64(2)}, {"k": "b"}}))
	require.Error(t, e.Load("t", []map[string]any{{"k": int64(1)}}))
	require.NoError(t, e.SetState("t", StateMounted))
	assert.Equal(t, [][]any{{"a", int64(2), nil}, {"b", nil, nil}}, lookup(t, e, "t", LookupOptions{}, map[string]any{"k": "a"}, map[string]any{"k": "b"}))

	require.NoError(t, e.CreateTable("q", "//tmp/q", orderedSchema(), ""))
	require.NoError(t, e.Load("q", []map[string]any{{"value": "x"}, {"value": "y"}}))
	require.NoError(t, e.SetState("q", StateMounted))
	assert.Equal(t, []any{"x", "y"}, queueValues(t, e, 0))
}

func TestScanOrderWithInterleavedWrites(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	e := New(Config{})
	newMounted(t, e, "t", schema.Schema{Columns: []schema.Column{
		{Name: "k", Type: schema.TypeInt64, SortOrder: schema.SortAscending},
	}})
	live := map[int64]bool{}
	for round := 0; round < 50; round++ {
		var rows []map[string]any
		for i := 0; i < rng.Intn(20); i++ {
			k := int64(rng.Intn(500))
			rows = append(rows, map[string]any{"k": k})
			live[k] = true
		}
		insert(t, e, "t", InsertOptions{}, rows...)
		if round%5 == 4 {
			for k := range live {
				_, err := e.Run(func(tx string) error { return e.Delete(tx, "t", []map[string]any{{"k": k}}) })
				require.NoError(t, err)
				delete(live, k)
				break
			}
		}
		var want []any
		for k := range live {
			want = append(want, k)
		}
		slices.SortFunc(want, func(a, b any) int { return cmp.Compare(a.(int64), b.(int64)) })
		var got []any
		require.NoError(t, e.Scan("t", ReadOptions{}, func(r map[string]any) bool { got = append(got, r["k"]); return true }))
		require.Equal(t, want, got, "round %d", round)
	}
}

// TestOpenTransactionHoldsVersions: commits drop versions older than VersionRetention, but
// never what an open transaction reads at its start timestamp or must conflict with.
func TestOpenTransactionHoldsVersions(t *testing.T) {
	now := time.Unix(10_000, 0)
	e := New(Config{Clock: func() time.Time { return now }, VersionRetention: time.Minute})
	newMounted(t, e, "t", kvSchema())
	insert(t, e, "t", InsertOptions{}, map[string]any{"k": "a", "v": int64(1)}, map[string]any{"k": "c", "v": int64(1)})
	_, err := e.StartTx("old", time.Hour)
	require.NoError(t, err)
	now = now.Add(time.Second)
	insert(t, e, "t", InsertOptions{}, map[string]any{"k": "a", "v": int64(2)})
	_, err = e.Run(func(tx string) error { return e.Delete(tx, "t", []map[string]any{{"k": "c"}}) })
	require.NoError(t, err)
	for range 5 {
		now = now.Add(time.Minute)
		insert(t, e, "t", InsertOptions{}, map[string]any{"k": "a", "v": int64(3)})
	}
	got := lookup(t, e, "t", LookupOptions{ReadOptions: ReadOptions{Tx: "old"}}, map[string]any{"k": "a"}, map[string]any{"k": "c"})
	require.Len(t, got, 2, "the open transaction still sees both rows as of its start")
	assert.Contains(t, got[0], int64(1))
	assert.Len(t, e.tables["t"].rows["\x05\x00\x00\x00\x01c"].versions, 2, "the deleted row stays while the transaction may conflict with it")
	require.NoError(t, e.Insert("old", "t", []map[string]any{{"k": "c", "v": int64(9)}}, InsertOptions{}))
	_, err = e.Commit("old", nil, nil)
	requireCode(t, err, yterrors.CodeTransactionLockConflict)

	// Once it is gone, the next commit drops what only it needed.
	now = now.Add(2 * time.Minute)
	insert(t, e, "t", InsertOptions{}, map[string]any{"k": "a", "v": int64(4)})
	assert.Len(t, e.tables["t"].rows, 1, "row c is collected")
	assert.Len(t, e.tables["t"].rows["\x05\x00\x00\x00\x01a"].versions, 2, "a keeps its newest version before the horizon and the one after")
}

// TestRowKeySharesEncodedKey: a row's string key values point into its encoded key (the
// table's map key), and every version's key values are the row's own, so a row holds its
// key's bytes once however often it is rewritten.
func TestRowKeySharesEncodedKey(t *testing.T) {
	e := New(Config{})
	newMounted(t, e, "t", kvSchema())
	insert(t, e, "t", InsertOptions{}, map[string]any{"k": "some-key", "v": int64(1)})
	insert(t, e, "t", InsertOptions{}, map[string]any{"k": "some-key", "v": int64(2)})
	for enc, r := range e.tables["t"].rows {
		k := r.key[0].(string)
		assert.Equal(t, "some-key", k)
		start := uintptr(unsafe.Pointer(unsafe.StringData(enc)))
		at := uintptr(unsafe.Pointer(unsafe.StringData(k)))
		assert.True(t, at >= start && at+uintptr(len(k)) <= start+uintptr(len(enc)), "key bytes inside the encoded key")
		require.Len(t, r.versions, 2)
		for _, v := range r.versions {
			assert.Equal(t, unsafe.StringData(k), unsafe.StringData(v.values[0].(string)), "versions share the row's key")
		}
	}
	got := lookup(t, e, "t", LookupOptions{}, map[string]any{"k": "some-key"})
	require.Len(t, got, 1)
	assert.Equal(t, []any{"some-key", int64(2), nil}, got[0])
}

// TestCollectedRowsLeaveIndex: a table whose rows are written, deleted and never scanned (as
// the output store is used) does not keep its collected rows in the key-order index: it
// holds what the table holds, give or take the removed half, and a scan afterwards sees
// exactly the rows not deleted.
func TestCollectedRowsLeaveIndex(t *testing.T) {
	now := time.Unix(10_000, 0)
	e := New(Config{Clock: func() time.Time { return now }, VersionRetention: time.Second})
	newMounted(t, e, "t", kvSchema())
	for round := range 50 {
		rows := make([]map[string]any, 100)
		keys := make([]map[string]any, 100)
		for i := range rows {
			k := fmt.Sprintf("%03d-%03d", round, i)
			rows[i] = map[string]any{"k": k, "v": int64(i)}
			keys[i] = map[string]any{"k": k}
		}
		insert(t, e, "t", InsertOptions{}, rows...)
		// The round's last row stays; the others are deleted.
		_, err := e.Run(func(tx string) error { return e.Delete(tx, "t", keys[:99]) })
		require.NoError(t, err)
		now = now.Add(2 * time.Second) // past the retention: the next commit collects them
	}
	tb := e.tables["t"]
	require.Len(t, tb.rows, 50+99, "the last round's deletes are not collected yet")
	assert.LessOrEqual(t, len(tb.index)+len(tb.fresh), 2*len(tb.rows)+1)
	var got []any
	require.NoError(t, e.Scan("t", ReadOptions{}, func(r map[string]any) bool {
		if r["v"] == int64(99) {
			got = append(got, r["k"])
		}
		return true
	}))
	require.Len(t, got, 50)
	assert.Equal(t, "000-099", got[0])
	assert.Equal(t, "049-099", got[49])
}

// TestPullBeyondOneBlock: a pull of more rows than its first value block holds
// (pullBlockRows) returns every row whole and in order, the earlier ones unchanged by the
// block's growth; the data weight limit ends a pull early.
func TestPullBeyondOneBlock(t *testing.T) {
	e := New(Config{})
	setupQueue(t, e)
	require.NoError(t, e.RegisterConsumer(Registration{Queue: "q", QueuePath: "//tmp/q", Consumer: "c", ConsumerPath: "//tmp/c"}))
	const n = 3*pullBlockRows + 7
	rows := make([]map[string]any, n)
	for i := range rows {
		rows[i] = map[string]any{"$tablet_index": int64(1), "value": fmt.Sprintf("r%05d", i)}
	}
	insert(t, e, "q", InsertOptions{}, rows...)
	rs, err := e.PullConsumer("c", "//tmp/c", "q", "//tmp/q", 1, PullOptions{Offset: 5, MaxRowCount: n})
	require.NoError(t, err)
	require.Len(t, rs.Rows, n-5)
	for i, r := range rs.Rows {
		require.Equal(t, []any{int64(1), int64(i + 5), fmt.Sprintf("r%05d", i+5)}, r, "row %d", i)
	}
	rs, err = e.PullConsumer("c", "//tmp/c", "q", "//tmp/q", 1, PullOptions{MaxRowCount: n, MaxDataWeight: 100})
	require.NoError(t, err)
	assert.Less(t, len(rs.Rows), 10, "the data weight limit ends the pull")
	assert.NotEmpty(t, rs.Rows)
}
