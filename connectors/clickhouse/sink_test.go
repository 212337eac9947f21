package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"go.ytsaurus.tech/yt/go/schema"

	xzap "go.ytsaurus.tech/library/go/core/log/zap"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/internal/chserver"
)

func TestMain(m *testing.M) {
	code := m.Run()
	chserver.RemoveBinary()
	os.Exit(code)
}

// server is a test's ClickHouse server with a client.
type server struct {
	srv  *chserver.Server
	conn clickhouse.Conn
	ctx  context.Context
}

func startServer(t *testing.T) *server {
	t.Helper()
	srv := chserver.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{srv.TCPAddr}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return &server{srv: srv, conn: conn, ctx: ctx}
}

func (s *server) exec(t *testing.T, q string) {
	t.Helper()
	require.NoError(t, s.conn.Exec(s.ctx, q), q)
}

// counts returns count(), uniqExact(id) of table.
func (s *server) counts(t *testing.T, table string) (rows, unique uint64) {
	t.Helper()
	require.NoError(t, s.conn.QueryRow(s.ctx, "SELECT count(), uniqExact(id) FROM "+table).Scan(&rows, &unique))
	return rows, unique
}

// params are the parameters of a sink writing table on s.
func (s *server) params(table string) *Params {
	host, port, _ := strings.Cut(s.srv.TCPAddr, ":")
	var p int64
	fmt.Sscan(port, &p)
	return &Params{
		Hosts: []string{host}, Port: p, HostSelectionPolicy: OrderedRoundRobin, User: "default", Database: "default",
		Table: table, Codec: "lz4",
		Inputs: []registry.Input{{ID: "rows", Schema: schema.Schema{Columns: []schema.Column{
			{Name: "id", Type: schema.TypeUint64, Required: true}, {Name: "s", Type: schema.TypeString, Required: true},
		}}}},
	}
}

// observed returns a logger that records what it logs.
func observed() (*xzap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.InfoLevel)
	return &xzap.Logger{L: zap.New(core)}, logs
}

// batchesOf returns stored batches of ids [from, to), size ids each, as the runtime cuts them.
func batchesOf(from, to, size int) []connector.Batch {
	var out []connector.Batch
	for i := from; i < to; i += size {
		b := connector.Batch{FirstSeq: int64(i), LastSeq: int64(min(i+size, to) - 1)}
		for id := i; id < min(i+size, to); id++ {
			b.Rows = append(b.Rows, connector.Delivery{
				MessageID: fmt.Sprintf("0000000000000001-%08d", id), SequenceNumber: int64(id),
				Row: map[string]any{"id": uint64(id), "s": fmt.Sprint(id)},
			})
		}
		b.FirstID, b.LastID = b.Rows[0].MessageID, b.Rows[len(b.Rows)-1].MessageID
		out = append(out, b)
	}
	return out
}

// TestBatchingDeliverDeduplicates: the batching sink inserts stored batches cut into blocks
// of max_rows_per_batch, each with its greatest message id as insert_deduplication_token: a
// replay by a new sink instance (a restart), also after the server's kill -9, adds nothing.
func TestBatchingDeliverDeduplicates(t *testing.T) {
	s := startServer(t)
	s.exec(t, `CREATE TABLE t (id UInt64, s String) ENGINE = MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 1000`)
	s.exec(t, `SYSTEM STOP MERGES t`) // each insert's parts stay countable
	dyn := DefaultDynamic()
	dyn.MaxRowsPerBatch = 300
	open := func() *batching {
		b := newBatching(newTarget(Class, "out", s.params("t"), &dyn, nil))
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	batches := batchesOf(0, 2500, 1000)
	n, err := open().Deliver(s.ctx, batches)
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	rows, unique := s.counts(t, "t")
	assert.Equal(t, [2]uint64{2500, 2500}, [2]uint64{rows, unique})
	var parts uint64
	require.NoError(t, s.conn.QueryRow(s.ctx, "SELECT count() FROM system.parts WHERE table = 't' AND level = 0").Scan(&parts))
	assert.Equal(t, uint64(4+4+2), parts, "blocks of at most 300 rows")

	n, err = open().Deliver(s.ctx, batches[1:])
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	rows, _ = s.counts(t, "t")
	assert.Equal(t, uint64(2500), rows, "a replay adds nothing")

	s.srv.Restart(t)
	p := s.params("t")
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{s.srv.TCPAddr}})
	require.NoError(t, err)
	defer conn.Close()
	s.conn = conn
	b := newBatching(newTarget(Class, "out", p, &dyn, nil))
	defer b.Close()
	n, err = b.Deliver(s.ctx, append(batches, batchesOf(2500, 3000, 1000)...))
	require.NoError(t, err)
	assert.Equal(t, 4, n)
	rows, unique = s.counts(t, "t")
	assert.Equal(t, [2]uint64{3000, 3000}, [2]uint64{rows, unique}, "after kill -9 the old blocks are still deduplicated, the new one inserted")
}

// TestBatchingTokenIsTheIdentity: two stored batches with equal rows but other message ids
// are both inserted (the token, not the content, identifies a block), and a repeat of either
// is dropped.
func TestBatchingTokenIsTheIdentity(t *testing.T) {
	s := startServer(t)
	s.exec(t, `CREATE TABLE t (id UInt64, s String) ENGINE = MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 1000`)
	b := newBatching(newTarget(Class, "out", s.params("t"), nil, nil))
	defer b.Close()
	first := batchesOf(0, 10, 10)
	second := batchesOf(0, 10, 10)
	for i := range second[0].Rows {
		second[0].Rows[i].MessageID = fmt.Sprintf("0000000000000002-%08d", i)
	}
	second[0].FirstID, second[0].LastID = second[0].Rows[0].MessageID, second[0].Rows[9].MessageID
	for range 2 {
		for _, batch := range [][]connector.Batch{first, second} {
			n, err := b.Deliver(s.ctx, batch)
			require.NoError(t, err)
			require.Equal(t, 1, n)
		}
	}
	rows, unique := s.counts(t, "t")
	assert.Equal(t, [2]uint64{20, 10}, [2]uint64{rows, unique})
}

// TestBatchingTableChecks: a missing table, a non-MergeTree table and a mistyped column each
// break the sink with one error naming the sink and the table; a MergeTree table without
// deduplication is written with a warning.
func TestBatchingTableChecks(t *testing.T) {
	s := startServer(t)
	s.exec(t, `CREATE TABLE log (id UInt64, s String) ENGINE = Log`)
	s.exec(t, `CREATE TABLE typed (id String, s String) ENGINE = MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 10`)
	s.exec(t, `CREATE TABLE plain (id UInt64, s String) ENGINE = MergeTree ORDER BY id`)
	for _, tc := range []struct{ table, want string }{
		{"missing", "it does not exist"},
		{"log", "engine Log is not of the MergeTree family"},
		{"typed", `stream "rows" column "id" of type uint64 does not convert to table type String`},
	} {
		b := newBatching(newTarget(Class, "out", s.params(tc.table), nil, nil))
		_, err := b.Deliver(s.ctx, batchesOf(0, 10, 10))
		require.Error(t, err, tc.table)
		assert.True(t, errors.Is(err, ErrBroken), "%s: %v", tc.table, err)
		assert.Contains(t, err.Error(), "clickhouse_batching sink out")
		assert.Contains(t, err.Error(), "default."+tc.table)
		assert.Contains(t, err.Error(), tc.want)
		_, again := b.Deliver(s.ctx, batchesOf(0, 10, 10))
		assert.Equal(t, err, again, "the sink stays broken")
		_ = b.Close()
	}

	logger, logs := observed()
	tg := newTarget(Class, "out", s.params("plain"), nil, nil)
	tg.log = logger
	b := newBatching(tg)
	defer b.Close()
	n, err := b.Deliver(s.ctx, batchesOf(0, 10, 10))
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	require.Equal(t, 1, logs.Len())
	assert.Contains(t, logs.All()[0].ContextMap()["reason"], "exactly-once degrades to at-least-once")
}

// TestUnreachableAndBadPassword: an unreachable server is a transient error naming the sink
// (the sink does not break); a wrong password fails without the password in the error. The
// bad login runs on a server of its own: chDB's server aborts after failed native logins.
func TestUnreachableAndBadPassword(t *testing.T) {
	p := (&server{srv: &chserver.Server{TCPAddr: "127.0.0.1:1"}}).params("t")
	b := newBatching(newTarget(Class, "out", p, nil, nil))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := b.Deliver(ctx, batchesOf(0, 10, 10))
	require.Error(t, err)
	assert.False(t, errors.Is(err, ErrBroken), "%v", err)
	assert.Contains(t, err.Error(), "clickhouse_batching sink out: connect table default.t on 127.0.0.1")

	s := startServer(t)
	s.exec(t, `CREATE TABLE t (id UInt64, s String) ENGINE = MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 10`)
	const secret = "s3cret-Pa55word"
	t.Setenv("CH_TEST_PASSWORD", secret)
	p = s.params("t")
	p.User, p.PasswordEnvVar = "nobody", "CH_TEST_PASSWORD"
	b = newBatching(newTarget(Class, "out", p, nil, nil))
	_, err = b.Deliver(s.ctx, batchesOf(0, 10, 10))
	require.Error(t, err)
	assert.NotContains(t, err.Error(), secret)
	assert.Contains(t, err.Error(), "clickhouse_batching sink out")
	t.Log(err)

	p.PasswordEnvVar = "CH_TEST_PASSWORD_UNSET"
	b = newBatching(newTarget(Class, "out", p, nil, nil))
	_, err = b.Deliver(s.ctx, batchesOf(0, 10, 10))
	assert.ErrorContains(t, err, "password_env_var: environment variable CH_TEST_PASSWORD_UNSET is not set")
}

// TestAtMostOnceDropsFailedInsert: the at-most-once sink acknowledges a message whose
// INSERT failed (a value the column cannot hold) and goes on with the next; its best-effort
// writer inserts rows without a token and reports the failed one.
func TestAtMostOnceDropsFailedInsert(t *testing.T) {
	s := startServer(t)
	s.exec(t, `CREATE TABLE t (id UInt64, s String, CONSTRAINT not_bad CHECK s != 'bad') ENGINE = MergeTree ORDER BY id`)
	logger, logs := observed()
	tg := newTarget(AtMostOnceClass, "out", s.params("t"), nil, nil)
	tg.log = logger
	a := newAtMostOnce(tg)
	defer a.Close()
	batches := batchesOf(0, 6, 3)
	batches[0].Rows[1].Row["s"] = "bad"
	n, err := a.Deliver(s.ctx, batches)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "both batches are held")
	assert.Equal(t, int64(1), a.Dropped())
	assert.Equal(t, 1, logs.Len())
	rows, unique := s.counts(t, "t")
	assert.Equal(t, [2]uint64{5, 5}, [2]uint64{rows, unique})

	err = a.WriteBestEffort(s.ctx, []map[string]any{{"id": uint64(10), "s": "x"}, {"id": uint64(11), "s": "bad"}, {"id": uint64(12), "s": "y"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "1 of 3 rows not inserted")
	assert.Equal(t, int64(2), a.Dropped())
	rows, _ = s.counts(t, "t")
	assert.Equal(t, uint64(7), rows)
}

// TestSessionClosedWhenGarbage: the runtime drops sink instances without closing them; the
// session's native connection closes once the instance is garbage.
func TestSessionClosedWhenGarbage(t *testing.T) {
	s := startServer(t)
	s.exec(t, `CREATE TABLE t (id UInt64, s String) ENGINE = MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 10`)
	conns := func() (n int64) {
		require.NoError(t, s.conn.QueryRow(s.ctx, "SELECT value FROM system.metrics WHERE metric = 'TCPConnection'").Scan(&n))
		return n
	}
	before := conns()
	func() {
		b := newBatching(newTarget(Class, "out", s.params("t"), nil, nil))
		_, err := b.Deliver(s.ctx, batchesOf(0, 10, 10))
		require.NoError(t, err)
	}()
	require.Greater(t, conns(), before)
	deadline := time.Now().Add(30 * time.Second)
	for conns() > before {
		require.True(t, time.Now().Before(deadline), "the dropped sink's connection is still open")
		runtime.GC()
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBatchingRefusesDistributed: a Distributed table is rejected at session start with one
// error naming the sink and the table.
func TestBatchingRefusesDistributed(t *testing.T) {
	srv := chserver.StartCluster(t, "local")
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{srv.TCPAddr}})
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := &server{srv: srv, conn: conn, ctx: ctx}
	s.exec(t, `CREATE TABLE local (id UInt64, s String) ENGINE = MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 10`)
	s.exec(t, `CREATE TABLE dist AS local ENGINE = Distributed('local', 'default', 'local')`)
	b := newBatching(newTarget(Class, "out", s.params("dist"), nil, nil))
	defer b.Close()
	_, err = b.Deliver(ctx, batchesOf(0, 10, 10))
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrBroken))
	assert.ErrorContains(t, err, "clickhouse_batching sink out: table default.dist: unsuitable ClickHouse table: engine Distributed is not accepted")
}

// TestBatchingRefusesIndependentHosts: hosts listing two independent servers, each with a
// non-replicated table, is rejected at session start, naming both.
func TestBatchingRefusesIndependentHosts(t *testing.T) {
	a, b := startServer(t), startServer(t)
	for _, s := range []*server{a, b} {
		s.exec(t, `CREATE TABLE t (id UInt64, s String) ENGINE = MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 10`)
	}
	p := a.params("t")
	p.Hosts = []string{a.srv.TCPAddr, b.srv.TCPAddr}
	sink := newBatching(newTarget(Class, "out", p, nil, nil))
	defer sink.Close()
	_, err := sink.Deliver(a.ctx, batchesOf(0, 10, 10))
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrBroken))
	assert.ErrorContains(t, err, "clickhouse_batching sink out: table default.t: unsuitable ClickHouse table: hosts lists 2 servers ("+a.srv.TCPAddr+", "+b.srv.TCPAddr+")")
	rows, _ := a.counts(t, "t")
	assert.Zero(t, rows)
}

// TestReconfigureWriteTimeout: a live write_timeout change (the runtime's Reconfigure between
// two epochs) recreates the sink's client with the new timeouts at its next insert without
// validating the table again; the other dynamic parameters apply at once; an unchanged
// write_timeout keeps the client.
func TestReconfigureWriteTimeout(t *testing.T) {
	s := startServer(t)
	s.exec(t, `CREATE TABLE t (id UInt64, s String) ENGINE = MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 1000`)
	b := newBatching(newTarget(Class, "out", s.params("t"), nil, nil))
	defer b.Close()
	deliver := func(from, to int) {
		t.Helper()
		n, err := b.Deliver(s.ctx, batchesOf(from, to, 100))
		require.NoError(t, err)
		require.Equal(t, (to-from+99)/100, n)
	}
	deliver(0, 100)
	require.Equal(t, 1, b.t.checks)
	first := b.t.conn.c

	dyn := DefaultDynamic()
	dyn.WriteTimeout = 5 * time.Second
	dyn.MaxRowsPerBatch = 50
	var rc connector.Reconfigurer = b
	require.NoError(t, rc.Reconfigure(s.ctx, &dyn))
	deliver(100, 300)
	assert.Equal(t, 1, b.t.checks, "the table is not validated again")
	assert.Equal(t, 1, b.t.reconnects)
	assert.NotSame(t, first, b.t.conn.c, "a new client")
	assert.Equal(t, 5*time.Second, b.t.dyn.WriteTimeout)
	assert.Equal(t, int64(50), b.t.dyn.MaxRowsPerBatch)

	dyn.MaxRowsPerBatch = 200
	require.NoError(t, rc.Reconfigure(s.ctx, &dyn))
	deliver(300, 400)
	assert.Equal(t, 1, b.t.reconnects, "same write_timeout: same client")
	assert.Equal(t, int64(200), b.t.dyn.MaxRowsPerBatch)
	rows, unique := s.counts(t, "t")
	assert.Equal(t, [2]uint64{400, 400}, [2]uint64{rows, unique})
	require.Error(t, rc.Reconfigure(s.ctx, "not dynamic parameters"))
}

// TestShardedRefusesIndependentHosts: a shard of the sharded sink whose hosts are two
// independent (non-replicated) servers is refused at session start, naming the shard, and
// nothing is written to either.
func TestShardedRefusesIndependentHosts(t *testing.T) {
	a, b := startServer(t), startServer(t)
	for _, s := range []*server{a, b} {
		s.exec(t, `CREATE TABLE t (id UInt64, s String) ENGINE = MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 10`)
	}
	p := &ShardedParams{Params: *a.params("t"), Shards: []string{"east"}, ShardHosts: map[string][]string{"east": {a.srv.TCPAddr, b.srv.TCPAddr}}}
	p.Hosts = nil
	sink := newSharded("out", p, nil)
	_, err := sink.Deliver(a.ctx, batchesOf(0, 10, 10))
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrBroken))
	assert.ErrorContains(t, err, "sink out shard east: table default.t: unsuitable ClickHouse table: hosts lists 2 servers")
	for _, s := range []*server{a, b} {
		rows, _ := s.counts(t, "t")
		assert.Zero(t, rows)
	}
}
