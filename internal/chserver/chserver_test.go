package chserver_test

import (
	"context"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/internal/chserver"
)

func TestMain(m *testing.M) {
	code := m.Run()
	chserver.RemoveBinary()
	os.Exit(code)
}

// TestServerDeduplicatesByToken: the helper server runs a MergeTree table with
// non_replicated_deduplication_window; a block inserted twice with the same
// insert_deduplication_token is stored once, also after a kill -9 and a restart on the same
// data directory, and a block with another token is stored.
func TestServerDeduplicatesByToken(t *testing.T) {
	srv := chserver.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	open := func() clickhouse.Conn {
		conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{srv.TCPAddr}})
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close() })
		return conn
	}
	conn := open()
	require.NoError(t, conn.Exec(ctx, `CREATE TABLE t (id UInt64, s String) ENGINE = MergeTree ORDER BY id
		SETTINGS non_replicated_deduplication_window = 1000`))
	insert := func(conn clickhouse.Conn, token string, ids ...uint64) {
		t.Helper()
		ictx := clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{"insert_deduplication_token": token}))
		b, err := conn.PrepareBatch(ictx, "INSERT INTO t (id, s)")
		require.NoError(t, err)
		for _, id := range ids {
			require.NoError(t, b.Append(id, "x"))
		}
		require.NoError(t, b.Send())
	}
	count := func(conn clickhouse.Conn) (rows, blocks uint64) {
		t.Helper()
		require.NoError(t, conn.QueryRow(ctx, "SELECT count(), uniqExact(_part) FROM t").Scan(&rows, &blocks))
		return rows, blocks
	}
	insert(conn, "a", 1, 2, 3)
	insert(conn, "a", 1, 2, 3)
	rows, blocks := count(conn)
	require.Equal(t, uint64(3), rows, "the repeat of token a is dropped")
	require.Equal(t, uint64(1), blocks)

	srv.Restart(t)
	conn = open()
	insert(conn, "a", 1, 2, 3)
	rows, _ = count(conn)
	require.Equal(t, uint64(3), rows, "the dedup survives kill -9 and a restart")
	insert(conn, "b", 1, 2, 3)
	rows, _ = count(conn)
	require.Equal(t, uint64(6), rows, "another token is inserted")
}

// TestServerIsSupervised: when the server process dies by itself (here: SIGKILL from outside,
// as chDB's abort ends it), it is started again on the same address with its tables, and
// Restarts counts it; after Kill it stays down.
func TestServerIsSupervised(t *testing.T) {
	srv := chserver.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{srv.TCPAddr}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	require.NoError(t, conn.Exec(ctx, "CREATE TABLE t (id UInt64) ENGINE = MergeTree ORDER BY id"))
	require.NoError(t, conn.Exec(ctx, "INSERT INTO t VALUES (1), (2)"))

	addr, pid := srv.TCPAddr, srv.Pid()
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	deadline := time.Now().Add(time.Minute)
	for srv.Restarts() == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	require.Equal(t, 1, srv.Restarts(), "the supervisor restarted the server")
	require.Equal(t, addr, srv.TCPAddr, "on the same address")
	require.NotEqual(t, pid, srv.Pid(), "as a new process")
	var n uint64
	require.NoError(t, conn.QueryRow(ctx, "SELECT count() FROM t").Scan(&n))
	require.Equal(t, uint64(2), n, "with its data")

	pid = srv.Pid()
	srv.Kill()
	require.Error(t, syscall.Kill(pid, 0), "the killed process is gone")
	_, err = net.DialTimeout("tcp", addr, time.Second)
	require.Error(t, err, "a killed server stays down")
	require.Equal(t, 1, srv.Restarts())
}
