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

// simModel is the reference semantics of tablet transactions on a table with one
// lock group: first committer wins, snapshot reads at the start timestamp.
type simModel struct {
	history map[string][]simVersion // key -> committed versions, ascending ts
}

type simVersion struct {
	ts    Timestamp
	value any // nil: deleted
}

func (m *simModel) at(key string, ts Timestamp) any {
	var v any
	for _, x := range m.history[key] {
		if x.ts <= ts {
			v = x.value
		}
	}
	return v
}

func (m *simModel) lastWrite(key string) Timestamp {
	h := m.history[key]
	if len(h) == 0 {
		return 0
	}
	return h[len(h)-1].ts
}

type simTx struct {
	id     string
	start  Timestamp
	writes map[string]any // key -> value (nil = delete); last write wins
	order  []string
	locked map[string]bool // shared strong locks
}

// TestTransactionsAgainstModel runs seeded random interleavings of tablet
// transactions (writes, deletes, shared strong locks, snapshot reads, commits,
// aborts) and checks every outcome and every read against the model. A failing
// seed is printed; rerun it with -run 'TestTransactionsAgainstModel/seed=N'.
func TestTransactionsAgainstModel(t *testing.T) {
	for seed := int64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { simulate(t, seed) })
	}
}

func simulate(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	e := New(Config{})
	newMounted(t, e, "t", schema.Schema{Columns: []schema.Column{
		{Name: "k", Type: schema.TypeString, SortOrder: schema.SortAscending},
		{Name: "v", Type: schema.TypeInt64},
	}})
	model := &simModel{history: map[string][]simVersion{}}
	lockTS := map[string]Timestamp{} // key -> last committed strong lock
	var open []*simTx
	keys := []string{"a", "b", "c", "d"}
	nextID := 0
	for step := 0; step < 300; step++ {
		switch op := rng.Intn(10); {
		case op < 2 || len(open) == 0:
			nextID++
			id := fmt.Sprintf("tx%d", nextID)
			start, err := e.StartTx(id, time.Hour)
			require.NoError(t, err)
			open = append(open, &simTx{id: id, start: start, writes: map[string]any{}, locked: map[string]bool{}})
		case op < 5:
			tx := open[rng.Intn(len(open))]
			k := keys[rng.Intn(len(keys))]
			if rng.Intn(4) == 0 {
				require.NoError(t, e.Delete(tx.id, "t", []map[string]any{{"k": k}}))
				tx.writes[k] = nil
			} else {
				v := int64(rng.Intn(1000))
				require.NoError(t, e.Insert(tx.id, "t", []map[string]any{{"k": k, "v": v}}, InsertOptions{}))
				tx.writes[k] = v
			}
			tx.order = append(tx.order, k)
		case op < 6:
			tx := open[rng.Intn(len(open))]
			k := keys[rng.Intn(len(keys))]
			require.NoError(t, e.LockRows(tx.id, "t", []map[string]any{{"k": k}}, nil, LockSharedStrong))
			tx.locked[k] = true
		case op < 7:
			tx := open[rng.Intn(len(open))]
			k := keys[rng.Intn(len(keys))]
			rs, err := e.Lookup("t", []map[string]any{{"k": k}}, LookupOptions{ReadOptions: ReadOptions{Tx: tx.id}, KeepMissingRows: true})
			require.NoError(t, err)
			var got any
			if rs.Rows[0] != nil {
				got = rs.Rows[0][1]
			}
			require.Equal(t, model.at(k, tx.start), got, "seed %d step %d: snapshot read of %q in %s", seed, step, k, tx.id)
		case op < 9:
			i := rng.Intn(len(open))
			tx := open[i]
			open = append(open[:i], open[i+1:]...)
			wantOK := true
			for k := range tx.writes {
				if model.lastWrite(k) > tx.start || lockTS[k] > tx.start {
					wantOK = false
				}
			}
			for k := range tx.locked {
				if model.lastWrite(k) > tx.start {
					wantOK = false
				}
			}
			ts, err := e.Commit(tx.id, nil, nil)
			if !wantOK {
				require.Error(t, err, "seed %d step %d: %s should conflict", seed, step, tx.id)
				require.True(t, yterrors.ContainsErrorCode(err, yterrors.CodeTransactionLockConflict))
				continue
			}
			require.NoError(t, err, "seed %d step %d: %s", seed, step, tx.id)
			for k, v := range tx.writes {
				model.history[k] = append(model.history[k], simVersion{ts: ts, value: v})
			}
			for k := range tx.locked {
				if _, written := tx.writes[k]; !written {
					lockTS[k] = ts
				}
			}
		default:
			i := rng.Intn(len(open))
			require.NoError(t, e.Abort(open[i].id))
			open = append(open[:i], open[i+1:]...)
		}
		// The latest committed state always matches the model.
		for _, k := range keys {
			rs, err := e.Lookup("t", []map[string]any{{"k": k}}, LookupOptions{KeepMissingRows: true})
			require.NoError(t, err)
			var got any
			if rs.Rows[0] != nil {
				got = rs.Rows[0][1]
			}
			require.Equal(t, model.at(k, MaxTimestamp), got, "seed %d step %d: latest %q", seed, step, k)
		}
	}
}
