package ytstore

import (
	"context"
	"fmt"
	"strconv"

	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/internal/watermark"
)

// Names of the coordination tables under the pipeline path.
const (
	// TableWorkers has one row per registered worker.
	TableWorkers = "workers"
	// TableJobs is the layout: a job exists iff its row exists.
	TableJobs = "jobs"
	// TablePartitions lists the partitions of every computation.
	TablePartitions = "partitions"
	// TableJobStatus holds what workers report about their jobs.
	TableJobStatus = "job_status"
	// TableControllerLogs is the ordered public log of the controller.
	TableControllerLogs = "controller_logs"
)

// Partition states.
const (
	PartitionActive    = "active"
	PartitionDraining  = "draining"
	PartitionCompleted = "completed"
)

// Job status states.
const (
	JobRunning   = "running"
	JobFailed    = "failed"
	JobCompleted = "completed"
)

// Worker is a row of the workers table, written by the worker itself.
type Worker struct {
	WorkerID string `yson:"worker_id"`
	// Address is host:port of the worker's inter-job HTTP endpoint.
	Address string `yson:"address"`
	// SessionTx is the worker's session transaction; the worker is alive iff it is.
	SessionTx string `yson:"session_tx"`
	// StartTime and HeartbeatTime are microseconds since the epoch.
	StartTime     uint64 `yson:"start_time"`
	HeartbeatTime uint64 `yson:"heartbeat_time"`
	// FlowCoreVersion is the version of the worker's binary (internal/corever): the
	// controller gives jobs only to workers whose version equals @flow_core_target when it
	// is set. Pipelines created before the column existed do not store it ("").
	FlowCoreVersion string `yson:"flow_core_version,omitempty"`
}

// Job is a row of the jobs table (the layout), written by the controller.
type Job struct {
	JobID         string `yson:"job_id"`
	ComputationID string `yson:"computation_id"`
	PartitionID   string `yson:"partition_id"`
	WorkerID      string `yson:"worker_id"`
	// LeaseID is the job's lease transaction; every epoch commit of the job
	// lists it as a prerequisite.
	LeaseID string `yson:"lease_id"`
	// LowerKey and UpperKey bound the hash range [LowerKey, UpperKey) of keyed
	// computations; UpperKey 0 means 2^64.
	LowerKey uint64 `yson:"lower_key"`
	UpperKey uint64 `yson:"upper_key"`
	// SourcePartition is the queue tablet index for source computations, -1 otherwise.
	SourcePartition int64 `yson:"source_partition"`
	// SourceID is the source (its stream id) a source job reads, "" otherwise.
	SourceID  string `yson:"source_id"`
	CreatedAt uint64 `yson:"created_at"`
	// Draining asks the job to finish: a source job stops reading its source,
	// no job fires timers any more; input that arrives is still processed and
	// outputs are still delivered. Set by the controller while the pipeline (or
	// the computation) drains; the job echoes it in JobStatus.Draining.
	Draining bool `yson:"draining"`
	// Retiring marks a job whose partition is being replaced (repartitioning):
	// upstream jobs route no new messages to it and it accepts none; it delivers
	// its outbox and then reports InFlight 0. Implies Draining.
	Retiring bool `yson:"retiring"`
}

// Partition is a row of the partitions table, written by the controller.
type Partition struct {
	PartitionID     string `yson:"partition_id"`
	ComputationID   string `yson:"computation_id"`
	LowerKey        uint64 `yson:"lower_key"`
	UpperKey        uint64 `yson:"upper_key"`
	SourcePartition int64  `yson:"source_partition"`
	SourceID        string `yson:"source_id"`
	// State is one of Partition*.
	State string `yson:"state"`
}

// ProcessFailureMark is in the error of a job status that reports a failing process function
// (an error or a panic; the job retries its epoch): the controller logs such statuses.
const ProcessFailureMark = "process function failed"

// JobStatus is a row of the job_status table, written by the worker running
// the job and deleted by the controller with the job.
type JobStatus struct {
	JobID    string `yson:"job_id"`
	WorkerID string `yson:"worker_id"`
	// State is one of Job*.
	State string `yson:"state"`
	// Error says what failed and where; it never holds secrets.
	Error        string `yson:"error"`
	Epoch        int64  `yson:"epoch"`
	LastCommitTS uint64 `yson:"last_commit_ts"`
	InputLag     int64  `yson:"input_lag"`
	UpdatedAt    uint64 `yson:"updated_at"`
	// InFlight counts messages the job still holds: received but not
	// committed, and committed outputs not yet acknowledged downstream or
	// delivered by an async sink. 0 with Draining set means the job is drained.
	InFlight int64 `yson:"in_flight"`
	// Draining echoes the job row's Draining/Retiring once the job has applied
	// it (its source reads and timers have stopped; a retiring job accepts no
	// input).
	Draining bool `yson:"draining"`
	// SystemWatermark is the minimum system timestamp (µs since the epoch) of
	// the messages the job holds that are not yet fully persisted downstream:
	// received but not committed, or committed outputs not yet acknowledged
	// by their consumers. 0 means the job holds no such message (it does not
	// hold the pipeline's watermark back). The controller folds these into the
	// pipeline SystemWatermark (controller.SystemWatermark).
	SystemWatermark uint64 `yson:"system_watermark"`
	// EventWatermark is the job's bound on event time (µs since the epoch): the smallest
	// event timestamp of the messages it holds and, for a source job, its estimate of the
	// event time its sources are at (the largest event timestamp seen, minus the
	// out-of-orderness bound of its watermark generator); 1 when it cannot say yet. 0
	// means the job does not hold the pipeline's EventWatermark back. The controller
	// folds these into the pipeline EventWatermark (controller.EventWatermarkBound).
	// Pipelines created before the column existed do not store it (always 0).
	EventWatermark OptionalUint64 `yson:"event_watermark,omitempty"`
	// EventIdleSince is, for a source job whose sources have given no row since then and that
	// holds no message, the time (µs since the epoch, the worker's clock like UpdatedAt) of its
	// first read that found nothing; 0 when it is not idle. The controller leaves such a job
	// out of the EventWatermark once it has been idle for the computation's
	// watermark_generator.idle_partitions.duration (controller.EventWatermarkBound).
	// Pipelines created before the column existed do not store it (always 0).
	EventIdleSince OptionalUint64 `yson:"event_idle_since,omitempty"`
	// ThrottleRequested is, for a job whose computation draws its input rows from a
	// distributed throttler (input_rows_throttler_id), the rows it asked for in all: the
	// controller grants up to this much (@throttler_grants). Pipelines created before the
	// column existed do not store it (their jobs are not throttled).
	ThrottleRequested OptionalUint64 `yson:"throttle_requested,omitempty"`
	// ThrottleRequests are, by throttler id, the units the job asked for in all from each
	// distributed throttler it draws from (input rows, input bytes, quota a process function
	// asks for with flow.Context.AcquireQuota); the controller grants up to this much
	// (@throttler_grants/by_throttler). Pipelines created before the column existed do not
	// store it (their jobs draw from the input rows throttler alone).
	ThrottleRequests map[string]int64 `yson:"throttle_requests,omitempty"`
	// Load is what the job measured for partitioning by load; the controller turns its
	// counters into rates between two statuses of the job. Pipelines created before the
	// columns existed do not store it (always zero).
	Load
}

// Load is a job's load report in job_status (partitioning by load, controller/autopart.go).
type Load struct {
	// Messages counts the messages the job processed (inputs and source rows of applied
	// epochs, less duplicates) and Bytes the bytes of the inputs it received; BusyTime is the
	// time (µs) it spent processing epochs (the process function and building the epoch's
	// writes; not its reads and commits), an estimate of its CPU time.
	// All three only grow while the job runs.
	Messages OptionalUint64 `yson:"messages,omitempty"`
	Bytes    OptionalUint64 `yson:"bytes,omitempty"`
	BusyTime OptionalUint64 `yson:"busy_time,omitempty"`
	// Timers is the number of timers the job stores now.
	Timers OptionalUint64 `yson:"timers,omitempty"`
	// Pivots are the key quantiles of the job's recent inputs (pivot_finder): the smallest
	// key hash, part_count-1 quantiles and the largest; empty when it received none.
	Pivots []uint64 `yson:"pivots,omitempty"`
}

// OptionalUint64 is a uint64 column that may be null (read as 0): a column added to a table
// after some of its rows were written, or omitted when 0.
type OptionalUint64 uint64

// UnmarshalYSON implements yson.StreamUnmarshaler: an entity (null) reads as 0.
func (v *OptionalUint64) UnmarshalYSON(r *yson.Reader) error {
	e, err := r.Next(false)
	if err != nil {
		return err
	}
	switch {
	case e == yson.EventLiteral && r.Type() == yson.TypeEntity:
		*v = 0
	case e == yson.EventLiteral && r.Type() == yson.TypeUint64:
		*v = OptionalUint64(r.Uint64())
	case e == yson.EventLiteral && r.Type() == yson.TypeInt64 && r.Int64() >= 0:
		*v = OptionalUint64(r.Int64())
	default:
		return fmt.Errorf("ytstore: want an unsigned integer or null, got %v", r.Type())
	}
	return nil
}

// LogRecord is a row of controller_logs.
type LogRecord struct {
	// Time is microseconds since the epoch.
	Time uint64 `yson:"time"`
	Host string `yson:"host"`
	Data string `yson:"data"`
}

func coordTables() []tableDef {
	return []tableDef{
		{name: TableWorkers, optionalTail: 1, schema: coordSorted(
			coordKey("worker_id", schema.TypeBytes),
			coordVal("address", schema.TypeBytes),
			coordVal("session_tx", schema.TypeBytes),
			coordVal("start_time", schema.TypeUint64),
			coordVal("heartbeat_time", schema.TypeUint64),
			coordVal("flow_core_version", schema.TypeBytes),
		)},
		{name: TableJobs, schema: coordSorted(
			coordKey("job_id", schema.TypeBytes),
			coordVal("computation_id", schema.TypeBytes),
			coordVal("partition_id", schema.TypeBytes),
			coordVal("worker_id", schema.TypeBytes),
			coordVal("lease_id", schema.TypeBytes),
			coordVal("lower_key", schema.TypeUint64),
			coordVal("upper_key", schema.TypeUint64),
			coordVal("source_partition", schema.TypeInt64),
			coordVal("source_id", schema.TypeBytes),
			coordVal("created_at", schema.TypeUint64),
			coordVal("draining", schema.TypeBoolean),
			coordVal("retiring", schema.TypeBoolean),
		)},
		{name: TablePartitions, schema: coordSorted(
			coordKey("partition_id", schema.TypeBytes),
			coordVal("computation_id", schema.TypeBytes),
			coordVal("lower_key", schema.TypeUint64),
			coordVal("upper_key", schema.TypeUint64),
			coordVal("source_partition", schema.TypeInt64),
			coordVal("source_id", schema.TypeBytes),
			coordVal("state", schema.TypeBytes),
		)},
		{name: TableJobStatus, schema: coordSorted(
			coordKey("job_id", schema.TypeBytes),
			coordVal("worker_id", schema.TypeBytes),
			coordVal("state", schema.TypeBytes),
			coordVal("error", schema.TypeBytes),
			coordVal("epoch", schema.TypeInt64),
			coordVal("last_commit_ts", schema.TypeUint64),
			coordVal("input_lag", schema.TypeInt64),
			coordVal("updated_at", schema.TypeUint64),
			coordVal("in_flight", schema.TypeInt64),
			coordVal("draining", schema.TypeBoolean),
			coordVal("system_watermark", schema.TypeUint64),
			coordVal("event_watermark", schema.TypeUint64),
			coordVal("event_idle_since", schema.TypeUint64),
			coordVal("throttle_requested", schema.TypeUint64),
			coordVal("throttle_requests", schema.TypeAny),
			coordVal("messages", schema.TypeUint64),
			coordVal("bytes", schema.TypeUint64),
			coordVal("busy_time", schema.TypeUint64),
			coordVal("timers", schema.TypeUint64),
			coordVal("pivots", schema.TypeAny),
		)},
		{name: TableControllerLogs, ordered: true, schema: schema.Schema{Columns: []schema.Column{
			coordVal("time", schema.TypeUint64),
			coordVal("host", schema.TypeBytes),
			coordVal("data", schema.TypeBytes),
		}}},
	}
}

func coordKey(name string, t schema.Type) schema.Column {
	return schema.Column{Name: name, Type: t, Required: true, SortOrder: schema.SortAscending}
}

func coordVal(name string, t schema.Type) schema.Column {
	return schema.Column{Name: name, Type: t}
}

func coordSorted(cols ...schema.Column) schema.Schema {
	return schema.Schema{UniqueKeys: true, Columns: cols}
}

// selectAll reads every row of table matching where (a query-language
// predicate, "" for all rows).
func selectAll[T any](ctx context.Context, s *Store, table, where string) ([]T, error) {
	q := "* from [" + s.child(table).String() + "]"
	if where != "" {
		q += " where " + where
	}
	r, err := s.yc.SelectRows(ctx, q, nil)
	if err != nil {
		return nil, fmt.Errorf("ytstore: read %s: %w", s.child(table), classify(err))
	}
	defer func() { _ = r.Close() }()
	var rows []T
	for r.Next() {
		var row T
		if err := r.Scan(&row); err != nil {
			return nil, fmt.Errorf("ytstore: read %s: decode row: %w", s.child(table), err)
		}
		rows = append(rows, row)
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("ytstore: read %s: %w", s.child(table), classify(err))
	}
	return rows, nil
}

// Workers reads the workers table.
func (s *Store) Workers(ctx context.Context) ([]Worker, error) {
	return selectAll[Worker](ctx, s, TableWorkers, "")
}

// Jobs reads the whole layout.
func (s *Store) Jobs(ctx context.Context) ([]Job, error) {
	return selectAll[Job](ctx, s, TableJobs, "")
}

// JobsOfWorker reads the jobs assigned to one worker.
func (s *Store) JobsOfWorker(ctx context.Context, workerID string) ([]Job, error) {
	return selectAll[Job](ctx, s, TableJobs, "worker_id = "+strconv.Quote(workerID))
}

// Partitions reads the partitions table.
func (s *Store) Partitions(ctx context.Context) ([]Partition, error) {
	return selectAll[Partition](ctx, s, TablePartitions, "")
}

// JobStatuses reads the job_status table.
func (s *Store) JobStatuses(ctx context.Context) ([]JobStatus, error) {
	return selectAll[JobStatus](ctx, s, TableJobStatus, "")
}

// ControllerLogs reads the last limit records of controller_logs (all when
// limit <= 0), oldest first.
func (s *Store) ControllerLogs(ctx context.Context, limit int) ([]LogRecord, error) {
	recs, err := selectAll[LogRecord](ctx, s, TableControllerLogs, "")
	if err != nil {
		return nil, err
	}
	if limit > 0 && len(recs) > limit {
		recs = recs[len(recs)-limit:]
	}
	return recs, nil
}

// PutWorker inserts or replaces a worker's row. The write is conditional on
// the worker's session (w.SessionTx): a worker whose session died gets
// ErrLeaseLost and cannot resurrect its row.
func (s *Store) PutWorker(ctx context.Context, w Worker) error {
	if w.FlowCoreVersion != "" && !s.workerVersionColumn(ctx) {
		w.FlowCoreVersion = ""
	}
	tx, err := s.beginTabletTx(ctx)
	if err != nil {
		return err
	}
	defer tx.abort()
	if err := tx.insert(ctx, TableWorkers, []any{w}); err != nil {
		return err
	}
	return tx.commit(ctx, w.SessionTx)
}

// DeleteWorker removes a worker's row (unconditionally).
func (s *Store) DeleteWorker(ctx context.Context, workerID string) error {
	keys := []any{map[string]any{"worker_id": workerID}}
	if err := s.yc.DeleteRows(ctx, s.child(TableWorkers), keys, nil); err != nil {
		return fmt.Errorf("ytstore: delete worker %s: %w", workerID, classify(err))
	}
	return nil
}

// PutJobStatus writes a job's status. When lease is not empty the write is
// conditional on it, so a fenced job gets ErrLeaseLost and writes nothing.
// EventWatermarks reports whether the pipeline's job_status table has the event_watermark
// column (pipelines created by older versions do not): only then do jobs report their
// event-time bounds, the controller publishes @event_watermark and event_time timers follow
// it. The answer is read once; a failed read is an error, tried again at the next call.
func (s *Store) EventWatermarks(ctx context.Context) (bool, error) {
	cols, err := s.jobStatusColumns(ctx)
	return cols.eventWatermark, err
}

// jobStatusOptional records which columns added to job_status after its first version the
// pipeline's table has.
type jobStatusOptional struct {
	eventWatermark, eventIdleSince, throttleRequested, throttleRequests, load bool
}

// jobStatusColumns reads, once, which optional columns the pipeline's job_status has; a
// failed read is an error, tried again at the next call.
func (s *Store) jobStatusColumns(ctx context.Context) (jobStatusOptional, error) {
	s.eventWatermarksMu.Lock()
	defer s.eventWatermarksMu.Unlock()
	if s.eventWatermarksRead {
		return s.jobStatusCols, nil
	}
	var sc schema.Schema
	if err := s.yc.GetNode(ctx, s.child(TableJobStatus).Attr("schema"), &sc, nil); err != nil {
		return jobStatusOptional{}, fmt.Errorf("ytstore: read the schema of %s: %w", s.child(TableJobStatus), classify(err))
	}
	s.eventWatermarksRead = true
	for _, c := range sc.Columns {
		switch c.Name {
		case "event_watermark":
			s.jobStatusCols.eventWatermark = true
		case "event_idle_since":
			s.jobStatusCols.eventIdleSince = true
		case "throttle_requested":
			s.jobStatusCols.throttleRequested = true
		case "throttle_requests":
			s.jobStatusCols.throttleRequests = true
		case "pivots":
			s.jobStatusCols.load = true
		}
	}
	if !s.jobStatusCols.eventWatermark {
		s.logger.Warn("job_status has no event_watermark column (pipeline created by an older version): event_time timers fire by the wall clock")
	} else if !s.jobStatusCols.eventIdleSince {
		s.logger.Warn("job_status has no event_idle_since column (pipeline created by an older version): idle source partitions hold the event watermark back")
	}
	return s.jobStatusCols, nil
}

// ThrottlingAll reports whether the pipeline's job_status table has the throttle_requests
// column: its jobs may draw from several throttlers (input bytes, quota asked for by process
// functions). Read once, as Throttling.
func (s *Store) ThrottlingAll(ctx context.Context) (bool, error) {
	cols, err := s.jobStatusColumns(ctx)
	return cols.throttleRequests, err
}

// Throttling reports whether the pipeline's job_status table has the throttle_requested column
// (pipelines created by older versions do not: their jobs are not throttled). The answer is
// read once; a failed read is an error, tried again at the next call.
func (s *Store) Throttling(ctx context.Context) (bool, error) {
	cols, err := s.jobStatusColumns(ctx)
	return cols.throttleRequested, err
}

func (s *Store) PutJobStatus(ctx context.Context, st JobStatus, lease string) error {
	tx, err := s.beginTabletTx(ctx)
	if err != nil {
		return err
	}
	defer tx.abort()
	cols, err := s.jobStatusColumns(ctx)
	if err != nil {
		return err
	}
	if !cols.eventWatermark {
		st.EventWatermark = 0 // a pipeline of an older version: not stored
	}
	if !cols.eventIdleSince {
		st.EventIdleSince = 0
	}
	if !cols.throttleRequested {
		st.ThrottleRequested = 0
	}
	if !cols.throttleRequests {
		st.ThrottleRequests = nil
	}
	if !cols.load {
		st.Load = Load{} // no load columns: the pipeline is partitioned as if idle
	}
	if err := tx.insert(ctx, TableJobStatus, []any{st}); err != nil {
		return err
	}
	if lease == "" {
		return tx.commit(ctx)
	}
	return tx.commit(ctx, lease)
}

// LayoutChange is one atomic update of the coordination tables by the leader.
type LayoutChange struct {
	PutPartitions    []Partition
	DeletePartitions []string // partition ids
	PutJobs          []Job
	DeleteJobs       []string // job ids; their job_status rows are deleted too
	DeleteWorkers    []string // worker ids of dead workers
}

// Empty reports whether the change writes nothing.
func (c *LayoutChange) Empty() bool {
	return len(c.PutPartitions) == 0 && len(c.DeletePartitions) == 0 && len(c.PutJobs) == 0 &&
		len(c.DeleteJobs) == 0 && len(c.DeleteWorkers) == 0
}

// ApplyLayout applies c in one tablet transaction conditional on the leader's
// session: a deposed leader gets ErrLeaseLost and changes nothing.
func (s *Store) ApplyLayout(ctx context.Context, leader *Session, c LayoutChange) error {
	if c.Empty() {
		return nil
	}
	tx, err := s.beginTabletTx(ctx)
	if err != nil {
		return err
	}
	defer tx.abort()
	if err := tx.insert(ctx, TablePartitions, toAny(c.PutPartitions)); err != nil {
		return err
	}
	if err := tx.delete(ctx, TablePartitions, keysOf("partition_id", c.DeletePartitions)); err != nil {
		return err
	}
	if err := tx.insert(ctx, TableJobs, toAny(c.PutJobs)); err != nil {
		return err
	}
	if err := tx.delete(ctx, TableJobs, keysOf("job_id", c.DeleteJobs)); err != nil {
		return err
	}
	if err := tx.delete(ctx, TableJobStatus, keysOf("job_id", c.DeleteJobs)); err != nil {
		return err
	}
	if err := tx.delete(ctx, TableWorkers, keysOf("worker_id", c.DeleteWorkers)); err != nil {
		return err
	}
	return tx.commit(ctx, leader.ID())
}

// AppendControllerLog appends records to controller_logs.
func (s *Store) AppendControllerLog(ctx context.Context, recs ...LogRecord) error {
	if len(recs) == 0 {
		return nil
	}
	if err := s.yc.InsertRows(ctx, s.child(TableControllerLogs), toAny(recs), nil); err != nil {
		return fmt.Errorf("ytstore: append to %s: %w", s.child(TableControllerLogs), classify(err))
	}
	return nil
}

func toAny[T any](rows []T) []any {
	out := make([]any, len(rows))
	for i := range rows {
		out[i] = rows[i]
	}
	return out
}

func keysOf(column string, ids []string) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = map[string]any{column: id}
	}
	return out
}

// EventReport is what the status says of event time to the watermark rules: running (or
// completed) with a time, its event_watermark and event_idle_since.
func (st JobStatus) EventReport() watermark.Report {
	return watermark.Report{
		Running:   st.UpdatedAt != 0 && (st.State == JobRunning || st.State == JobCompleted),
		UpdatedAt: st.UpdatedAt, Bound: uint64(st.EventWatermark), IdleSince: uint64(st.EventIdleSince),
	}
}
