package ytlocal_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yt"

	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytlocal/ytlocaltest"
)

func readAll(t *testing.T, yc yt.TableClient, p ypath.YPath) []kv {
	t.Helper()
	r, err := yc.ReadTable(context.Background(), p, nil)
	require.NoError(t, err)
	defer r.Close()
	var out []kv
	for r.Next() {
		var row kv
		require.NoError(t, r.Scan(&row))
		out = append(out, row)
	}
	require.NoError(t, r.Err())
	return out
}

func writeRows(t *testing.T, yc yt.Client, p ypath.YPath, rows ...kv) {
	t.Helper()
	w, err := yc.WriteTable(context.Background(), p, nil)
	require.NoError(t, err)
	for _, r := range rows {
		require.NoError(t, w.Write(r))
	}
	require.NoError(t, w.Commit())
}

// populate makes committed and uncommitted changes of several kinds.
func populate(t *testing.T, yc yt.Client) {
	ctx := context.Background()
	_, err := yc.CreateNode(ctx, ypath.Path("//tmp/d/e"), yt.NodeMap, &yt.CreateNodeOptions{Recursive: true,
		Attributes: map[string]any{"color": "red"}})
	require.NoError(t, err)
	_, err = yt.CreateTable(ctx, yc, ypath.Path("//tmp/d/t"))
	require.NoError(t, err)
	writeRows(t, yc, ypath.Path("//tmp/d/t"), kv{"a", 1}, kv{"b", 2})
	writeRows(t, yc, ypath.NewRich("//tmp/d/t").SetAppend(), kv{"c", 3})
	require.NoError(t, yc.SetNode(ctx, ypath.Path("//tmp/d/doc"), map[string]any{"x": int64(1)}, nil))
	require.NoError(t, yc.RemoveNode(ctx, ypath.Path("//tmp/d/e"), nil))

	tx, err := yc.BeginTx(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, tx.SetNode(ctx, ypath.Path("//tmp/d/@committed_in_tx"), true, nil))
	require.NoError(t, tx.Commit())

	// Low-level transaction: no client pinger that would outlive the server.
	minute := yson.Duration(time.Minute)
	open, err := yc.StartTx(ctx, &yt.StartTxOptions{Timeout: &minute})
	require.NoError(t, err)
	_, err = yc.CreateNode(ctx, ypath.Path("//tmp/d/uncommitted"), yt.NodeMap, &yt.CreateNodeOptions{
		TransactionOptions: &yt.TransactionOptions{TransactionID: open}})
	require.NoError(t, err)
}

func verify(t *testing.T, yc yt.Client) {
	ctx := context.Background()
	require.Equal(t, []kv{{"a", 1}, {"b", 2}, {"c", 3}}, readAll(t, yc, ypath.Path("//tmp/d/t")))
	ok, err := yc.NodeExists(ctx, ypath.Path("//tmp/d/e"), nil)
	require.NoError(t, err)
	require.False(t, ok)
	require.NoError(t, yc.GetNode(ctx, ypath.Path("//tmp/d/@committed_in_tx"), new(bool), nil))
	var doc map[string]int64
	require.NoError(t, yc.GetNode(ctx, ypath.Path("//tmp/d/doc"), &doc, nil))
	require.Equal(t, map[string]int64{"x": 1}, doc)
	ok, err = yc.NodeExists(ctx, ypath.Path("//tmp/d/uncommitted"), nil)
	require.NoError(t, err)
	require.False(t, ok, "an open transaction does not survive a restart")
}

func TestRestartKeepsCommittedState(t *testing.T) {
	for _, every := range []int{0, 3} {
		t.Run(fmt.Sprintf("snapshot_every_%d", every), func(t *testing.T) {
			dir := t.TempDir()
			cfg := ytlocal.Config{DataDir: dir, SnapshotEvery: every}
			s1, err := ytlocal.Start(context.Background(), cfg)
			require.NoError(t, err)
			yc1 := newClient(t, s1.Addr())
			populate(t, yc1)
			require.NoError(t, s1.Close())
			if every > 0 {
				_, err := os.Stat(filepath.Join(dir, "snapshot"))
				require.NoError(t, err, "a snapshot must have been taken")
			}

			s2 := ytlocaltest.Start(t, cfg)
			yc2 := newClient(t, s2.Addr())
			verify(t, yc2)
			// Writes continue after the restart and survive another one.
			writeRows(t, yc2, ypath.NewRich("//tmp/d/t").SetAppend(), kv{"d", 4})
			require.NoError(t, s2.Close())
			s3 := ytlocaltest.Start(t, cfg)
			yc3 := newClient(t, s3.Addr())
			require.Equal(t, []kv{{"a", 1}, {"b", 2}, {"c", 3}, {"d", 4}}, readAll(t, yc3, ypath.Path("//tmp/d/t")))
		})
	}
}

func TestTornLogTailIsDropped(t *testing.T) {
	dir := t.TempDir()
	cfg := ytlocal.Config{DataDir: dir}
	s1, err := ytlocal.Start(context.Background(), cfg)
	require.NoError(t, err)
	populate(t, newClient(t, s1.Addr()))
	require.NoError(t, s1.Close())

	segs, err := filepath.Glob(filepath.Join(dir, "wal.*"))
	require.NoError(t, err)
	require.Len(t, segs, 1)
	f, err := os.OpenFile(segs[0], os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte{0x40, 0, 0, 0, 1, 2, 3, 4, 'c', 'y'}) // a record cut short by a crash
	require.NoError(t, err)
	require.NoError(t, f.Close())

	s2 := ytlocaltest.Start(t, cfg)
	yc := newClient(t, s2.Addr())
	verify(t, yc)
	writeRows(t, yc, ypath.NewRich("//tmp/d/t").SetAppend(), kv{"e", 5})
	require.NoError(t, s2.Close())
	s3 := ytlocaltest.Start(t, cfg)
	require.Len(t, readAll(t, newClient(t, s3.Addr()), ypath.Path("//tmp/d/t")), 4)
}

func TestAppendsInsideTransactions(t *testing.T) {
	ctx := context.Background()
	yc := newClient(t, ytlocaltest.New(t))
	p := ypath.Path("//tmp/appends")
	_, err := yt.CreateTable(ctx, yc, p)
	require.NoError(t, err)
	writeRows(t, yc, p, kv{"base", 0})

	tx, err := yc.BeginTx(ctx, nil)
	require.NoError(t, err)
	appendIn := func(w yt.TableClient, rows ...kv) {
		tw, err := w.WriteTable(ctx, ypath.NewRich(string(p)).SetAppend(), nil)
		require.NoError(t, err)
		for _, r := range rows {
			require.NoError(t, tw.Write(r))
		}
		require.NoError(t, tw.Commit())
	}
	appendIn(tx, kv{"tx", 1})
	appendIn(tx, kv{"tx", 2})
	child, err := tx.BeginTx(ctx, nil)
	require.NoError(t, err)
	appendIn(child, kv{"child", 3})
	require.Equal(t, []kv{{"base", 0}, {"tx", 1}, {"tx", 2}, {"child", 3}}, readAll(t, child, p))
	require.Equal(t, []kv{{"base", 0}, {"tx", 1}, {"tx", 2}}, readAll(t, tx, p))
	require.NoError(t, child.Commit())
	// Committed concurrently outside the transaction: appends merge, nothing is lost.
	writeRows(t, yc, ypath.NewRich(string(p)).SetAppend(), kv{"outside", 4})
	require.Equal(t, []kv{{"base", 0}, {"outside", 4}}, readAll(t, yc, p))
	require.NoError(t, tx.Commit())
	require.Equal(t, []kv{{"base", 0}, {"outside", 4}, {"tx", 1}, {"tx", 2}, {"child", 3}}, readAll(t, yc, p))
}
