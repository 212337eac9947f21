package ytlocal

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"go.ytsaurus.tech/library/go/core/log"
	"go.ytsaurus.tech/library/go/core/log/nop"
	"go.ytsaurus.tech/yt/go/guid"

	"github.com/ytflow/yt-flow/ytlocal/ts"
)

// Config configures a Server. The zero value is a valid in-memory server on a random
// loopback port.
type Config struct {
	// Listen is the TCP address to listen on. Default "127.0.0.1:0" (random loopback port).
	Listen string
	// DataDir, when set, makes every committed mutation durable there (write-ahead log
	// fsynced before the response, plus snapshots). Empty: memory only.
	DataDir string
	// Logger receives structured logs. Default: discard.
	Logger log.Logger
	// MaxRequestBytes caps a decompressed request body. Default 512 MiB.
	MaxRequestBytes int64
	// SnapshotEvery is the number of log records after which a snapshot is taken and
	// the log truncated, once the log is also at least as large as the last snapshot.
	// Default 20000.
	SnapshotEvery int
	// Now is the clock; default time.Now. Used for transaction timeouts and timestamps.
	Now func() time.Time
	// VersionRetention is how long overwritten versions and deleted rows of dynamic tables
	// stay readable by timestamp; default tablet.DefaultVersionRetention (two seconds).
	// Everything is held in memory, so it bounds what frequently rewritten rows cost; open
	// tablet transactions keep what they can read however long they run.
	VersionRetention time.Duration
	// InProcess makes the server reachable without the network by clients in the same
	// process whose transport asks package internal/inproc first (ytstore's does): their
	// requests run the server's handler as calls. It serves on Listen as well. `yt-flow
	// run`, whose controller and workers share the process with the server, sets it.
	InProcess bool
	// Users, when not empty, turns authentication on (auth.go): it maps each accepted OAuth
	// token to its user, and Cypress ACLs bind every user but root. Empty (the default): no
	// authentication, every request acts as root.
	Users map[string]string
}

// EnvInProcess is the environment variable that, set to 1, makes every server of the
// process reachable in process as Config.InProcess does: it runs a test suite over the
// in-process path instead of loopback TCP.
const EnvInProcess = "YTLOCAL_INPROCESS"

// ErrClosed is returned by operations on a closed Server.
var ErrClosed = errors.New("ytlocal: server closed")

// Server is a running ytlocal instance. Create it with Start; stop it with Close.
type Server struct {
	cfg    Config
	log    log.Logger
	ln     net.Listener
	addr   string // ln's address (Addr), formatted once
	hs     *http.Server
	oracle *ts.Oracle

	wg        sync.WaitGroup
	kick      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
	serveErr  chan error
	// inproc admits in-process requests (Config.InProcess); unregister removes the
	// server from package inproc.
	inproc     inprocGate
	unregister func()

	// mu is the state lock: every field below is guarded by it, every handler,
	// hook and timer callback runs with it held.
	mu        sync.Mutex
	closed    bool
	exts      map[string]Extension
	extOrder  []string
	tree      *tree
	txs       map[guid.GUID]*masterTx
	mutations *mutationCache
	wal       *wal
	dirLock   *os.File // held while the server owns DataDir
	idCounter uint32
}

// Start creates a Server, restores DataDir if set, and starts serving in the background.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = 512 << 20
	}
	if cfg.SnapshotEvery <= 0 {
		cfg.SnapshotEvery = 20000
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = &nop.Logger{}
	}
	s := &Server{
		cfg:       cfg,
		log:       cfg.Logger,
		oracle:    &ts.Oracle{Now: cfg.Now},
		kick:      make(chan struct{}, 1),
		done:      make(chan struct{}),
		serveErr:  make(chan error, 1),
		exts:      map[string]Extension{},
		txs:       map[guid.GUID]*masterTx{},
		mutations: newMutationCache(),
	}
	s.tree = newTree(s)
	for _, f := range extensionFactories {
		e, err := f.new(s)
		if err != nil {
			_ = s.release()
			return nil, fmt.Errorf("ytlocal: start extension %q: %w", f.name, err)
		}
		s.exts[f.name] = e
		s.extOrder = append(s.extOrder, f.name)
	}
	if cfg.DataDir != "" {
		if err := s.openDurable(); err != nil {
			_ = s.release()
			return nil, err
		}
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.Listen)
	if err != nil {
		_ = s.release()
		return nil, fmt.Errorf("ytlocal: listen on %s: %w", cfg.Listen, err)
	}
	s.ln, s.addr = ln, ln.Addr().String()
	s.hs = &http.Server{Handler: s, ReadHeaderTimeout: time.Minute}
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		err := s.hs.Serve(ln)
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.serveErr <- err
		}
	}()
	go func() {
		defer s.wg.Done()
		s.timerLoop()
	}()
	if cfg.InProcess || os.Getenv(EnvInProcess) == "1" {
		s.registerInProcess()
	}
	s.log.Info("ytlocal started", log.String("addr", s.Addr()), log.String("data_dir", cfg.DataDir))
	return s, nil
}

// Addr returns the proxy address host:port (use it as YT_PROXY).
func (s *Server) Addr() string {
	return s.addr
}

// Run blocks until ctx is done or the HTTP server fails, then closes the server.
// It returns nil after a cancellation and the serving error otherwise.
func (s *Server) Run(ctx context.Context) error {
	var err error
	select {
	case <-ctx.Done():
	case err = <-s.serveErr:
	case <-s.done:
	}
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return err
}

// Close stops serving, waits for every goroutine and in-flight request, and closes the
// log. It is idempotent; later calls return the first call's result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.closeInProcess(ctx)
		err := s.hs.Shutdown(ctx)
		if err != nil {
			err = s.hs.Close()
		}
		close(s.done)
		s.wg.Wait()
		s.mu.Lock()
		s.closed = true // no snapshot starts from now on
		s.mu.Unlock()
		if s.wal != nil {
			s.wal.snapshots.Wait() // a snapshot being written finishes first
		}
		s.mu.Lock()
		if rerr := s.release(); err == nil {
			err = rerr
		}
		// Every command checks closed first: drop the state so that a closed server kept
		// referenced (by a test's cleanup, say) does not keep its tables in memory.
		s.exts, s.extOrder, s.tree, s.txs, s.mutations = nil, nil, nil, nil, nil
		s.mu.Unlock()
		s.closeErr = err
		s.log.Info("ytlocal stopped", log.String("addr", s.Addr()))
	})
	return s.closeErr
}

// release closes extensions, then the log (fsyncing it), then gives up DataDir.
func (s *Server) release() error {
	for _, name := range s.extOrder {
		_ = s.exts[name].Close()
	}
	var err error
	if s.wal != nil {
		err = s.wal.close()
	}
	if s.dirLock != nil {
		_ = s.dirLock.Close()
		s.dirLock = nil
	}
	return err
}

// now returns the server clock.
func (s *Server) now() time.Time { return s.cfg.Now() }

// Timestamps returns the timestamp oracle shared by master and tablet transactions.
func (s *Server) Timestamps() *ts.Oracle { return s.oracle }

// kickTimers wakes the timer goroutine to recompute the next deadline. Safe to call
// with or without the state lock.
func (s *Server) kickTimers() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// timerLoop is the single goroutine that enforces transaction timeouts and extension
// deadlines.
func (s *Server) timerLoop() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.mu.Lock()
		now := s.now()
		s.expireTxs(now)
		for _, name := range s.extOrder {
			if e, ok := s.exts[name].(Expirer); ok {
				if d, ok := e.NextDeadline(); ok && !d.After(now) {
					e.Expire(now)
				}
			}
		}
		s.maybeSnapshot()
		next := now.Add(time.Hour)
		if d, ok := s.nextTxDeadline(); ok && d.Before(next) {
			next = d
		}
		for _, name := range s.extOrder {
			if e, ok := s.exts[name].(Expirer); ok {
				if d, ok := e.NextDeadline(); ok && d.Before(next) {
					next = d
				}
			}
		}
		s.mu.Unlock()
		wait := next.Sub(now)
		if wait < time.Millisecond {
			wait = time.Millisecond
		}
		timer.Reset(wait)
		select {
		case <-s.done:
			return
		case <-s.kick:
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
		case <-timer.C:
		}
	}
}

// newID allocates a fresh object id of the given YTsaurus object type (see objectType*).
func (s *Server) newID(objectType uint32) guid.GUID {
	s.idCounter++
	a, _, _, d := guid.New().Parts()
	// Printed as d-c-b-a: "<random>-<counter>-<cell tag, type>-<random>", like YTsaurus ids.
	return guid.FromParts(a, objectType&0xffff, s.idCounter, d)
}

// newTabletTxID is the id of a tablet transaction started at start, laid out as YTsaurus
// lays out tablet transaction ids (MakeTabletTransactionId): the start timestamp in the two
// high words (read back by TimestampFromTransactionId, and by ytstore to take an epoch's
// token from its transaction), the object type, a random hash.
func (s *Server) newTabletTxID(objectType uint32, start uint64) guid.GUID {
	a, _, _, _ := guid.New().Parts()
	return guid.FromParts(a, objectType&0xffff, uint32(start), uint32(start>>32))
}

// YTsaurus object types used in ids (third word of the id, low 16 bits).
const (
	objectTypeTransaction       = 1
	objectTypeAtomicTabletTx    = 2
	objectTypeNonAtomicTabletTx = 3
	objectTypeNestedTransaction = 4
	objectTypeLock              = 200
	objectTypeStringNode        = 300
	objectTypeIntNode           = 301
	objectTypeMapNode           = 303
	objectTypeListNode          = 304
	objectTypeFile              = 400
	objectTypeTable             = 401
	objectTypeDocument          = 421
	objectTypeLink              = 417
	objectTypeAccount           = 500
	objectTypeUser              = 501
	objectTypeQueueConsumer     = 1500
	objectTypeQueueProducer     = 1501
)

// objectTypeOf returns the object type encoded in an id.
func objectTypeOf(id guid.GUID) uint32 {
	_, b, _, _ := id.Parts()
	return b & 0xffff
}

// IsTabletTxID reports whether id names a tablet (non-master) transaction.
func IsTabletTxID(id guid.GUID) bool {
	t := objectTypeOf(id)
	return t == objectTypeAtomicTabletTx || t == objectTypeNonAtomicTabletTx
}
