package ytstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"

	"go.ytsaurus.tech/yt/go/migrate"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yt"
)

// PipelineFormatVersion is the value of @pipeline_format_version that
// CreatePipeline sets; it changes when the internal tables change incompatibly.
const PipelineFormatVersion = 1

// LeaderLockNode is the child node the leader controller locks exclusively.
const LeaderLockNode = "leader_controller_lock"

// Target states (@target_state), set by lifecycle commands.
const (
	TargetWorking = "working"
	TargetStopped = "stopped"
	TargetPaused  = "paused"
)

// Pipeline states (@pipeline_state), moved by the controller.
const (
	StateWorking   = "working"
	StateDraining  = "draining"
	StateStopped   = "stopped"
	StatePausing   = "pausing"
	StatePaused    = "paused"
	StateCompleted = "completed"
)

// tableDef describes one internal dynamic table of the pipeline.
type tableDef struct {
	// name is the table node name under the pipeline path.
	name string
	// schema is the table schema; sorted tables have key columns first.
	schema schema.Schema
	// ordered makes an ordered (queue-like) table; otherwise it is sorted.
	ordered bool
	// attributes are extra creation attributes (e.g. tablet_count); may be nil.
	attributes map[string]any
	// optionalTail is how many of the last columns a table created by an older version may
	// lack (the code that writes them checks): such a table is accepted as it is.
	optionalTail int
}

// tables is the full list CreatePipeline creates.
func tables() []tableDef {
	return slices.Concat(coordTables(), dataTables())
}

// Exists reports whether the pipeline node exists.
func (s *Store) Exists(ctx context.Context) (bool, error) {
	ok, err := s.yc.NodeExists(ctx, s.path, nil)
	if err != nil {
		return false, fmt.Errorf("ytstore: check pipeline %s: %w", s.path, classify(err))
	}
	return ok, nil
}

// CreatePipeline creates the pipeline map node (with
// @pipeline_format_version), the leader lock node, the transport secret
// (TransportSecretNode; an existing one is kept) and all internal tables, and
// mounts the tables, waiting until they are mounted. It is idempotent: what
// already exists is kept (a table with another schema is an error), what is
// missing is created, unmounted tables are mounted.
func (s *Store) CreatePipeline(ctx context.Context) error {
	_, err := s.yc.CreateNode(ctx, s.path, yt.NodeMap, &yt.CreateNodeOptions{
		Recursive:      true,
		IgnoreExisting: true,
		Attributes:     map[string]any{"pipeline_format_version": PipelineFormatVersion},
	})
	if err != nil {
		return fmt.Errorf("ytstore: create pipeline node %s: %w", s.path, classify(err))
	}
	var version int64
	if err := s.yc.GetNode(ctx, s.path.Attr("pipeline_format_version"), &version, nil); err != nil {
		if !errors.Is(classify(err), ErrNotFound) {
			return fmt.Errorf("ytstore: read %s/@pipeline_format_version: %w", s.path, classify(err))
		}
		// An existing plain map node becomes a pipeline only if it is empty.
		var children []string
		if err := s.yc.ListNode(ctx, s.path, &children, nil); err != nil {
			return fmt.Errorf("ytstore: list %s: %w", s.path, classify(err))
		}
		if len(children) > 0 {
			return fmt.Errorf("ytstore: create pipeline: %s exists, is not empty and is not a pipeline (no @pipeline_format_version)", s.path)
		}
		if err := s.yc.SetNode(ctx, s.path.Attr("pipeline_format_version"), PipelineFormatVersion, nil); err != nil {
			return fmt.Errorf("ytstore: set %s/@pipeline_format_version: %w", s.path, classify(err))
		}
	} else if version != PipelineFormatVersion {
		return fmt.Errorf("ytstore: create pipeline: %s has pipeline_format_version %d, this build uses %d", s.path, version, PipelineFormatVersion)
	}
	_, err = s.yc.CreateNode(ctx, s.child(LeaderLockNode), yt.NodeMap, &yt.CreateNodeOptions{IgnoreExisting: true})
	if err != nil {
		return fmt.Errorf("ytstore: create %s: %w", s.child(LeaderLockNode), classify(err))
	}
	if err := s.ensureTransportSecret(ctx, rand.Reader); err != nil {
		return err
	}
	for _, t := range tables() {
		if err := s.createTable(ctx, t); err != nil {
			return err
		}
	}
	for _, t := range tables() {
		if err := s.mountTable(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) createTable(ctx context.Context, t tableDef) error {
	p := s.child(t.name)
	attrs := map[string]any{"dynamic": true, "schema": t.schema}
	for k, v := range t.attributes {
		attrs[k] = v
	}
	_, err := s.yc.CreateNode(ctx, p, yt.NodeTable, &yt.CreateNodeOptions{IgnoreExisting: true, Attributes: attrs})
	if err != nil {
		return fmt.Errorf("ytstore: create table %s: %w", p, classify(err))
	}
	var have schema.Schema
	if err := s.yc.GetNode(ctx, p.Attr("schema"), &have, nil); err != nil {
		return fmt.Errorf("ytstore: read schema of %s: %w", p, classify(err))
	}
	if !sameColumns(have, t.schema) && !olderColumns(have, t) {
		return fmt.Errorf("ytstore: table %s exists with another schema (columns %v, want %v)", p, columnNames(have), columnNames(t.schema))
	}
	return nil
}

func (s *Store) mountTable(ctx context.Context, t tableDef) error {
	p := s.child(t.name)
	var state string
	if err := s.yc.GetNode(ctx, p.Attr("tablet_state"), &state, nil); err != nil {
		return fmt.Errorf("ytstore: read tablet state of %s: %w", p, classify(err))
	}
	if state == yt.TabletMounted {
		return nil
	}
	if err := migrate.MountAndWait(ctx, s.yc, p); err != nil {
		return fmt.Errorf("ytstore: mount %s: %w", p, classify(err))
	}
	return nil
}

func sameColumns(a, b schema.Schema) bool {
	return slices.EqualFunc(a.Columns, b.Columns, func(x, y schema.Column) bool {
		return x.Name == y.Name && x.SortOrder == y.SortOrder
	})
}

// olderColumns reports whether have is t's schema without some of its optional last columns
// (a table created by an older version).
func olderColumns(have schema.Schema, t tableDef) bool {
	n := len(have.Columns)
	if n >= len(t.schema.Columns) || n < len(t.schema.Columns)-t.optionalTail {
		return false
	}
	return sameColumns(have, schema.Schema{Columns: t.schema.Columns[:n]})
}

func columnNames(s schema.Schema) []string {
	names := make([]string, len(s.Columns))
	for i, c := range s.Columns {
		names[i] = c.Name
	}
	return names
}

// Attributes are the pipeline node attributes the runtime reads.
type Attributes struct {
	// FormatVersion is @pipeline_format_version.
	FormatVersion int64 `yson:"pipeline_format_version"`
	// Spec is @spec, the static spec as YSON (nil when unset); parse it with
	// spec.ParsePipeline.
	Spec yson.RawValue `yson:"spec"`
	// DynamicSpec is @dynamic_spec as YSON (nil when unset); parse it with
	// spec.ParseDynamic.
	DynamicSpec yson.RawValue `yson:"dynamic_spec"`
	// SpecVersion is @spec_version, 0 when no spec was ever set.
	SpecVersion int64 `yson:"spec_version"`
	// DynamicSpecVersion is @dynamic_spec_version, 0 when unset.
	DynamicSpecVersion int64 `yson:"dynamic_spec_version"`
	// TargetState is @target_state (Target*), "" when never started.
	TargetState string `yson:"target_state"`
	// PipelineState is @pipeline_state (State*), "" before the first controller.
	PipelineState string `yson:"pipeline_state"`
	// LeaderControllerAddress is @leader_controller_address, "" when none.
	LeaderControllerAddress string `yson:"leader_controller_address"`
	// SystemWatermark is @system_watermark (µs), published by the leader: no
	// message of an internal stream with a smaller system timestamp is held by
	// any job any more. 0 when never published.
	SystemWatermark uint64 `yson:"system_watermark"`
	// EventWatermark is @event_watermark (µs), published by the leader: event_time timers
	// whose trigger is not above it fire. nil when never published (a pipeline of an older
	// version, whose event_time timers fire by the wall clock); math.MaxUint64 once every
	// source is exhausted and nothing is in flight.
	EventWatermark *uint64 `yson:"event_watermark"`
	// EventWatermarks is @event_watermarks, published by the leader: the EventWatermark of
	// every stream and alignment group. nil when never published (a controller of an older
	// version: event_time timers follow EventWatermark).
	EventWatermarks *EventWatermarks `yson:"event_watermarks"`
	// ThrottlerGrants is @throttler_grants, published by the leader: what the distributed
	// throttlers granted. nil when never published.
	ThrottlerGrants *ThrottlerGrants `yson:"throttler_grants"`
	// Partitioning is @partitioning, published by the leader: by keyed computation, its
	// partition count and why. nil when never published.
	Partitioning map[string]PartitionCount `yson:"partitioning"`
	// DeadLettersDropped is @dead_letters_dropped: per computation, how many dead letters
	// `yt-flow dead-letters drop` deleted (CountDroppedDeadLetters); nil when none ever.
	DeadLettersDropped map[string]int64 `yson:"dead_letters_dropped"`
	// FlowCoreTarget is @flow_core_target: the version of the binary (internal/corever) the
	// pipeline's controller and workers must run; "" (or unset) disables the check. Set by
	// deploy and set-flow-core-target (ChangeFlowCoreTarget).
	FlowCoreTarget string `yson:"flow_core_target"`
	// FlowCoreTargetVersion is @flow_core_target_version: it counts the target's changes.
	FlowCoreTargetVersion int64 `yson:"flow_core_target_version"`
	// LeaderFlowCoreVersion is @leader_flow_core_version, published by the leader: the
	// version of its own binary. "" when never published.
	LeaderFlowCoreVersion string `yson:"leader_flow_core_version"`
}

// PartitionCount is what the leader says of one keyed computation's partition count in
// @partitioning.
type PartitionCount struct {
	// Current is its number of active partitions; ByLoad is false when
	// desired_partition_count pins it.
	Current int  `yson:"partition_count"`
	ByLoad  bool `yson:"by_load"`
	// Optimal is the count its measured load needs (0 while not measured) and Driver what
	// decides it: a target (messages_per_second, bytes_per_second, cpu_load, timer_count,
	// memory_used), min_partition_count, max_partition_count or desired_partition_count.
	Optimal int    `yson:"optimal_partition_count"`
	Driver  string `yson:"driver"`
	// MessagesPerSecond, BytesPerSecond, CPULoad (cores) and Timers are the measured load of
	// its active partitions.
	MessagesPerSecond float64 `yson:"messages_per_second"`
	BytesPerSecond    float64 `yson:"bytes_per_second"`
	CPULoad           float64 `yson:"cpu_load"`
	Timers            float64 `yson:"timer_count"`
	// Reason says in words why the count is what it is, or why it does not change now.
	Reason string `yson:"reason"`
	// HeavyHitters are key hashes that alone carry more than one partition's share.
	HeavyHitters []uint64 `yson:"heavy_hitters,omitempty"`
}

// ThrottlerGrants are what the pipeline's distributed throttlers (dynamic_spec throttlers)
// granted, published by the leader controller.
type ThrottlerGrants struct {
	// Throttlers are the totals by throttler id.
	Throttlers map[string]ThrottlerTotals `yson:"throttlers"`
	// Jobs are the units granted in all to each job, by job id (a job draws from the one
	// throttler of its computation's input_rows_throttler_id).
	Jobs map[string]int64 `yson:"jobs"`
	// ByThrottler are the units granted in all by throttler id, then job id: what the jobs
	// asked for in job_status.throttle_requests (for the input rows throttler, Jobs as well).
	ByThrottler map[string]map[string]int64 `yson:"by_throttler,omitempty"`
}

// Granted is what throttler id granted job in all.
func (g *ThrottlerGrants) Granted(id, job string) int64 {
	if g == nil {
		return 0
	}
	return g.ByThrottler[id][job]
}

// ThrottlerTotals are one throttler's totals: the periods elapsed on the leaders' clocks
// while they ran it and the units granted meanwhile; Granted never exceeds Limit × Periods.
type ThrottlerTotals struct {
	Limit   float64 `yson:"limit"`
	Periods float64 `yson:"periods"`
	Granted int64   `yson:"granted"`
	// Pending are the units the jobs asked for that the last round could not grant.
	Pending int64 `yson:"pending"`
}

// Clone returns a deep copy whose maps are never nil.
func (g ThrottlerGrants) Clone() ThrottlerGrants {
	c := ThrottlerGrants{Throttlers: make(map[string]ThrottlerTotals, len(g.Throttlers)), Jobs: make(map[string]int64, len(g.Jobs))}
	for k, v := range g.Throttlers {
		c.Throttlers[k] = v
	}
	for k, v := range g.Jobs {
		c.Jobs[k] = v
	}
	c.ByThrottler = make(map[string]map[string]int64, len(g.ByThrottler))
	for id, jobs := range g.ByThrottler {
		m := make(map[string]int64, len(jobs))
		for k, v := range jobs {
			m[k] = v
		}
		c.ByThrottler[id] = m
	}
	return c
}

// EventWatermarks are the event watermarks (µs) of the pipeline's streams and alignment
// groups. A stream or group is absent until its watermark is known; math.MaxUint64 means
// nothing bounds it any more (its sources are exhausted and nothing is held upstream).
type EventWatermarks struct {
	// Streams is by stream id: source, input and output streams.
	Streams map[string]uint64 `yson:"streams"`
	// Groups is by watermark_alignment group_name: the smallest watermark of its sources.
	Groups map[string]uint64 `yson:"alignment_groups"`
}

// Clone returns a deep copy whose maps are never nil.
func (w EventWatermarks) Clone() EventWatermarks {
	c := EventWatermarks{Streams: make(map[string]uint64, len(w.Streams)), Groups: make(map[string]uint64, len(w.Groups))}
	for k, v := range w.Streams {
		c.Streams[k] = v
	}
	for k, v := range w.Groups {
		c.Groups[k] = v
	}
	return c
}

var attributeNames = []string{
	"pipeline_format_version", "spec", "dynamic_spec", "spec_version", "dynamic_spec_version",
	"target_state", "pipeline_state", "leader_controller_address", "system_watermark", "event_watermark",
	"event_watermarks", "throttler_grants", "partitioning", "dead_letters_dropped",
	"flow_core_target", "flow_core_target_version", "leader_flow_core_version",
}

// Attributes reads the pipeline attributes in one request. A pipeline that does
// not exist gives ErrNotFound.
func (s *Store) Attributes(ctx context.Context) (*Attributes, error) {
	var a Attributes
	err := s.yc.GetNode(ctx, s.path.Attrs(), &a, &yt.GetNodeOptions{Attributes: attributeNames})
	if err != nil {
		return nil, fmt.Errorf("ytstore: read attributes of %s: %w", s.path, classify(err))
	}
	return &a, nil
}

// SetSpecs stores the static and the dynamic spec (YSON map nodes) with their
// versions and the target state in one master transaction, so that a
// controller never sees a half-applied start. A nil spec leaves that spec and
// its version unchanged; an empty target leaves the target unchanged.
func (s *Store) SetSpecs(ctx context.Context, u SpecUpdate) error {
	tx, err := s.yc.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("ytstore: set specs of %s: begin: %w", s.path, classify(err))
	}
	defer func() { _ = tx.Abort() }()
	set := func(name string, v any) error {
		if err := tx.SetNode(ctx, s.path.Attr(name), v, nil); err != nil {
			return fmt.Errorf("ytstore: set %s/@%s: %w", s.path, name, classify(err))
		}
		return nil
	}
	if u.Spec != nil {
		if err := set("spec", u.Spec); err != nil {
			return err
		}
		if err := set("spec_version", u.SpecVersion); err != nil {
			return err
		}
	}
	if u.DynamicSpec != nil {
		if err := set("dynamic_spec", u.DynamicSpec); err != nil {
			return err
		}
		if err := set("dynamic_spec_version", u.DynamicSpecVersion); err != nil {
			return err
		}
	}
	if u.TargetState != "" {
		if err := set("target_state", u.TargetState); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("ytstore: set specs of %s: commit: %w", s.path, classifyCommit(err))
	}
	return nil
}

// SpecUpdate is what SetSpecs writes.
type SpecUpdate struct {
	Spec               yson.RawValue
	SpecVersion        int64
	DynamicSpec        yson.RawValue
	DynamicSpecVersion int64
	TargetState        string
}

// SetTargetState sets @target_state (one of Target*).
func (s *Store) SetTargetState(ctx context.Context, target string) error {
	switch target {
	case TargetWorking, TargetStopped, TargetPaused:
	default:
		return fmt.Errorf("ytstore: set target state of %s: unknown state %q", s.path, target)
	}
	if err := s.yc.SetNode(ctx, s.path.Attr("target_state"), target, nil); err != nil {
		return fmt.Errorf("ytstore: set %s/@target_state: %w", s.path, classify(err))
	}
	return nil
}

// SetControllerAttributes publishes @pipeline_state and
// @leader_controller_address on behalf of the leader: the write carries the
// leader's session as a prerequisite, so a deposed leader gets ErrLeaseLost
// and changes nothing. Empty values are not written.
func (s *Store) SetControllerAttributes(ctx context.Context, leader *Session, pipelineState, address string) error {
	opts := &yt.SetNodeOptions{PrerequisiteOptions: &yt.PrerequisiteOptions{TransactionIDs: []yt.TxID{leader.tx.ID()}}}
	if pipelineState != "" {
		if err := s.yc.SetNode(ctx, s.path.Attr("pipeline_state"), pipelineState, opts); err != nil {
			return fmt.Errorf("ytstore: set %s/@pipeline_state: %w", s.path, classify(err))
		}
	}
	if address != "" {
		if err := s.yc.SetNode(ctx, s.path.Attr("leader_controller_address"), address, opts); err != nil {
			return fmt.Errorf("ytstore: set %s/@leader_controller_address: %w", s.path, classify(err))
		}
	}
	return nil
}

// SetSystemWatermark publishes @system_watermark (µs) on behalf of the
// leader, with its session as a prerequisite: a deposed leader gets
// ErrLeaseLost and changes nothing.
func (s *Store) SetSystemWatermark(ctx context.Context, leader *Session, watermark uint64) error {
	opts := &yt.SetNodeOptions{PrerequisiteOptions: &yt.PrerequisiteOptions{TransactionIDs: []yt.TxID{leader.tx.ID()}}}
	if err := s.yc.SetNode(ctx, s.path.Attr("system_watermark"), watermark, opts); err != nil {
		return fmt.Errorf("ytstore: set %s/@system_watermark: %w", s.path, classify(err))
	}
	return nil
}

// SetEventWatermark publishes @event_watermark, conditional on the leader's session.
func (s *Store) SetEventWatermark(ctx context.Context, leader *Session, watermark uint64) error {
	opts := &yt.SetNodeOptions{PrerequisiteOptions: &yt.PrerequisiteOptions{TransactionIDs: []yt.TxID{leader.tx.ID()}}}
	if err := s.yc.SetNode(ctx, s.path.Attr("event_watermark"), watermark, opts); err != nil {
		return fmt.Errorf("ytstore: set %s/@event_watermark: %w", s.path, classify(err))
	}
	return nil
}

// SetEventWatermarks publishes @event_watermarks, conditional on the leader's session.
func (s *Store) SetEventWatermarks(ctx context.Context, leader *Session, w EventWatermarks) error {
	opts := &yt.SetNodeOptions{PrerequisiteOptions: &yt.PrerequisiteOptions{TransactionIDs: []yt.TxID{leader.tx.ID()}}}
	if err := s.yc.SetNode(ctx, s.path.Attr("event_watermarks"), w, opts); err != nil {
		return fmt.Errorf("ytstore: set %s/@event_watermarks: %w", s.path, classify(err))
	}
	return nil
}

// SetThrottlerGrants publishes @throttler_grants, conditional on the leader's session.
func (s *Store) SetThrottlerGrants(ctx context.Context, leader *Session, g ThrottlerGrants) error {
	opts := &yt.SetNodeOptions{PrerequisiteOptions: &yt.PrerequisiteOptions{TransactionIDs: []yt.TxID{leader.tx.ID()}}}
	if err := s.yc.SetNode(ctx, s.path.Attr("throttler_grants"), g, opts); err != nil {
		return fmt.Errorf("ytstore: set %s/@throttler_grants: %w", s.path, classify(err))
	}
	return nil
}

// SetPartitioning publishes @partitioning, conditional on the leader's session.
func (s *Store) SetPartitioning(ctx context.Context, leader *Session, p map[string]PartitionCount) error {
	opts := &yt.SetNodeOptions{PrerequisiteOptions: &yt.PrerequisiteOptions{TransactionIDs: []yt.TxID{leader.tx.ID()}}}
	if err := s.yc.SetNode(ctx, s.path.Attr("partitioning"), p, opts); err != nil {
		return fmt.Errorf("ytstore: set %s/@partitioning: %w", s.path, classify(err))
	}
	return nil
}

// SystemWatermark reads @system_watermark (µs; 0 when never published), the
// one attribute workers poll to fire system_time timers.
//
// It asks for the attribute by name in the pipeline's attribute map, so that a watermark not
// published yet (a new pipeline's jobs start before the leader's first publication) is
// simply absent, not a failed request the client would log as an error.
func (s *Store) SystemWatermark(ctx context.Context) (uint64, error) {
	var a struct {
		W uint64 `yson:"system_watermark"`
	}
	if err := s.yc.GetNode(ctx, s.path.Attrs(), &a, &yt.GetNodeOptions{Attributes: []string{"system_watermark"}}); err != nil {
		return 0, fmt.Errorf("ytstore: read %s/@system_watermark: %w", s.path, classify(err))
	}
	return a.W, nil
}
