package spec

import (
	"strings"
	"time"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/yson"
)

// Problem is one defect of a spec: Path is its slash-separated YSON path
// ("spec/computations/counter/sinks/out/parameters/queue_path"; "/" is the document itself).
type Problem = yson.Problem

// ValidationError lists every problem of a document, sorted by path.
type ValidationError struct {
	Problems []Problem
}

// Error returns all problems, one "path: message" per line.
func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Config is a runner config (pipeline.yson).
type Config struct {
	// Path is the pipeline's Cypress node (required).
	Path string
	// Proxy is the HTTP proxy address; with ClusterURL also empty the embedded server is used.
	Proxy string
	// ClusterURL is Flow's cluster name, optionally "cluster/role".
	ClusterURL string
	// ProxyRole selects a proxy role (optional).
	ProxyRole string
	// Clusters maps the cluster names of queue paths (<cluster=NAME>//path) to proxies: a
	// yt-flow extension of the runner config; nil when absent.
	Clusters map[string]string
	// Spec is the static spec (required, never nil after a successful parse).
	Spec *Pipeline
	// Dynamic is the dynamic spec; an absent dynamic_spec parses as empty (never nil).
	Dynamic *DynamicPipeline

	// Flow runner settings, accepted for compatibility and kept as written.
	AbortOnUnrecognizedOptions    bool
	AbortOnSpecsParseabilityError bool
	SetFlowCoreTarget             bool // default true
	// Vanilla, Logging, ClientsCache and DirectControllerCommands hold those blocks in
	// generic form; nil when absent.
	Vanilla                  map[string]any
	Logging                  map[string]any
	ClientsCache             map[string]any
	DirectControllerCommands map[string]any

	// Notes lists the keys of the whole document that yt-flow ignores and the features it
	// does not run yet (see Notes).
	Notes Notes
}

// Pipeline is the static spec.
type Pipeline struct {
	Computations map[string]*Computation
	Streams      map[string]*Stream
	// Resources maps resource id to its spec in generic form.
	Resources map[string]map[string]any

	ValidateBinaryVersion  bool
	BinaryVersion          string
	ValidateBinaryChecksum bool
	BinaryChecksum         string

	// Notes is set by ParsePipeline (for a runner config see Config.Notes).
	Notes Notes
}

// Stream is a registered output stream.
type Stream struct {
	ID     string
	Schema schema.Schema
	// ClassName and MigrationFunction are kept as written ("" when absent).
	ClassName         string
	MigrationFunction string
	// Derived is set for a stream the spec does not declare whose schema the parser derived:
	// the output of a passthrough computation has the schema of its input.
	Derived bool
}

// Kind is the canonical computation kind.
type Kind int

// Computation kinds.
const (
	// KindTransform: keyed, persisted outputs, timers, state, sinks.
	KindTransform Kind = iota + 1
	// KindSwiftMap: keyed, deterministic, outputs not persisted.
	KindSwiftMap
	// KindTransformSource: reads one ordered source, persisted outputs.
	KindTransformSource
	// KindSwiftSource: reads one ordered source, outputs not persisted.
	KindSwiftSource
)

// String returns the canonical short name of the kind.
func (k Kind) String() string {
	switch k {
	case KindTransform:
		return "transform"
	case KindSwiftMap:
		return "swift_map"
	case KindTransformSource:
		return "transform_source"
	case KindSwiftSource:
		return "swift_source"
	}
	return "unknown"
}

// Swift reports whether outputs of the kind are recomputed rather than persisted.
func (k Kind) Swift() bool { return k == KindSwiftMap || k == KindSwiftSource }

// Source reports whether the kind reads a source instead of input streams.
func (k Kind) Source() bool { return k == KindTransformSource || k == KindSwiftSource }

// ProcessingMode is the input deduplication mode of a transform computation.
type ProcessingMode string

// Processing modes.
const (
	ExactlyOnce           ProcessingMode = "exactly_once"
	AtLeastOnceConsistent ProcessingMode = "at_least_once_consistent"
)

// Computation is one computation of the static spec.
type Computation struct {
	ID string
	// ClassName is computation_class_name as written in the spec.
	ClassName string
	Kind      Kind
	// Passthrough classes have no processing_function; they forward inputs to outputs.
	Passthrough bool
	// PassthroughColumns maps each output stream of a passthrough computation whose schema
	// has fewer columns than its input to the columns it keeps, in its schema's order; the
	// runtime drops the others. Outputs with the input's columns are not listed.
	PassthroughColumns map[string][]string
	// Companion is set for Flow's companion classes (NYT::NFlow::NCompanion::…), which run
	// out-of-process functions in Flow and the in-process Go function here: they are the
	// native kinds, and without processing_function the function is the one registered
	// under the computation id (ProcessingFunctionDerived).
	Companion                 bool
	ProcessingFunctionDerived bool

	ProcessingFunction           string
	ProcessingFunctionParameters map[string]any
	// Parameters is the class parameters map as written (generic form).
	Parameters map[string]any
	// ProcessingMode is ExactlyOnce unless set (transform computations only).
	ProcessingMode ProcessingMode
	// AllowBatchingWithRelaxedGuarantees lets a swift map output have several parents.
	AllowBatchingWithRelaxedGuarantees bool
	// InternalStates lists parameters.internal_states.
	InternalStates []string

	// GroupBy is group_by_schema; columns may carry Expression (computed), e.g. farm_hash(word).
	GroupBy                         schema.Schema
	InputStreamIDs, OutputStreamIDs []string
	// Sources maps source stream id to its source.
	Sources map[string]*Source
	Sinks   map[string]*Sink
	// Timers maps timer stream id to its spec (timer_streams).
	Timers map[string]*Timer
	// StreamsDependency is streams_dependency as written; DependsOn applies the defaults.
	StreamsDependency            map[string][]string
	AllowTimerSelfDependency     bool
	UseCompactInputMessages      *bool
	ExperimentalEnableNonUintKey bool
	DistributionOrdering         string // "strict" (default) | "relaxed"
	WorkerGroup                  string
	// Watermark is the part of watermark_strategy the runtime interprets (nil when absent;
	// the whole block is also kept in WatermarkStrategy).
	Watermark *WatermarkStrategy
	// ExternalStates are the parsed external_state_managers, by state name ("/totals"); the
	// block as written is also kept in ExternalStateManagers.
	ExternalStates map[string]*ExternalState
	// StateJoinerSpecs are the parsed state_joiners, by name ("/counted"); the block as
	// written is also kept in StateJoiners.
	StateJoinerSpecs map[string]*StateJoiner

	// Blocks accepted as written and not interpreted by the core (generic form, nil when absent).
	KeyVisitorStreams map[string]any
	// KeyVisitors are the key_visitor_streams, by stream id (nil: none).
	KeyVisitors           map[string]*KeyVisitor
	WatermarkStrategy     map[string]any
	RequiredResourceIDs   map[string]any
	ExternalStateManagers map[string]any
	ExternalStateJoiners  map[string]any
	StateJoiners          map[string]any
	HeavyHitters          map[string]any
	// PivotFinder is pivot_finder: the key quantiles each partition keeps for partitioning
	// by load.
	PivotFinder PivotFinder
	// InputOrdering is input_ordering (nil: absent): the computation's function sees its
	// input streams' messages merged by stabilized event timestamp (docs/spec.md).
	InputOrdering *InputOrdering
}

// InputOrdering is a computation's input_ordering = {time_type = event_time; stream_delays =
// {<stream> = duration}}: messages of its input streams reach the function merged by
// stabilized event timestamp (event timestamp plus the stream's delay), each released once
// every input stream's event watermark plus its delay passed it; within a stream the arrival
// order stands.
type InputOrdering struct {
	// TimeType is time_type: event_time (default and only value).
	TimeType string
	// StreamDelays are stream_delays by input stream (default none: 0); a delayed stream's
	// messages are ordered as if that much later.
	StreamDelays map[string]time.Duration
}

// CompactDedup reports whether input deduplication uses compact_input_messages: an explicit
// use_compact_input_messages wins; otherwise it is chosen when the first group_by column is a
// uint64 hash and experimental_enable_non_uint_key is off.
func (c *Computation) CompactDedup() bool {
	if c.UseCompactInputMessages != nil {
		return *c.UseCompactInputMessages
	}
	if c.ExperimentalEnableNonUintKey || len(c.GroupBy.Columns) == 0 {
		return false
	}
	return c.GroupBy.Columns[0].Type == schema.TypeUint64
}

// DependsOn returns the streams an output or timer stream may derive from: the explicit
// streams_dependency entry, or Flow's default (a timer: all inputs and sources; an output: all
// timers, inputs and sources). Sorted; nil for unknown ids.
func (c *Computation) DependsOn(id string) []string {
	if deps, ok := c.StreamsDependency[id]; ok {
		return deps
	}
	_, isTimer := c.Timers[id]
	isOutput := false
	for _, o := range c.OutputStreamIDs {
		isOutput = isOutput || o == id
	}
	if !isTimer && !isOutput {
		return nil
	}
	deps := append([]string(nil), c.InputStreamIDs...)
	deps = append(deps, sortedKeys(c.Sources)...)
	if isOutput {
		deps = append(deps, sortedKeys(c.Timers)...)
	}
	return sortStrings(deps)
}

// Source is one source stream of a source computation.
type Source struct {
	ID        string
	ClassName string // as written
	// Class is the registered class (connectors/registry); nil when the name is unknown.
	Class *registry.Class
	// Parameters is the parameters map as written (generic form).
	Parameters map[string]any
	// Params are the typed parameters the class's parser returned (for a queue source a
	// *queue.SourceParams); nil when the class is unknown.
	Params any
}

// Finite tells whether the source completes at its end (its parameters' finite).
func (s *Source) Finite() bool {
	f, ok := s.Params.(registry.FiniteParams)
	return ok && f.IsFinite()
}

// Sink is one sink of a computation.
type Sink struct {
	ID, ClassName string
	// Class is the registered class (connectors/registry); nil when the name is unknown.
	Class          *registry.Class
	InputStreamIDs []string
	// Parameters is the parameters map as written (generic form).
	Parameters map[string]any
	// Params are the typed parameters the class's parser returned; nil when the class is
	// unknown.
	Params any
	// AtMostOnce is nil unless at_most_once_strategy is configured.
	AtMostOnce *AtMostOnceStrategy
}

// AtMostOnceStrategy replaces an async sink's outbox by a bounded in-memory queue that drops
// messages when full.
type AtMostOnceStrategy struct {
	Enabled                    bool
	TotalQueueBytesLimit       int64         // default 100 MiB
	SuspendDestructionDuration time.Duration // default 10s
}

// WatermarkStrategy is what the runtime interprets of a source computation's
// watermark_strategy: where its outputs' event timestamps come from and how far behind the
// largest one seen the computation's EventWatermark estimate stays, and the generator's
// idle- and late-data-partition rules, watermark_percentile and watermark_alignment. The
// other keys (the generator's unavailable_partition_groups and use_source_watermark) are
// accepted and noted as not supported yet (Notes). The controller applies the
// idle- and late-data-partition rules to each of the computation's source streams.
type WatermarkStrategy struct {
	// AssignerColumn, when set (event_timestamp_assigner.column), is the output payload
	// column holding the event time, in AssignerFormat units ("seconds" or "milliseconds").
	AssignerColumn string
	AssignerFormat string
	// LimitBySystemTimestamp caps an assigned event timestamp at the output's system one.
	LimitBySystemTimestamp bool
	// Generator is set when watermark_generator is present; OutOfOrderness is its
	// out_of_orderness_bound (default 1m). Without a generator the estimate is the largest
	// event timestamp seen.
	Generator      bool
	OutOfOrderness time.Duration
	// IdlePartitions is watermark_generator.idle_partitions when present: nil otherwise.
	IdlePartitions *IdlePartitions
	// LateDataPartitions is watermark_generator.late_data_partitions when present: nil
	// otherwise.
	LateDataPartitions *LateDataPartitions
	// Percentile is watermark_percentile when present: nil otherwise.
	Percentile *WatermarkPercentile
	// Alignment is watermark_alignment when present: nil otherwise.
	Alignment *WatermarkAlignment
}

// WatermarkAlignment keeps the computation's source jobs from reading further than
// DriftBound ahead of their alignment group's EventWatermark: the smallest watermark of the
// source streams of every source computation with the same GroupName. Groups are independent
// of each other.
type WatermarkAlignment struct {
	GroupName  string        // "default-alignment-group" by default
	DriftBound time.Duration // 20m by default
	// ReadDelays (read_delays) reads the named source streams that much behind the group:
	// a delayed stream counts in the group's watermark that much ahead, and its source is
	// held that much earlier (not negative; nil when absent).
	ReadDelays map[string]time.Duration
}

// WatermarkPercentile bounds a source job's EventWatermark by its in-flight outputs more
// loosely than their smallest event timestamp: max(the smallest, the Value-th percentile −
// Delay), so a few stragglers more than Delay behind the bulk do not hold it back.
type WatermarkPercentile struct {
	Value float64       // (0, 100], 100 by default
	Delay time.Duration // 1m by default
}

// LateDataPartitions lets the computation's EventWatermark pass partitions that lag far
// behind the others: over its jobs' bounds (idle ones left out first), the watermark is
// max(the smallest, the Percentile-th percentile − Delay), so a partition more than Delay
// behind the percentile no longer holds it back (its data becomes late data).
type LateDataPartitions struct {
	Percentile float64       // (0, 100], 100 by default: the most advanced partition
	Delay      time.Duration // 1m by default
}

// IdlePartitions is the idle-partition rule of a watermark generator: a job of the
// computation whose sources have given no row for Duration (and that holds no message) does
// not hold the pipeline EventWatermark back, as long as at most MaxRatio of the computation's
// jobs are left out that way (at least one always counts).
type IdlePartitions struct {
	Duration time.Duration // 1m by default
	MaxRatio float64       // (0, 1], 0.4 by default
}

// Timer is one timer stream of a computation.
type Timer struct {
	ID string
	// TimeType is event_time (default), system_time or current_time.
	TimeType                   string
	Streams                    []string
	StreamsWithDelays          map[string]time.Duration
	DeduplicateEqualTimestamps bool // default true
}

// DynamicPipeline is the dynamic spec.
type DynamicPipeline struct {
	TargetState  string
	Computations map[string]*DynamicComputation
	// Blocks accepted as written and not interpreted by the core (generic form).
	Resources  map[string]any
	Throttlers map[string]any
	// ThrottlerSpecs are the throttlers, by id (dynamic_spec/throttlers).
	ThrottlerSpecs             map[string]*Throttler
	JobManager                 map[string]any
	JobTracker                 map[string]any
	MessageDistributor         map[string]any
	ControllerConnector        map[string]any
	Singletons                 map[string]any
	EnableMermaidGraphDescribe bool
	FlowViewCacheCodec         string

	// Notes is set by ParseDynamic (for a runner config see Config.Notes).
	Notes Notes
}

// KeyVisitor is one key visitor stream of a computation (key_visitor_streams): a background
// scan that visits every key of the computation that has state, once per pass (period).
type KeyVisitor struct {
	ID string
	// Names are the states whose keys are visited (empty: every state of the computation).
	Names []string
	// ExternalNames are external states (external_state_managers or joiners) whose tables'
	// row keys are visited too; BucketCount (8) and UpstreamStreams are accepted as Flow's.
	ExternalNames   []string
	BucketCount     int
	UpstreamStreams []string
}

// Throttler is one distributed throttler (dynamic_spec/throttlers/<id>): a token bucket on the
// controller that the jobs of the computations naming it draw from.
type Throttler struct {
	// Limit is the units per Period (10s); 0: unlimited.
	Limit          float64
	Period         time.Duration
	RequestPeriod  time.Duration // 5s (accepted; jobs ask at each status report)
	RPCTimeout     time.Duration // 30s (accepted)
	MaxGrantAmount int64         // 0: no cap on one grant
	// Classes are the weights by class id; "default" has weight 1.
	Classes map[string]float64
}

// DynamicKeyVisitor is the dynamic part of a key visitor stream (dynamic_spec/computations/<id>/
// key_visitor_streams/<stream>/parameters); unset keys carry Flow's defaults.
type DynamicKeyVisitor struct {
	Period                   time.Duration // 1d; a pass over the keys per period
	BufferRowLimit           int           // 5000; at most this many visits per epoch
	MaxScanRowsPerIteration  int           // 10000; at most this many state rows read per scan
	BackgroundFillPeriod     time.Duration // 500ms (accepted)
	CatchupLagThreshold      time.Duration // 1m (accepted)
	CatchupSpeedupMultiplier float64       // 1.2 (accepted)
}

// DefaultDynamicKeyVisitor is a key visitor stream's dynamic part when the spec sets none.
func DefaultDynamicKeyVisitor() DynamicKeyVisitor {
	return DynamicKeyVisitor{Period: 24 * time.Hour, BufferRowLimit: 5000, MaxScanRowsPerIteration: 10000,
		BackgroundFillPeriod: 500 * time.Millisecond, CatchupLagThreshold: time.Minute, CatchupSpeedupMultiplier: 1.2}
}

// DynamicComputation holds one computation's dynamic settings; unset keys carry Flow's defaults.
type DynamicComputation struct {
	BatchDuration         time.Duration // 1s
	MaxRowsPerBatch       int           // 1000
	MaxBytesPerBatch      int64         // 10 MiB
	EmptyBatchBackoff     time.Duration // 250ms, at least 100ms
	LeaseCheckPeriod      time.Duration // 1m
	DesiredPartitionCount int           // parameters.desired_partition_count; 0 = unset: a keyed computation is partitioned by load (Partitioning)
	MinPartitionCount     int           // 0 = unset (3 for partitioning by load)
	MaxPartitionCount     int           // 0 = unset (20000 for partitioning by load)
	// Partitioning holds the other partitioning parameters (parameters.*), with Flow's defaults.
	Partitioning             Partitioning
	MaxReadWindow            time.Duration // sources; 10m
	Draining                 bool
	BlockedTimeWindow        time.Duration // 10m
	SkipIfExpression         string
	TimerStoreCountLimit     int64 // 250K
	TimerStoreByteSizeLimit  int64 // 100 MiB
	OutputStoreCountLimit    int64 // 1G
	OutputStoreByteSizeLimit int64 // 100 GiB
	// Parameters is the dynamic parameters map as written (generic form).
	Parameters                   map[string]any
	ProcessingFunctionParameters map[string]any
	// SourceStreams and Sinks hold per-entity dynamic blocks.
	SourceStreams map[string]*DynamicSource
	Sinks         map[string]*DynamicSink
	// InputRowsThrottlerID names the throttler (of DynamicPipeline.ThrottlerSpecs) the
	// computation's input rows draw from, in class InputRowsThrottlerClassID ("": default).
	InputRowsThrottlerID, InputRowsThrottlerClassID string
	// InputBytesThrottlerID names the throttler the computation's input bytes (the encoded
	// size of each input message and source row) draw from, in class
	// InputBytesThrottlerClassID ("": default).
	InputBytesThrottlerID, InputBytesThrottlerClassID string
	// KeyVisitorStreams are the dynamic parts of the key visitor streams, by stream id (a
	// stream without one runs with DefaultDynamicKeyVisitor).
	KeyVisitorStreams map[string]*DynamicKeyVisitor
	// FailurePolicy is what the runtime does with messages the process function keeps
	// failing on (failure_policy, a yt-flow extension); the zero value retries for ever.
	FailurePolicy FailurePolicy
	// StateJoiners and ExternalStateJoiners are the dynamic caches of the computation's
	// state_joiners ("/name" → {cache{ttl}}) and external_state_joiners ("/name" →
	// {parameters{cache{ttl}}}), by name; a joiner without one reads every epoch.
	StateJoiners, ExternalStateJoiners map[string]JoinerCache
}

// Failure policy modes (FailurePolicy.Mode).
const (
	// FailureRetry retries a failing epoch with backoff for ever (the default).
	FailureRetry = "retry"
	// FailureDeadLetter sets the failing messages aside in the pipeline's dead_letters table,
	// in the epoch transaction that acknowledges them, after MaxAttempts failed attempts.
	FailureDeadLetter = "dead_letter"
	// FailureSkip drops the failing messages after MaxAttempts failed attempts (counted).
	FailureSkip = "skip"
)

// FailurePolicy is a computation's failure_policy (a yt-flow extension of the dynamic spec).
type FailurePolicy struct {
	// Mode is FailureRetry (default, also for ""), FailureDeadLetter or FailureSkip.
	Mode string
	// MaxAttempts is how many failed attempts of an epoch precede isolating its failing
	// messages (dead_letter, skip); default 3, from 1 to 1000; not set with retry.
	MaxAttempts int
}

// DynamicSource holds a source stream's dynamic settings.
type DynamicSource struct {
	Parameters map[string]any
	Draining   bool
}

// DynamicSink holds a sink's dynamic settings.
type DynamicSink struct {
	Parameters map[string]any
	// AtMostOnce holds the dynamic parameters.at_most_once_strategy limits; nil when absent.
	// Only TotalQueueBytesLimit and SuspendDestructionDuration are read; zero = not set (the
	// static strategy or its defaults apply).
	AtMostOnce *AtMostOnceStrategy
}

// DefaultDynamicComputation returns the dynamic settings of a computation with nothing set.
func DefaultDynamicComputation() DynamicComputation {
	return DynamicComputation{
		BatchDuration:            time.Second,
		MaxRowsPerBatch:          1000,
		MaxBytesPerBatch:         10 << 20,
		EmptyBatchBackoff:        250 * time.Millisecond,
		LeaseCheckPeriod:         time.Minute,
		MaxReadWindow:            10 * time.Minute,
		BlockedTimeWindow:        10 * time.Minute,
		TimerStoreCountLimit:     250_000,
		TimerStoreByteSizeLimit:  100 << 20,
		OutputStoreCountLimit:    1_000_000_000,
		OutputStoreByteSizeLimit: 100 << 30,
		Partitioning:             DefaultPartitioning(),
	}
}

// PivotFinder is pivot_finder{part_count=16 (1..1024), window_size=16384 (1..2^24)}: a
// partition reports part_count quantiles of the key hashes of its last window_size messages.
type PivotFinder struct {
	PartCount, WindowSize int
}

// Partitioning are a computation's partitioning parameters besides the desired, min and max
// counts (flow-docs §2.4, §3.6). They drive the partition count of a keyed computation
// without desired_partition_count.
type Partitioning struct {
	WeightMultiplier             float64 // weight_multiplier, 1.0; > 0
	InterruptingWeightMultiplier float64 // interrupting_weight_multiplier, 0.1; >= 0
	SinkChannelMultiplier        float64 // sink_channel_multiplier, 3; > 0
	// Targets per partition: desired_average_partition_cpu_load (cores, 0.1),
	// _memory_used (bytes, 300 MB), _messages_per_second (10000), _bytes_per_second (2 MB)
	// and _timer_count (50000); each > 0.
	CPULoad, MemoryUsed, MessagesPerSecond, BytesPerSecond, TimerCount float64
	// Deviation is allowed_partition_count_deviation, 1.1; 1.01–100.
	Deviation float64
	// DoubleDelay and HalfDelay are partition_count_double_delay (20m) and
	// partition_count_half_delay (200m); each > 0.
	DoubleDelay, HalfDelay time.Duration
}

// DefaultPartitioning returns Flow's partitioning defaults.
func DefaultPartitioning() Partitioning {
	return Partitioning{
		WeightMultiplier: 1, InterruptingWeightMultiplier: 0.1, SinkChannelMultiplier: 3,
		CPULoad: 0.1, MemoryUsed: 300e6, MessagesPerSecond: 10000, BytesPerSecond: 2e6, TimerCount: 50000,
		Deviation: 1.1, DoubleDelay: 20 * time.Minute, HalfDelay: 200 * time.Minute,
	}
}

// Computation returns the dynamic settings of computation id with all defaults applied, also
// when the spec does not mention it (or d is nil).
func (d *DynamicPipeline) Computation(id string) DynamicComputation {
	if d != nil {
		if c, ok := d.Computations[id]; ok && c != nil {
			return *c
		}
	}
	return DefaultDynamicComputation()
}
