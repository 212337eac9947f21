package ytlocal_test

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yt"
	"go.ytsaurus.tech/yt/go/yterrors"

	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytlocal/ytlocaltest"
)

// modelTx is the reference model of a master transaction writing string nodes.
type modelTx struct {
	id       yt.TxID
	parent   *modelTx
	children []*modelTx
	writes   map[int]string
}

type cypressModel struct {
	trunk map[int]string
	live  []*modelTx
	locks map[int][]*modelTx // key -> lock holders
}

func (m *cypressModel) hasAncestor(t, a *modelTx) bool {
	for x := t; x != nil; x = x.parent {
		if x == a {
			return true
		}
	}
	return false
}

func (m *cypressModel) read(t *modelTx, k int) string {
	for x := t; x != nil; x = x.parent {
		if v, ok := x.writes[k]; ok {
			return v
		}
	}
	return m.trunk[k]
}

func (m *cypressModel) conflicts(t *modelTx, k int) bool {
	for _, h := range m.locks[k] {
		if !m.hasAncestor(t, h) {
			return true
		}
	}
	return false
}

// release drops t's locks, handing them to to (nil: released).
func (m *cypressModel) release(t, to *modelTx) {
	for k, hs := range m.locks {
		if !slices.Contains(hs, t) {
			continue
		}
		hs = slices.DeleteFunc(slices.Clone(hs), func(x *modelTx) bool { return x == t })
		if to != nil && !slices.Contains(hs, to) {
			hs = append(hs, to)
		}
		m.locks[k] = hs
	}
}

func (m *cypressModel) drop(t *modelTx) {
	m.live = slices.DeleteFunc(m.live, func(x *modelTx) bool { return x == t })
	if t.parent != nil {
		t.parent.children = slices.DeleteFunc(t.parent.children, func(x *modelTx) bool { return x == t })
	}
}

func (m *cypressModel) abort(t *modelTx) {
	for _, c := range slices.Clone(t.children) {
		m.abort(c)
	}
	m.release(t, nil)
	m.drop(t)
}

func (m *cypressModel) commit(t *modelTx) {
	for _, c := range slices.Clone(t.children) {
		m.abort(c)
	}
	for k, v := range t.writes {
		if t.parent != nil {
			t.parent.writes[k] = v
		} else {
			m.trunk[k] = v
		}
	}
	m.release(t, t.parent)
	m.drop(t)
}

// TestCypressTransactionsAgainstModel runs seeded random writes, reads, nested
// transactions, commits, aborts and restarts through the SDK and compares every read and
// every lock conflict with a reference model. A failing seed is printed.
func TestCypressTransactionsAgainstModel(t *testing.T) {
	for seed := int64(1); seed <= modelSeeds; seed++ {
		t.Run(fmt.Sprintf("seed_%d", seed), func(t *testing.T) { runModel(t, seed) })
	}
}

var modelSeeds, modelSteps int64 = 4, 150

func runModel(t *testing.T, seed int64) {
	const keys = 4
	ctx := context.Background()
	rng := rand.New(rand.NewSource(seed))
	cfg := ytlocal.Config{DataDir: t.TempDir(), SnapshotEvery: 7}
	srv := ytlocaltest.Start(t, cfg)
	yc := newClient(t, srv.Addr())
	path := func(k int) ypath.Path { return ypath.Path(fmt.Sprintf("//tmp/m/k%d", k)) }
	m := &cypressModel{trunk: map[int]string{}, locks: map[int][]*modelTx{}}
	for k := 0; k < keys; k++ {
		require.NoError(t, yc.SetNode(ctx, path(k), "init", &yt.SetNodeOptions{Recursive: true}))
		m.trunk[k] = "init"
	}
	timeout := yson.Duration(time.Hour)
	opts := func(tx *modelTx) *yt.TransactionOptions {
		if tx == nil {
			return nil
		}
		return &yt.TransactionOptions{TransactionID: tx.id}
	}
	pick := func() *modelTx {
		if len(m.live) == 0 || rng.Intn(4) == 0 {
			return nil
		}
		return m.live[rng.Intn(len(m.live))]
	}
	for step := int64(0); step < modelSteps; step++ {
		where := fmt.Sprintf("seed %d step %d", seed, step)
		switch op := rng.Intn(10); {
		case op < 2: // begin, maybe nested
			parent := pick()
			id, err := yc.StartTx(ctx, &yt.StartTxOptions{Timeout: &timeout, TransactionOptions: opts(parent)})
			require.NoError(t, err, where)
			tx := &modelTx{id: id, parent: parent, writes: map[int]string{}}
			if parent != nil {
				parent.children = append(parent.children, tx)
			}
			m.live = append(m.live, tx)
		case op < 5: // write
			tx, k := pick(), rng.Intn(keys)
			v := fmt.Sprintf("v%d", step)
			err := yc.SetNode(ctx, path(k), v, &yt.SetNodeOptions{TransactionOptions: opts(tx)})
			if m.conflicts(tx, k) {
				require.True(t, yterrors.ContainsErrorCode(err, yterrors.CodeConcurrentTransactionLockConflict), "%s: want lock conflict, got %v", where, err)
				continue
			}
			require.NoError(t, err, where)
			if tx == nil {
				m.trunk[k] = v
			} else {
				tx.writes[k] = v
				if !slices.Contains(m.locks[k], tx) {
					m.locks[k] = append(m.locks[k], tx)
				}
			}
		case op < 7: // read
			tx, k := pick(), rng.Intn(keys)
			var got string
			require.NoError(t, yc.GetNode(ctx, path(k), &got, &yt.GetNodeOptions{TransactionOptions: opts(tx)}), where)
			require.Equal(t, m.read(tx, k), got, "%s: read k%d", where, k)
		case op < 8: // commit
			if tx := pick(); tx != nil {
				require.NoError(t, yc.CommitTx(ctx, tx.id, nil), where)
				m.commit(tx)
			}
		case op < 9: // abort
			if tx := pick(); tx != nil {
				require.NoError(t, yc.AbortTx(ctx, tx.id, nil), where)
				m.abort(tx)
			}
		default: // restart: open transactions are lost, committed state stays
			if rng.Intn(3) == 0 {
				require.NoError(t, srv.Close(), where)
				srv = ytlocaltest.Start(t, cfg)
				yc = newClient(t, srv.Addr())
				for len(m.live) > 0 {
					m.abort(m.live[0])
				}
			}
		}
	}
	for k := 0; k < keys; k++ {
		var got string
		require.NoError(t, yc.GetNode(ctx, path(k), &got, nil))
		require.Equal(t, m.trunk[k], got, "seed %d: final k%d", seed, k)
	}
}
