package clickhouse

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"go.ytsaurus.tech/library/go/core/log"

	"github.com/ytflow/yt-flow/yson"
)

// Dynamic are the dynamic parameters of the ClickHouse sinks (flow-docs §4.7). The zero value
// is not usable: take DefaultDynamic or what parseDynamic returns.
type Dynamic struct {
	// WriteTimeout bounds one insert attempt: sending the block and the server's answer
	// (write_timeout, default 1m, > 0).
	WriteTimeout time.Duration
	// RetryBackoff is the wait between insert attempts (retry_backoff, default 1s, ≥ 0).
	RetryBackoff time.Duration
	// MaxInsertAttempts is how many attempts an insert gets when its errors are not known
	// to be transient (max_insert_attempts, default 10, 1–1000).
	MaxInsertAttempts int64
	// AsyncInsert inserts with async_insert = 1 and wait_for_async_insert = 1 (async_insert,
	// default false).
	AsyncInsert bool
	// ReplayHorizon is how long after its first send a batch may be sent again; a known
	// deduplication window shorter than it draws a warning (replay_horizon, default 1d).
	ReplayHorizon time.Duration
	// MaxRowsPerBatch and MaxBytesPerBatch bound one insert of the batching sink: a stored
	// batch over them is cut at message-id boundaries (max_rows_per_batch, default 1000,
	// 1–2000; max_bytes_per_batch, default 5 MiB, 1 B – 10 MiB).
	MaxRowsPerBatch, MaxBytesPerBatch int64
}

// DefaultDynamic returns the dynamic parameters of a sink without a dynamic spec.
func DefaultDynamic() Dynamic {
	return Dynamic{
		WriteTimeout:      time.Minute,
		RetryBackoff:      time.Second,
		MaxInsertAttempts: 10,
		ReplayHorizon:     24 * time.Hour,
		MaxRowsPerBatch:   1000,
		MaxBytesPerBatch:  5 << 20,
	}
}

// parseDynamic reads the dynamic parameters map: every key Flow defines, with its default.
func parseDynamic(f *yson.Fields, _ any) any {
	def := DefaultDynamic()
	d := &Dynamic{
		WriteTimeout:      f.Duration("write_timeout", def.WriteTimeout),
		RetryBackoff:      f.Duration("retry_backoff", def.RetryBackoff),
		MaxInsertAttempts: f.Int("max_insert_attempts", def.MaxInsertAttempts, 1, 1000),
		AsyncInsert:       f.Bool("async_insert", def.AsyncInsert),
		ReplayHorizon:     f.Duration("replay_horizon", def.ReplayHorizon),
		MaxRowsPerBatch:   f.Int("max_rows_per_batch", def.MaxRowsPerBatch, 1, 2000),
		MaxBytesPerBatch:  def.MaxBytesPerBatch,
	}
	if f.Has("max_bytes_per_batch") {
		d.MaxBytesPerBatch = f.Size("max_bytes_per_batch", def.MaxBytesPerBatch)
		if d.MaxBytesPerBatch < 1 || d.MaxBytesPerBatch > 10<<20 {
			f.Errorf("max_bytes_per_batch", "%d is out of range [1, 10 MiB]", d.MaxBytesPerBatch)
			d.MaxBytesPerBatch = def.MaxBytesPerBatch
		}
	}
	if d.WriteTimeout <= 0 {
		f.Errorf("write_timeout", "must be positive, got %v", d.WriteTimeout)
		d.WriteTimeout = def.WriteTimeout
	}
	if d.ReplayHorizon <= 0 {
		f.Errorf("replay_horizon", "must be positive, got %v", d.ReplayHorizon)
		d.ReplayHorizon = def.ReplayHorizon
	}
	return d
}

// Reconfigure applies new dynamic parameters with the next insert (connector.Reconfigurer).
func (s *batching) Reconfigure(_ context.Context, dynamic any) error {
	return s.t.reconfigure(dynamic)
}

// Reconfigure applies new dynamic parameters with the next insert (connector.Reconfigurer).
func (s *atLeastOnce) Reconfigure(_ context.Context, dynamic any) error {
	return s.t.reconfigure(dynamic)
}

// Reconfigure applies new dynamic parameters with the next insert (connector.Reconfigurer).
func (s *atMostOnce) Reconfigure(_ context.Context, dynamic any) error {
	return s.t.reconfigure(dynamic)
}

// Reconfigure applies new dynamic parameters to every shard with its next insert
// (connector.Reconfigurer).
func (s *sharded) Reconfigure(_ context.Context, dynamic any) error {
	for _, t := range s.targets {
		if err := t.reconfigure(dynamic); err != nil {
			return err
		}
	}
	return nil
}

// Topology is the sharded sink's routing (connector.Topology): its shard names and sharding
// key columns, which decide each batch's shard and token. Hosts within a shard do not count.
// The runtime refuses a change of either while outputs committed under the old routing wait
// for delivery (flow-docs' topology fingerprint guard).
func (s *sharded) Topology() string {
	keys := "message id"
	if len(s.params.ShardingKeyColumns) > 0 {
		keys = strings.Join(s.params.ShardingKeyColumns, ",")
	}
	return fmt.Sprintf("shards %s by %s", strings.Join(s.params.Shards, ","), keys)
}

// reconfigure takes new dynamic parameters (connector.Reconfigurer); the next write applies
// them. It may run while a write is in progress.
func (t *target) reconfigure(dynamic any) error {
	d, ok := dynamic.(*Dynamic)
	if !ok || d == nil {
		return fmt.Errorf("%s: reconfigure: dynamic parameters of type %T", t.name, dynamic)
	}
	c := *d
	t.pending.Store(&c)
	return nil
}

// applyPending applies the dynamic parameters reconfigure took. A write_timeout change
// recreates the open session's client with the new timeouts; the table, validated when the
// session opened, is not checked again.
//
// Invariant: a live write_timeout change recreates the client without validating the table
// again (TestReconfigureWriteTimeout).
func (t *target) applyPending(ctx context.Context) error {
	d := t.pending.Swap(nil)
	if d == nil {
		return nil
	}
	old := t.dyn
	t.dyn = *d
	if t.conn.c == nil || old.WriteTimeout == d.WriteTimeout {
		return nil
	}
	t.log.Info("write_timeout changed: recreating the client", log.String("sink", t.name), log.Duration("write_timeout", d.WriteTimeout))
	t.conn.close()
	conn, err := t.connect(ctx)
	if err != nil {
		return err
	}
	t.conn.c = conn
	t.reconnects++
	return nil
}

// connect opens a client of the hosts with the current parameters and pings it within
// write_timeout.
func (t *target) connect(ctx context.Context) (driver.Conn, error) {
	opts, err := t.options()
	if err != nil {
		return nil, t.breakWith(err)
	}
	conn, err := clickhouse.Open(opts)
	if err != nil {
		return nil, t.fail("open a client", err)
	}
	cctx, cancel := context.WithTimeout(ctx, t.dyn.WriteTimeout)
	defer cancel()
	if err := conn.Ping(cctx); err != nil {
		_ = conn.Close()
		return nil, t.fail("connect", err)
	}
	return conn, nil
}
