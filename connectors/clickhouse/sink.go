package clickhouse

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	sdkyson "go.ytsaurus.tech/yt/go/yson"

	"go.ytsaurus.tech/library/go/core/log"
	xzap "go.ytsaurus.tech/library/go/core/log/zap"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/internal/ybin"
)

// ErrBroken is wrapped by the errors of a sink instance that gave up: an insert failed with
// a permanent error or ran out of max_insert_attempts, or the table failed the session's
// checks. The instance refuses every further write until the pipeline is paused and started
// (a new instance validates again).
var ErrBroken = fmt.Errorf("ClickHouse sink is %w", connector.ErrSinkBroken)

// Log receives the sinks' warnings (a table that does not deduplicate, a deduplication window
// shorter than replay_horizon). A binary may replace it before it opens pipelines.
var Log log.Logger = xzap.Must(xzap.JSONConfig(log.InfoLevel))

// target is one sink instance's connection to its table: the session opens lazily on the
// first write, validates the table (engine, columns) once, and then inserts blocks. Its
// methods are called by one goroutine at a time (the runtime's contract for a sink).
type target struct {
	class, name string // "clickhouse_batching sink out", for errors and logs
	params      *Params
	dyn         Dynamic
	tlsConfig   *tls.Config // set by tests; nil: built from the parameters
	log         log.Logger
	// sticky: giving up breaks the instance (the batching sink); else each error is the
	// call's own (the at-least-once sink fails the epoch, which is retried).
	sticky bool

	conn     *connBox
	plan     *plan
	dedup    Dedup
	password string // read when the session opens; never logged
	broken   error
	dec      ybin.Decoder
	// pending holds dynamic parameters Reconfigure took, applied by the next write
	// (applyPending); reconnects counts the clients it recreated and checks the table
	// validations (for tests).
	pending            atomic.Pointer[Dynamic]
	reconnects, checks int
}

func newTarget(class, sinkID string, p *Params, dyn *Dynamic, tlsConfig *tls.Config) *target {
	d := DefaultDynamic()
	if dyn != nil {
		d = *dyn
	}
	t := &target{class: class, name: fmt.Sprintf("%s sink %s", class, sinkID), params: p, dyn: d, tlsConfig: tlsConfig, log: Log, conn: &connBox{}}
	// The runtime does not close sinks when their job ends: the session's client (its
	// connections and its goroutine) is closed once the instance is garbage.
	runtime.AddCleanup(t, (*connBox).close, t.conn)
	return t
}

// connBox holds a target's client apart from the target, for the cleanup that closes it.
type connBox struct{ c driver.Conn }

func (b *connBox) close() {
	if b.c != nil {
		_ = b.c.Close()
		b.c = nil
	}
}

// tableName is the table's quoted name.
func (t *target) tableName() string { return quote(t.params.Database) + "." + quote(t.params.Table) }

func quote(id string) string {
	return "`" + strings.NewReplacer("\\", "\\\\", "`", "\\`").Replace(id) + "`"
}

// Close closes the session.
func (t *target) Close() error {
	if t.conn.c == nil {
		return nil
	}
	err := t.conn.c.Close()
	t.conn.c = nil
	return err
}

// session opens the session when it is not open: a client of the hosts, then the checks of
// the table (checkEngine with dedup, planColumns). A failed check breaks the sink.
func (t *target) session(ctx context.Context, dedup bool) error {
	if t.broken != nil {
		return t.broken
	}
	if err := t.applyPending(ctx); err != nil {
		return err
	}
	if t.conn.c != nil {
		return nil
	}
	if env := t.params.PasswordEnvVar; env != "" {
		pw, ok := os.LookupEnv(env)
		if !ok {
			return t.breakWith(fmt.Errorf("password_env_var: environment variable %s is not set", env))
		}
		t.password = pw
	}
	conn, err := t.connect(ctx)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, t.dyn.WriteTimeout)
	defer cancel()
	if err := t.check(cctx, conn, dedup); err != nil {
		_ = conn.Close()
		if errors.Is(err, ErrTarget) {
			return t.breakWith(err)
		}
		return err
	}
	t.conn.c = conn
	return nil
}

// options are the client options of the parameters.
func (t *target) options() (*clickhouse.Options, error) {
	p := t.params
	addrs := make([]string, len(p.Hosts))
	for i, h := range p.Hosts {
		if _, _, err := net.SplitHostPort(h); err == nil {
			addrs[i] = h
		} else {
			addrs[i] = net.JoinHostPort(strings.Trim(h, "[]"), fmt.Sprint(p.Port))
		}
	}
	opts := &clickhouse.Options{
		Addr:             addrs,
		Auth:             clickhouse.Auth{Database: p.Database, Username: p.User, Password: t.password},
		DialTimeout:      t.dyn.WriteTimeout,
		ReadTimeout:      t.dyn.WriteTimeout,
		MaxOpenConns:     2,
		MaxIdleConns:     1,
		ConnOpenStrategy: clickhouse.ConnOpenInOrder,
	}
	if p.HostSelectionPolicy == RandomStart {
		opts.ConnOpenStrategy = clickhouse.ConnOpenRandom
	}
	switch p.Codec {
	case "lz4":
		opts.Compression = &clickhouse.Compression{Method: clickhouse.CompressionLZ4}
	case "lz4hc":
		opts.Compression = &clickhouse.Compression{Method: clickhouse.CompressionLZ4HC}
	case "zstd":
		opts.Compression = &clickhouse.Compression{Method: clickhouse.CompressionZSTD}
	}
	if p.EnableTLS || t.tlsConfig != nil {
		cfg, err := t.tls()
		if err != nil {
			return nil, err
		}
		opts.TLS = cfg
	}
	return opts, nil
}

// tls builds the TLS configuration of the parameters.
func (t *target) tls() (*tls.Config, error) {
	if t.tlsConfig != nil {
		return t.tlsConfig, nil
	}
	p := t.params
	cfg := &tls.Config{InsecureSkipVerify: p.TLSSkipVerification} //nolint:gosec // tls_skip_verification asks for it
	files := append([]string(nil), p.TLSCAFiles...)
	if p.TLSCADirectory != "" {
		entries, err := os.ReadDir(p.TLSCADirectory)
		if err != nil {
			return nil, fmt.Errorf("tls_ca_directory: %w", err)
		}
		for _, e := range entries {
			if !e.IsDir() {
				files = append(files, filepath.Join(p.TLSCADirectory, e.Name()))
			}
		}
	}
	if len(files) > 0 {
		pool := x509.NewCertPool()
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("tls_ca_files: %w", err)
			}
			if !pool.AppendCertsFromPEM(b) {
				return nil, fmt.Errorf("tls_ca_files: %s holds no PEM certificate", f)
			}
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// check validates the table: its engine (system.tables) and its columns (system.columns).
func (t *target) check(ctx context.Context, conn driver.Conn, dedup bool) error {
	t.checks++
	p := t.params
	var e Engine
	err := conn.QueryRow(ctx, "SELECT engine, engine_full FROM system.tables WHERE database = ? AND name = ?", p.Database, p.Table).Scan(&e.Name, &e.Full)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: table %s.%s: %w: it does not exist", t.name, p.Database, p.Table, ErrTarget)
	}
	if err != nil {
		return t.fail("read system.tables", err)
	}
	var window string
	if err := conn.QueryRow(ctx, "SELECT value FROM system.merge_tree_settings WHERE name = 'non_replicated_deduplication_window'").Scan(&window); err == nil {
		fmt.Sscan(window, &e.DefaultWindow)
	}
	d, warn, err := CheckEngine(e)
	if err != nil {
		return fmt.Errorf("%s: table %s.%s: %w", t.name, p.Database, p.Table, err)
	}
	if dedup {
		if err := CheckHosts(e, p.Hosts); err != nil {
			return fmt.Errorf("%s: table %s.%s: %w", t.name, p.Database, p.Table, err)
		}
		t.dedup = d
		if warn != "" {
			t.log.Warn("ClickHouse table does not deduplicate: exactly-once degrades to at-least-once",
				log.String("sink", t.name), log.String("Database", p.Database), log.String("Table", p.Table), log.String("engine", e.Name), log.String("reason", warn))
		}
		t.warnWindow()
	}
	rows, err := conn.Query(ctx, "SELECT name, type, default_kind FROM system.columns WHERE database = ? AND table = ? ORDER BY position", p.Database, p.Table)
	if err != nil {
		return t.fail("read system.columns", err)
	}
	defer rows.Close()
	var cols []Column
	for rows.Next() {
		var c Column
		if err := rows.Scan(&c.Name, &c.Type, &c.DefaultKind); err != nil {
			return t.fail("read system.columns", err)
		}
		cols = append(cols, c)
	}
	if err := rows.Err(); err != nil {
		return t.fail("read system.columns", err)
	}
	pl, err := planColumns(p.Inputs, cols)
	if err != nil {
		return fmt.Errorf("%s: table %s.%s: %w", t.name, p.Database, p.Table, err)
	}
	t.plan = pl
	return nil
}

// warnWindow warns when the table's deduplication window is known to be shorter than
// replay_horizon.
func (t *target) warnWindow() {
	if t.dedup.Window > 0 && t.dedup.Window < t.dyn.ReplayHorizon {
		t.log.Warn("ClickHouse deduplication window is shorter than replay_horizon: a late replay may duplicate",
			log.String("sink", t.name), log.String("Database", t.params.Database), log.String("Table", t.params.Table),
			log.String("DedupWindowSetting", t.dedup.Setting), log.Duration("ReplayHorizon", t.dyn.ReplayHorizon), log.Duration("DedupWindow", t.dedup.Window))
	}
}

// breakWith marks a sticky sink broken with err; a sink that is not sticky returns err.
func (t *target) breakWith(err error) error {
	if !strings.HasPrefix(err.Error(), t.name) {
		err = fmt.Errorf("%s: %w", t.name, err)
	}
	if !t.sticky {
		return err
	}
	t.broken = fmt.Errorf("%w: %w", ErrBroken, err)
	return t.broken
}

// fail describes the failure of op with err, without the password.
func (t *target) fail(op string, err error) error {
	var dial *net.OpError
	notStarted := errors.Is(err, clickhouse.ErrAcquireConnTimeout) || (errors.As(err, &dial) && dial.Op == "dial")
	return &opError{msg: t.redact(fmt.Sprintf("%s: %s %s: %v", t.name, op, t.where(), err)), class: classify(err), notStarted: notStarted}
}

func (t *target) where() string {
	return fmt.Sprintf("table %s.%s on %s", t.params.Database, t.params.Table, strings.Join(t.params.Hosts, ","))
}

func (t *target) redact(s string) string {
	if t.password == "" {
		return s
	}
	return strings.ReplaceAll(s, t.password, "***")
}

// errClass says how an insert error is retried.
type errClass uint8

const (
	unclassified errClass = iota // retried up to max_insert_attempts
	transient                    // retried without a limit
	permanent                    // never retried
)

// opError is a driver error described without the password; it keeps only its class.
type opError struct {
	msg   string
	class errClass
	// notStarted: no connection could be made, so nothing reached the server.
	notStarted bool
}

// notStarted tells whether err is a failure to reach the server, before a query started.
func notStarted(err error) bool {
	var oe *opError
	return errors.As(err, &oe) && oe.notStarted
}

func (e *opError) Error() string { return e.msg }

// ClickHouse error codes by class.
var (
	transientCodes = map[int32]bool{
		159: true, 202: true, 203: true, 209: true, 210: true, 241: true, 242: true,
		252: true, 285: true, 319: true, 425: true, 999: true, 225: true, 236: true, 394: true,
	}
	permanentCodes = map[int32]bool{
		16: true, 44: true, 53: true, 60: true, 62: true, 70: true, 81: true, 115: true,
		164: true, 192: true, 193: true, 194: true, 497: true, 516: true,
	}
)

// classify sorts an error of the driver.
func classify(err error) errClass {
	var ex *clickhouse.Exception
	if errors.As(err, &ex) {
		switch {
		case transientCodes[ex.Code]:
			return transient
		case permanentCodes[ex.Code]:
			return permanent
		}
		return unclassified
	}
	var ne net.Error
	var op *net.OpError
	switch {
	case errors.As(err, &ne), errors.As(err, &op), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, clickhouse.ErrAcquireConnTimeout), errors.Is(err, sqldriver.ErrBadConn):
		return transient
	}
	return unclassified
}

// insert sends rows as one block within write_timeout, with insert_deduplication_token =
// token when token is not "".
func (t *target) insert(ctx context.Context, rows [][]any, token string) error {
	settings := clickhouse.Settings{}
	if token != "" {
		settings["insert_deduplicate"] = 1
		settings["insert_deduplication_token"] = token
	}
	if t.dyn.AsyncInsert {
		settings["async_insert"], settings["wait_for_async_insert"] = 1, 1
		if token != "" {
			settings["async_insert_deduplicate"] = 1
		}
	}
	ictx, cancel := context.WithTimeout(ctx, t.dyn.WriteTimeout)
	defer cancel()
	ictx = clickhouse.Context(ictx, clickhouse.WithSettings(settings))
	cols := make([]string, len(t.plan.cols))
	for i, c := range t.plan.cols {
		cols[i] = quote(c)
	}
	b, err := t.conn.c.PrepareBatch(ictx, "INSERT INTO "+t.tableName()+" ("+strings.Join(cols, ", ")+")")
	if err != nil {
		return t.fail("insert into", err)
	}
	for _, r := range rows {
		if err := b.Append(r...); err != nil {
			_ = b.Abort()
			return t.fail("insert into", err)
		}
	}
	if err := b.Send(); err != nil {
		return t.fail("insert into", err)
	}
	return nil
}

// values converts the message rows into the plan's columns; an error names the column.
func (t *target) values(row map[string]any) ([]any, error) {
	out := make([]any, len(t.plan.cols))
	for i, c := range t.plan.cols {
		v, err := convert(row[c], t.plan.stream[i], t.plan.types[i])
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", c, err)
		}
		out[i] = v
	}
	return out, nil
}

// decode returns a delivery's row.
func (t *target) decode(d *connector.Delivery) (m map[string]any, err error) {
	if d.Encoded == nil {
		return d.Row, nil
	}
	if m, ok := t.dec.DecodeMap(d.Encoded); ok {
		return m, nil
	}
	defer func() {
		if p := recover(); p != nil {
			m, err = nil, fmt.Errorf("malformed YSON payload: %v", p)
		}
	}()
	if err := sdkyson.Unmarshal(d.Encoded, &m); err != nil {
		return nil, fmt.Errorf("malformed YSON payload: %w", err)
	}
	return m, nil
}

// insertRetrying inserts a block: a transient error is returned at once when giveUpOnTransient
// is set and retried without a limit otherwise; an unclassified one is retried up to
// max_insert_attempts in all; a permanent one, or running out of attempts ("giving up
// insert"), breaks the sink. ctx ends the retries.
func (t *target) insertRetrying(ctx context.Context, rows [][]any, token string, giveUpOnTransient bool) error {
	var attempts int64
	for {
		attempts++
		err := t.insert(ctx, rows, token)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", t.name, ctx.Err())
		}
		class := unclassified
		var oe *opError
		if errors.As(err, &oe) {
			class = oe.class
		}
		switch {
		case class == permanent:
			return t.breakWith(fmt.Errorf("giving up insert: %w", err))
		case class == transient && giveUpOnTransient:
			return err
		case class == unclassified && attempts >= t.dyn.MaxInsertAttempts:
			return t.breakWith(fmt.Errorf("giving up insert after %d attempts (max_insert_attempts): %w", attempts, err))
		}
		timer := time.NewTimer(t.dyn.RetryBackoff)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("%s: %w", t.name, ctx.Err())
		}
	}
}

// batching is TClickHouseBatchingSink's runtime for one job.
type batching struct {
	t  *target
	mu sync.Mutex // Deliver is called by one goroutine at a time; the mutex makes it safe anyway
}

func newBatching(t *target) *batching {
	t.sticky = true
	return &batching{t: t}
}

// span is a run of a stored batch's rows inserted as one block: rows [from, to).
type span struct{ from, to int }

// split cuts n rows of the sizes size(i) into spans of at most maxRows rows and maxBytes bytes
// (a row over maxBytes alone), in order. It depends only on the rows and the limits, so a
// replay cuts the same spans. Pure.
func split(n int, size func(i int) int64, maxRows, maxBytes int64) []span {
	var out []span
	from, bytes := 0, int64(0)
	for i := range n {
		s := size(i)
		if i > from && (int64(i-from) >= maxRows || bytes+s > maxBytes) {
			out = append(out, span{from, i})
			from, bytes = i, 0
		}
		bytes += s
	}
	if n > from {
		out = append(out, span{from, n})
	}
	return out
}

// rowSize is a delivery's size for max_bytes_per_batch: its stored YSON's length, or an
// estimate of its decoded row's.
func rowSize(d *connector.Delivery) int64 {
	if d.Encoded != nil {
		return int64(len(d.Encoded))
	}
	var n int64
	for k, v := range d.Row {
		n += int64(len(k)) + 2
		switch x := v.(type) {
		case string:
			n += int64(len(x))
		case []byte:
			n += int64(len(x))
		default:
			n += 9
		}
	}
	return n
}

// Deliver inserts the batches in order, each cut into blocks at message-id boundaries by
// max_rows_per_batch and max_bytes_per_batch, each block with insert_deduplication_token =
// its greatest message id, so a block sent again — after a failure, a restart or a
// repartitioning — is dropped by the table's deduplication. It returns how many leading
// batches the table holds: a batch counts once all its blocks were inserted. A transient
// error returns at once (the runtime offers the batches again); see insertRetrying.
//
// Invariant: a replay sends the same blocks with the same tokens, so the table holds each
// row once, and two batches with equal rows are two blocks (TestSplitDeterministic,
// TestBatchingDeliverDeduplicates, TestBatchingTokenIsTheIdentity, TestClickHouseBatchingConformance).
func (s *batching) Deliver(ctx context.Context, batches []connector.Batch) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.t
	if len(batches) == 0 {
		return 0, nil
	}
	if err := t.session(ctx, true); err != nil {
		return 0, err
	}
	for i := range batches {
		b := &batches[i]
		rows := make([][]any, len(b.Rows))
		for j := range b.Rows {
			d := &b.Rows[j]
			m, err := t.decode(d)
			if err == nil {
				rows[j], err = t.values(m)
			}
			if err != nil {
				return i, t.breakWith(fmt.Errorf("message (seq %d): %w", d.SequenceNumber, err))
			}
		}
		for _, sp := range split(len(b.Rows), func(j int) int64 { return rowSize(&b.Rows[j]) }, t.dyn.MaxRowsPerBatch, t.dyn.MaxBytesPerBatch) {
			token := b.Rows[sp.to-1].MessageID // rows are in message id order: the greatest
			if err := t.insertRetrying(ctx, rows[sp.from:sp.to], token, true); err != nil {
				return i, err
			}
		}
	}
	return len(batches), nil
}

// Close closes the session.
func (s *batching) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t.Close()
}
