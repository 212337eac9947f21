package clickhouse_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/connectors/connectortest"
	"github.com/ytflow/yt-flow/internal/chserver"
	"github.com/ytflow/yt-flow/ytstore"
)

// chTarget is one ClickHouse server shared by the runs of a conformance test, a table per
// run (named after the run's root).
type chTarget struct {
	addr string // native protocol, host:port
	conn clickhouse.Conn
	// engine, when set, replaces the engine the test asks for (CLICKHOUSE_ENGINE).
	engine string
	// params are extra sink parameters for an external server (its password variable).
	params string
}

// newCHTarget starts a ClickHouse server for t, or, with CLICKHOUSE_ADDR set (host:port of
// the native protocol), uses that server: the runs then drop and create their tables there,
// authenticate as CLICKHOUSE_USER with the password in CLICKHOUSE_PASSWORD, and create
// the exactly-once runs' tables with the engine CLICKHOUSE_ENGINE when it is set (e.g.
// "ReplicatedMergeTree('/clickhouse/tables/{database}/{table}', '{replica}') ORDER BY id"
// on a replicated cluster).
func newCHTarget(t *testing.T) *chTarget {
	c := &chTarget{}
	opts := &clickhouse.Options{}
	if addr := os.Getenv("CLICKHOUSE_ADDR"); addr != "" {
		c.addr, c.engine = addr, os.Getenv("CLICKHOUSE_ENGINE")
		opts.Auth = clickhouse.Auth{Username: os.Getenv("CLICKHOUSE_USER"), Password: os.Getenv("CLICKHOUSE_PASSWORD")}
		if u := os.Getenv("CLICKHOUSE_USER"); u != "" {
			c.params += fmt.Sprintf("user = %q; ", u)
		}
		if os.Getenv("CLICKHOUSE_PASSWORD") != "" {
			c.params += `password_env_var = "CLICKHOUSE_PASSWORD"; `
		}
		t.Logf("ClickHouse server %s (CLICKHOUSE_ADDR)", addr)
	} else {
		c.addr = chserver.Start(t).TCPAddr
	}
	opts.Addr = []string{c.addr}
	conn, err := clickhouse.Open(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	c.conn = conn
	return c
}

// table is the table of the run under root.
func table(root string) string {
	return "t_" + strings.NewReplacer("/", "_", "-", "_").Replace(strings.TrimLeft(root, "/"))
}

// setup creates the run's table with engine (or the target's engine, when it has one and
// dedup asks for a deduplicating table) and returns the sink's parameters.
func (c *chTarget) setup(ctx context.Context, root, engine string, dedup bool) (string, error) {
	if c.engine != "" && dedup {
		engine = c.engine
	}
	if err := c.conn.Exec(ctx, "DROP TABLE IF EXISTS "+table(root)+" SYNC"); err != nil {
		return "", err
	}
	if err := c.conn.Exec(ctx, fmt.Sprintf("CREATE TABLE %s (id UInt64, body String) ENGINE = %s", table(root), engine)); err != nil {
		return "", err
	}
	host, port, _ := strings.Cut(c.addr, ":")
	return fmt.Sprintf("{host = %q; port = %s; table = %q; %s}", host, port, table(root), c.params), nil
}

// ids reads back the ids the run's table holds.
func (c *chTarget) ids(ctx context.Context, root string) ([]uint64, error) {
	rows, err := c.conn.Query(ctx, "SELECT id FROM "+table(root))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []uint64
	for rows.Next() {
		var id uint64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// TestClickHouseBatchingConformance: TClickHouseBatchingSink into a MergeTree table with
// non_replicated_deduplication_window, while workers are killed between an insert and its
// acknowledgement and deliveries fail, partly succeed or are slow: the table holds every id
// exactly once (count() = uniqExact(id) = rows; a replayed block carries its first token).
func TestClickHouseBatchingConformance(t *testing.T) {
	const rows = 2000
	ch := newCHTarget(t)
	connectortest.RunSink(t, connectortest.Sink{
		Class:   "clickhouse_batching",
		Rows:    rows,
		Payload: "body",
		Setup: func(ctx context.Context, _ *ytstore.Store, root string) (string, error) {
			return ch.setup(ctx, root, "MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 100000", true)
		},
		ReadBack: func(ctx context.Context, _ *ytstore.Store, root string) ([]uint64, error) {
			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			var count, unique uint64
			if err := ch.conn.QueryRow(ctx, "SELECT count(), uniqExact(id) FROM "+table(root)).Scan(&count, &unique); err != nil {
				return nil, err
			}
			// A server-wide counter: the blocks dropped as repeats so far, this run's and the
			// runs' before it.
			var dropped uint64
			_ = ch.conn.QueryRow(ctx, "SELECT sum(value) FROM system.events WHERE event = 'DuplicatedInsertedBlocks'").Scan(&dropped)
			t.Logf("%s: count() = %d, uniqExact(id) = %d; repeated blocks dropped by the server so far: %d", table(root), count, unique, dropped)
			return ch.ids(ctx, root)
		},
	})
}

// TestClickHouseAtLeastOnceConformance: TAtLeastOnceClickHouseSink, with workers killed
// between its insert and the epoch's commit, loses no id (repeats are allowed, and counted in
// the log).
func TestClickHouseAtLeastOnceConformance(t *testing.T) {
	ch := newCHTarget(t)
	connectortest.RunSink(t, connectortest.Sink{
		Class:   "clickhouse_at_least_once",
		Payload: "body",
		Setup: func(ctx context.Context, _ *ytstore.Store, root string) (string, error) {
			return ch.setup(ctx, root, "MergeTree ORDER BY id", false)
		},
		ReadBack: func(ctx context.Context, _ *ytstore.Store, root string) ([]uint64, error) {
			ids, err := ch.ids(ctx, root)
			seen := map[uint64]bool{}
			for _, id := range ids {
				seen[id] = true
			}
			t.Logf("%s: %d rows, %d duplicates", table(root), len(ids), len(ids)-len(seen))
			return ids, err
		},
	})
}

// TestClickHouseAtMostOnceConformance: TAtMostOnceClickHouseSink (over the output store),
// with workers killed between an INSERT and its acknowledgement and deliveries failing,
// partly succeeding or slow: no id is held twice (losses are allowed). The table
// deduplicates: a message offered again carries its id as its token.
func TestClickHouseAtMostOnceConformance(t *testing.T) {
	ch := newCHTarget(t)
	connectortest.RunSink(t, connectortest.Sink{
		Class:   "clickhouse_at_most_once",
		Rows:    400,
		Payload: "body",
		Setup: func(ctx context.Context, _ *ytstore.Store, root string) (string, error) {
			return ch.setup(ctx, root, "MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 100000", true)
		},
		ReadBack: func(ctx context.Context, _ *ytstore.Store, root string) ([]uint64, error) {
			ids, err := ch.ids(ctx, root)
			t.Logf("%s: %d of 400 ids held", table(root), len(ids))
			return ids, err
		},
	})
}

// TestClickHouseShardedConformance: TShardedClickHouseBatchingSink over two servers (one
// shard each, rendezvous hashing over id), under every async fault: the two tables together
// hold every id exactly once, and each server holds some.
func TestClickHouseShardedConformance(t *testing.T) {
	const rows = 2000
	if os.Getenv("CLICKHOUSE_ADDR") != "" {
		t.Skip("the sharded run needs two independent servers; it runs on local ones only")
	}
	shards := []*chTarget{newCHTarget(t), newCHTarget(t)}
	connectortest.RunSink(t, connectortest.Sink{
		Class:   "clickhouse_sharded_batching",
		Rows:    rows,
		Payload: "body",
		Setup: func(ctx context.Context, _ *ytstore.Store, root string) (string, error) {
			var hosts []string
			for _, ch := range shards {
				if _, err := ch.setup(ctx, root, "MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 100000", false); err != nil {
					return "", err
				}
				hosts = append(hosts, ch.addr)
			}
			return fmt.Sprintf("{shard_hosts = {s1 = [%q]; s2 = [%q]}; sharding_key_columns = [id]; table = %q}", hosts[0], hosts[1], table(root)), nil
		},
		ReadBack: func(ctx context.Context, _ *ytstore.Store, root string) ([]uint64, error) {
			var all []uint64
			for i, ch := range shards {
				ids, err := ch.ids(ctx, root)
				if err != nil {
					return nil, err
				}
				if len(ids) == 0 {
					return nil, fmt.Errorf("shard s%d holds no row", i+1)
				}
				t.Logf("%s: shard s%d holds %d rows", table(root), i+1, len(ids))
				all = append(all, ids...)
			}
			return all, nil
		},
	})
}
