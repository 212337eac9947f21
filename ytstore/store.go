package ytstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.ytsaurus.tech/library/go/core/log"
	"go.ytsaurus.tech/library/go/core/log/nop"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yt"
	"go.ytsaurus.tech/yt/go/yt/ythttp"
)

// Config says which cluster and pipeline a Store works on.
type Config struct {
	// Proxy is the HTTP proxy address, "host:port" or a URL. Required.
	Proxy string
	// Token authenticates requests; empty means no authentication. It is never
	// logged or printed.
	Token string
	// Path is the pipeline node, e.g. "//home/me/pipe". Required.
	Path string
	// Logger receives the SDK's and the store's structured logs; nil discards them.
	Logger log.Structured
	// PingPeriod is how often the SDK pings sessions (StartSession). Default 1s;
	// it must be well below the shortest session timeout.
	PingPeriod time.Duration
}

// Store gives access to one pipeline on one cluster. It is safe for concurrent
// use. Close releases the client and aborts the sessions it started.
type Store struct {
	cfg    Config // as opened (Cluster opens others like it)
	proxy  string
	yc     yt.Client
	codec  yt.ClientCompressionCodec // the client's request compression (rowBatch)
	path   ypath.Path
	logger log.Structured

	// fingerprints records whether the dedup tables have the payload_fingerprint column
	// (pipelines created before it do not); checked once, on the first epoch commit.
	fingerprintsOnce sync.Once
	fingerprints     bool
	// writeGoroutines counts the goroutines epoch commits started for their writes
	// (writeEpoch), for the tests that keep it to one fewer than the tables written.
	writeGoroutines atomic.Int64
	// sdkPanics counts the batch inserts sent again after the SDK panicked (insertBatch).
	sdkPanics atomic.Int64
	// txTimestamps records whether the cluster's tablet transaction ids carry their start
	// timestamps (1 yes, -1 no, 0 not checked yet; CheckTxTimestamps), and whether a check
	// runs.
	txTimestamps   atomic.Int32
	txCheckRunning atomic.Bool
	// jobStatusCols records which optional columns job_status has (jobStatusColumns).
	remotes remotes // stores of other clusters (Cluster)

	eventWatermarksMu   sync.Mutex
	eventWatermarksRead bool
	jobStatusCols       jobStatusOptional

	// workerVersions records whether the workers table has the flow_core_version column
	// (pipelines created before it do not; workerVersionColumn).
	workerVersionsOnce sync.Once
	workerVersions     bool
}

// Open connects to the cluster. It does not check that the pipeline exists
// (see Exists and CreatePipeline).
func Open(ctx context.Context, cfg Config) (*Store, error) {
	_ = ctx // reserved: connecting is lazy in the SDK
	// No compression over loopback: see codecFor.
	return open(cfg, codecFor(cfg.Proxy))
}

// open is Open with the client's request and response compression.
func open(cfg Config, codec yt.ClientCompressionCodec) (*Store, error) {
	if cfg.Proxy == "" {
		return nil, errors.New("ytstore: open: proxy is empty")
	}
	if cfg.Path == "" {
		return nil, errors.New("ytstore: open: pipeline path is empty")
	}
	path := ypath.Path(cfg.Path)
	if _, err := ypath.Parse(cfg.Path); err != nil {
		return nil, fmt.Errorf("ytstore: open: pipeline path %q: %w", cfg.Path, err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = (&nop.Logger{}).Structured()
	}
	yconf := &yt.Config{
		Proxy:            cfg.Proxy,
		Token:            cfg.Token,
		Logger:           sdkLogger{logger.Logger()},
		TxPingPeriod:     cmp.Or(cfg.PingPeriod, time.Second),
		CompressionCodec: codec,
		// A deployed pipeline's controllers and workers are jobs of a vanilla operation
		// (yt-flow deploy) that talk to the cluster all their life, as Flow's do; the SDK
		// refuses clients inside jobs (YT_JOB_ID set) unless this is set.
		AllowRequestsFromJob: true,
	}
	hc, err := newHTTPClient(yconf)
	if err != nil {
		return nil, fmt.Errorf("ytstore: open client for %s: %w", cfg.Proxy, err)
	}
	yconf.HTTPClient = hc
	yc, err := ythttp.NewClient(yconf)
	if err != nil {
		return nil, fmt.Errorf("ytstore: open client for %s: %w", cfg.Proxy, err)
	}
	return &Store{cfg: cfg, proxy: cfg.Proxy, yc: yc, codec: yconf.GetClientCompressionCodec(), path: path, logger: logger}, nil
}

// sdkLogger is the logger the client gets: it logs the client's "request failed" and
// "request interrupted" at Debug, not Error. Every failure reaches ytstore's caller
// classified, and the caller logs what it means there — a commit fenced by its aborted lease
// as a job ends, or a read of a node not created yet, is expected, and at Error the client
// would fill the log of a healthy run with errors.
type sdkLogger struct{ base }

// base is the wrapped logger (a named field type, so that sdkLogger can have a Logger method).
type base = log.Logger

func (l sdkLogger) Error(msg string, fields ...log.Field) {
	if msg == "request failed" || msg == "request interrupted" {
		l.base.Debug(msg, fields...)
		return
	}
	l.base.Error(msg, fields...)
}

// Logger and Structured return l itself: the client logs through l.Logger().
func (l sdkLogger) Logger() log.Logger         { return l }
func (l sdkLogger) Structured() log.Structured { return l }

// Path returns the pipeline node path.
func (s *Store) Path() string { return s.path.String() }

// Close stops the client; transactions started through it with BeginTx
// (sessions) are aborted. Leases are not: they are plain transactions that
// outlive the store until aborted or expired. Close is idempotent.
func (s *Store) Close() {
	s.closeRemotes()
	s.yc.Stop()
}

// Now returns the wall clock in microseconds, the unit of every *_time column.
func Now() uint64 { return uint64(time.Now().UnixMicro()) }

// child returns the path of a node under the pipeline.
func (s *Store) child(name string) ypath.Path { return s.path.Child(name) }
