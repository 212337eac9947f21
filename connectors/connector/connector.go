// Package connector is the runtime half of the connector SPI: the interfaces a source or a
// sink implements and the table of constructors, by canonical class name, that connector
// packages fill from their init functions (next to their registry.Register call). The job
// runtime opens sources and sinks only through this package; it never names a class.
//
// Kinds of sinks (registry.SinkKind):
//   - SyncSink: its writes join the epoch transaction, so they commit exactly once with it.
//   - AtLeastOnceSyncSink: writes to an external system during the epoch, before the
//     commit; an error fails the epoch; a restart may write the same messages again.
//   - AsyncSink: delivers rows of the output store (the transactional outbox) after the
//     commit; each row has a sequence number fixed at the commit, so a resend after a
//     failure or a restart carries the same numbers and the target deduplicates on them.
//
// at_most_once_strategy is not a connector's business: the runtime puts the bounded
// in-memory queue of package job around the sink (see BestEffortWriter).
package connector

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/ytstore"
)

// Env is what a connector gets from the runtime when it is opened for one job.
type Env struct {
	// Store is the framework's YTsaurus client.
	Store *ytstore.Store
	// PipelinePath is the pipeline's Cypress node.
	PipelinePath string
	// WorkerID, ComputationID, PartitionID and JobID name the job and its worker; SinkID or
	// SourceID the entity.
	WorkerID, ComputationID, PartitionID, JobID string
	SourceID, SinkID                            string
	// Dynamic holds the entity's dynamic parameters as the class's dynamic parser returned
	// them (registry.Class.ParseDynamic); nil when the class has none.
	Dynamic any
	// SourcePartition is the index of the source partition a source job reads (a queue
	// tablet); -1 for sinks.
	SourcePartition int64
}

// Position is where a reader resumes in its partition: bytes only the connector reads (a
// queue offset, a Kafka offset, a table and row index). Nil is the partition's start. The
// runtime keeps the position of each source partition in the partition state and moves it
// only with the epoch commit, so a reader never decides what is committed.
type Position []byte

// Row is one row read from a source partition.
type Row struct {
	// Offset is the row's sequence number in its partition: strictly increasing in read
	// order and the same on every read of the row. The ids of the row's messages derive
	// from it, so a re-read after a restart yields the same ids.
	Offset int64
	// Next is the position just after the row: where a read resumes once the row is
	// committed.
	Next Position
	// Timestamp is the row's time in microseconds since the epoch when the source knows it
	// (a queue row's commit time, a Kafka record's time), else 0 (the time it is read). It
	// is the row's system and event time.
	Timestamp uint64
	// Born is the YTsaurus cluster timestamp of the row's write when the source lives in
	// the pipeline's cluster (a queue row's $timestamp), else 0: no output of the row can
	// have been delivered before it (epoch.Input.Born).
	Born uint64
	// Columns are the row's data columns.
	Columns map[string]any
}

// Source reads one partition of a source from positions the runtime keeps.
type Source interface {
	// Read returns up to max rows at and after position from. An empty result means the
	// partition has no rows there yet (for a finite source: it is complete).
	Read(ctx context.Context, from Position, max int64) ([]Row, error)
	// Advance tells the source system that everything before pos is committed (e.g. moves a
	// YTsaurus consumer or commits a Kafka group offset, for lag reporting); it may be called
	// late or not at all, and it moves no data.
	Advance(ctx context.Context, pos Position) error
	// Finite tells whether an empty read means the partition is complete.
	Finite() bool
	// String names the source partition for errors and logs ("queue //home/q tablet 3").
	String() string
}

// SyncSink turns an epoch's messages into writes of the epoch transaction. It reads msgs
// only during the call (the runtime reuses the slice); the payloads it may keep.
type SyncSink interface {
	Write(msgs []flow.Message) (ytstore.SinkWrite, error)
}

// AtLeastOnceSyncSink writes an epoch's messages to an external system before the epoch
// commits; an error fails the epoch, which is retried with the same messages.
type AtLeastOnceSyncSink interface {
	WriteBeforeCommit(ctx context.Context, msgs []flow.Message) error
}

// Delivery is one stored output to deliver: its message id, its sequence number in the
// partition's sink session, its system timestamp (microseconds since the epoch, 0 when not
// known) and its payload row, decoded (Row) or as the YSON map it is stored as (Encoded,
// sent as it is; used when set).
type Delivery struct {
	MessageID       string
	SequenceNumber  int64
	SystemTimestamp uint64
	Row             map[string]any
	Encoded         yson.RawValue
}

// Batch is a run of committed outputs of one partition for one async sink: the outputs one
// epoch commit stored for it (an output store chunk), so its bounds are fixed at the commit
// and a replay after a restart cuts the same batches. Rows are in message id order and
// carry consecutive sequence numbers FirstSeq..LastSeq.
type Batch struct {
	FirstSeq, LastSeq int64
	FirstID, LastID   string
	Rows              []Delivery
}

// Token is the batch's stable identity within its sink, for targets that deduplicate whole
// batches: "<partition>/<sink>/<first seq>-<last seq>".
func (b *Batch) Token(env Env) string {
	return fmt.Sprintf("%s/%s/%d-%d", env.PartitionID, env.SinkID, b.FirstSeq, b.LastSeq)
}

// AsyncSink delivers committed outputs. The runtime calls Deliver with the pending batches in
// sequence order, one call at a time; Deliver returns how many leading batches the target now
// holds durably (all of them when err is nil). Those are acknowledged — the runtime deletes
// them from the output store — and the rest are offered again, the same batches with the same
// rows, after a failure or a restart: a target must deduplicate a batch it already holds (by
// sequence number, by Token, or by message id). An instance that gave up for good returns
// errors wrapping ErrSinkBroken from then on, without writing; the runtime reports the sink
// broken with that error (job status, `yt-flow status`) until the job restarts.
type AsyncSink interface {
	Deliver(ctx context.Context, batches []Batch) (delivered int, err error)
}

// BestEffortWriter is what the at-most-once queue of the runtime writes to: one attempt per
// batch, the batch dropped on error.
type BestEffortWriter interface {
	WriteBestEffort(ctx context.Context, rows []map[string]any) error
}

// Topology is implemented by an async sink whose routing of outputs depends on its
// parameters, as the sharded ClickHouse sink's shards decide where a batch goes and which
// token it carries. Topology returns a fingerprint of that routing. The runtime keeps it with
// the partition's state and refuses to start a job whose undelivered outputs were committed
// under another fingerprint (ErrTopologyChanged): sent along the new routing, a batch
// partly delivered along the old one would be written twice.
type Topology interface {
	Topology() string
}

// ErrTopologyChanged is wrapped by the error of a job refused because of Topology.
var ErrTopologyChanged = errors.New("the sink's topology changed while outputs committed under the old one are undelivered")

// Unavailability is implemented by the dynamic parameters of a source that has Flow's
// unavailable_threshold: once reads of a partition have failed for UnavailableAfter (0:
// never), the runtime reports the partition unavailable (in the job's status and log) instead
// of as a transient read failure; it keeps retrying either way.
type Unavailability interface {
	UnavailableAfter() time.Duration
}

// Reconfigurer is implemented by a source or sink that applies a change of its dynamic
// parameters in place. When the pipeline's dynamic spec changes while a job runs, the
// runtime calls Reconfigure between two epochs with the newly parsed dynamic parameters
// (registry.Class.ParseDynamic, as Env.Dynamic holds them at open), only when they differ
// from the ones in force. An async sink's Deliver or a best-effort writer may be running
// meanwhile: the connector guards what it replaces. An error keeps the old parameters and
// ends the job, which the controller restarts with the new ones. A connector that does not
// implement it is reopened: its job restarts (ErrRestartToReconfigure).
type Reconfigurer interface {
	Reconfigure(ctx context.Context, dynamic any) error
}

// ErrRestartToReconfigure ends a job whose connector cannot apply new dynamic parameters in
// place; the controller starts the job again, and it opens the connector with them.
var ErrRestartToReconfigure = errors.New("dynamic parameters changed: the job restarts to apply them")

// ErrSinkBroken is wrapped by the errors of an async sink instance that gave up (its attempts
// ran out, or its target refused it for good): it stays broken, writing nothing, until its
// job restarts (the pipeline is paused and started). The committed outputs it holds stay in
// the output store and are delivered after the restart.
var ErrSinkBroken = errors.New("broken until the pipeline is paused and started")

// Constructors of one class. A class sets the ones of its role and kind.
type Constructors struct {
	// Partitions lists the partition indexes of a source (a queue's tablets admitted by its
	// partition_filter); the controller runs one job per index. Nil: one partition, 0.
	Partitions func(ctx context.Context, env Env, params any) ([]int64, error)
	// Ends returns, by partition index, the sequence number after a source partition's last
	// row (Row.Offset + 1), for the backlog `yt-flow status` shows (optional).
	Ends func(ctx context.Context, env Env, params any) (map[int64]int64, error)
	// Source opens the reader of the partition env.SourcePartition.
	Source func(env Env, params any) (Source, error)
	// Sink constructors, by kind.
	SyncSink            func(env Env, params any) (SyncSink, error)
	AtLeastOnceSyncSink func(env Env, params any) (AtLeastOnceSyncSink, error)
	AsyncSink           func(env Env, params any) (AsyncSink, error)
	// BestEffort opens the writer behind at_most_once_strategy (async sinks that accept it).
	BestEffort func(env Env, params any) (BestEffortWriter, error)
}

var (
	mu      sync.RWMutex
	sources = map[string]Constructors{}
	sinks   = map[string]Constructors{}
)

// RegisterSource registers the constructors of the source class named class (its canonical
// registry name). It panics when the class is registered twice.
func RegisterSource(class string, c Constructors) { register(sources, "source", class, c) }

// RegisterSink registers the constructors of the sink class named class.
func RegisterSink(class string, c Constructors) { register(sinks, "sink", class, c) }

func register(m map[string]Constructors, role, class string, c Constructors) {
	mu.Lock()
	defer mu.Unlock()
	if _, ok := m[class]; ok {
		panic(fmt.Sprintf("connector: %s class %q registered twice", role, class))
	}
	m[class] = c
}

// SourceOf returns the constructors of source class.
func SourceOf(class string) (Constructors, bool) {
	mu.RLock()
	defer mu.RUnlock()
	c, ok := sources[class]
	return c, ok
}

// SinkOf returns the constructors of sink class.
func SinkOf(class string) (Constructors, bool) {
	mu.RLock()
	defer mu.RUnlock()
	c, ok := sinks[class]
	return c, ok
}
