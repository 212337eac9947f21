package tablet

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/yterrors"
)

// Operation slices of finished transactions are reused by later calls (newOps,
// releaseOps), and a commit builds its map of pending writes only when a write merges into
// the row (update, aggregate). Transactions of several calls of 16–55 rows each — full
// writes, partial updates of rows written earlier in the same transaction, deletes — some
// of them failing on a conflict, must leave every row exactly as the model says.
func TestRecycledOperationSlices(t *testing.T) {
	e := New(Config{})
	newMounted(t, e, "t", schema.Schema{Columns: []schema.Column{
		{Name: "k", Type: schema.TypeInt64, SortOrder: schema.SortAscending},
		{Name: "a", Type: schema.TypeInt64},
		{Name: "b", Type: schema.TypeString},
	}})
	type value struct {
		a, b any
	}
	model := map[int64]value{} // committed rows
	rng := rand.New(rand.NewSource(11))
	const keys = 120
	conflicts := 0
	for round := range 60 {
		id := fmt.Sprintf("tx%d", round)
		_, err := e.StartTx(id, time.Hour)
		require.NoError(t, err)
		after := map[int64]value{}
		for k, v := range model {
			after[k] = v
		}
		touched := map[int64]bool{}
		for call := range 3 {
			perm := rng.Perm(keys)[:16+rng.Intn(40)] // distinct keys within a call
			for _, k := range perm {
				touched[int64(k)] = true
			}
			switch kind := rng.Intn(4); kind {
			case 0, 1: // full rows
				rows := make([]map[string]any, len(perm))
				for i, k := range perm {
					v := value{int64(round*1000 + call*100 + i), fmt.Sprintf("r%dc%d", round, call)}
					rows[i] = map[string]any{"k": int64(k), "a": v.a, "b": v.b}
					after[int64(k)] = v
				}
				require.NoError(t, e.Insert(id, "t", rows, InsertOptions{}))
			case 2: // partial updates: b stays as the transaction left it so far
				rows := make([]map[string]any, len(perm))
				for i, k := range perm {
					a := int64(-(round*1000 + call*100 + i))
					rows[i] = map[string]any{"k": int64(k), "a": a}
					after[int64(k)] = value{a, after[int64(k)].b}
				}
				require.NoError(t, e.Insert(id, "t", rows, InsertOptions{Update: true}))
			default: // deletes
				rows := make([]map[string]any, len(perm))
				for i, k := range perm {
					rows[i] = map[string]any{"k": int64(k)}
					delete(after, int64(k))
				}
				require.NoError(t, e.Delete(id, "t", rows))
			}
		}
		if round%7 == 3 {
			// A write committed in between makes this transaction fail; its operations
			// are released all the same.
			conflicts++
			k := int64(rng.Intn(keys))
			insert(t, e, "t", InsertOptions{}, map[string]any{"k": k, "a": int64(-1), "b": "between"})
			model[k] = value{int64(-1), "between"}
			if !touched[k] {
				// Make sure the transaction writes k, so that it conflicts.
				require.NoError(t, e.Insert(id, "t", []map[string]any{{"k": k, "a": int64(0), "b": "loser"}}, InsertOptions{}))
			}
			_, err := e.Commit(id, nil, nil)
			require.Error(t, err, "round %d", round)
			require.True(t, yterrors.ContainsErrorCode(err, yterrors.CodeTransactionLockConflict), "round %d: %v", round, err)
		} else {
			_, err := e.Commit(id, nil, nil)
			require.NoError(t, err, "round %d", round)
			model = after
		}
		for k := int64(0); k < keys; k++ {
			got := lookup(t, e, "t", LookupOptions{KeepMissingRows: true}, map[string]any{"k": k})
			want, ok := model[k]
			if !ok {
				require.Nil(t, got[0], "round %d key %d", round, k)
				continue
			}
			require.NotNil(t, got[0], "round %d key %d", round, k)
			require.Equal(t, []any{k, want.a, want.b}, got[0], "round %d key %d", round, k)
		}
	}
	require.Positive(t, conflicts)
	require.NotEmpty(t, e.spareOps, "no operation slice was recycled")
}
