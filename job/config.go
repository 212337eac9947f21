// The worker's configuration (Config) and its defaults.

package job

import (
	"time"

	"go.ytsaurus.tech/library/go/core/log"
)

// Config configures a Worker. The zero value of every optional field is its default.
type Config struct {
	// Proxy is the YTsaurus HTTP proxy address. Required.
	Proxy string
	// Token authenticates requests; empty means none. Never logged.
	Token string
	// Path is the pipeline node. Required.
	Path string
	// Listen is the address of the inter-job HTTP endpoint; default "127.0.0.1:0".
	Listen string
	// AdvertiseHost, when set, is the host the worker publishes with its endpoint's port
	// instead of the listener's own host: the name or address other hosts reach it by, for a
	// listener on a wildcard address (":0", "0.0.0.0:0"). Default: the listener's address.
	AdvertiseHost string
	// WorkerID names the worker; default a fresh random id.
	WorkerID string
	// FlowCoreVersion is the version of the worker's binary (internal/corever), stored with
	// its registration: while the pipeline's @flow_core_target is set and differs, the
	// controller gives the worker no jobs. Default "" (no version).
	FlowCoreVersion string
	// Logger receives structured logs; nil discards them.
	Logger log.Structured
	// PollPeriod is how often the layout is read; default 200ms.
	PollPeriod time.Duration
	// SessionTimeout is the session transaction timeout; default 10s.
	SessionTimeout time.Duration
	// StatusPeriod is how often job statuses and the heartbeat are written; default 1s. In a
	// pipeline that awaits watermarks (spec.Pipeline.AwaitsWatermarks) statuses are written,
	// and the published watermarks read, at every poll (PollPeriod).
	StatusPeriod time.Duration
	// InboxLimit bounds the messages buffered per job; default 10000.
	InboxLimit int
	// OutboxLimit bounds the undelivered outputs of a job: while its output store holds at
	// least this many messages, the job reads no new input or source rows (back-pressure
	// from slow readers up the pipeline); default 100000. A swift source job also reads no
	// more while it holds this many rows not committed past, and after a start it keeps its
	// system watermark at the published one until it committed this many rows past its start
	// offset (or caught up with the source): keep it equal on all workers.
	OutboxLimit int
	// StateCacheKeys bounds the key hashes whose committed states a keyed job keeps in
	// memory (statecache.go); default 100000; negative disables the cache.
	StateCacheKeys int
	// FreshInputIDs bounds the committed input ids a keyed exactly-once job remembers so that
	// inputs born after its start need no dedup lookup (fresh.go); default 65536; negative
	// looks every input up.
	FreshInputIDs int
	// PushTimeout bounds how long a push request waits for its messages to commit before
	// answering with what committed so far; default 3s.
	PushTimeout time.Duration
	// LeaseCheckPeriod overrides the spec's lease_check_period when positive (tests).
	LeaseCheckPeriod time.Duration
	// EmptyBatchBackoff overrides the spec's empty_batch_backoff when positive (tests).
	EmptyBatchBackoff time.Duration
	// InProcessPeers hands pushes to reader jobs on other workers of this process that have it
	// set too over in memory, as pushes to jobs of the same worker are, instead of over HTTP:
	// yt-flow run runs all its workers in one process. Workers in other processes are always
	// reached over HTTP.
	InProcessPeers bool
	// PaceFactor paces a busy job's epochs by their cost (runner.pace): after an epoch that
	// took a medium batch, the next starts PaceFactor times that epoch's wall time after its
	// start at the earliest, and never more than half of batch_duration after it. Default 4
	// (the epoch loop works at most a quarter of the time while paced); a negative value
	// paces every such epoch by half of batch_duration whatever it cost (the fixed pacing
	// of earlier versions, kept for side-by-side benchmarks).
	PaceFactor int
	// TopUpWait bounds how long a source job's epoch waits for the top-up of rows read ahead
	// that did not fill its batch (sourceState.read); default 10ms. A negative value waits
	// for the top-up however long the source's read takes (earlier versions; side-by-side
	// benchmarks).
	TopUpWait time.Duration
	// FaultAckDelay, when positive, holds every push reply that acknowledges messages for this
	// long after they are committed (a slow network on the acknowledgement path). It is a
	// testing aid for fault tests, see failpoint.go; exactly-once holds for any value.
	FaultAckDelay time.Duration
}

func (c Config) withDefaults() Config {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:0"
	}
	if c.PollPeriod <= 0 {
		c.PollPeriod = 200 * time.Millisecond
	}
	if c.PaceFactor == 0 {
		c.PaceFactor = defaultPaceFactor
	}
	if c.TopUpWait == 0 {
		c.TopUpWait = topUpWait
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = 10 * time.Second
	}
	if c.StatusPeriod <= 0 {
		c.StatusPeriod = time.Second
	}
	if c.InboxLimit <= 0 {
		c.InboxLimit = 10000
	}
	if c.OutboxLimit <= 0 {
		c.OutboxLimit = 100000
	}
	if c.StateCacheKeys == 0 {
		c.StateCacheKeys = 100000
	}
	if c.FreshInputIDs == 0 {
		c.FreshInputIDs = defaultFreshLimit
	}
	if c.PushTimeout <= 0 {
		c.PushTimeout = 3 * time.Second
	}
	return c
}
