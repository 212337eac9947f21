package monitoring

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ytflow/yt-flow/controller"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytstore"
)

// Controller collects the metrics of a controller from the last scheduling cycle it led
// (controller.Snapshot): pipeline state, spec versions, workers, partitions, job statuses,
// watermarks and lags. Create it with NewController and pass its Observe as
// controller.Config.Observe.
type Controller struct {
	now  func() time.Time
	last atomic.Pointer[controller.Snapshot]

	// backlog, when set, reads the unread rows of the source streams (SetBacklog); bmu
	// guards its last result, read at most every backlogPeriod.
	backlog       Backlog
	backlogPeriod time.Duration
	bmu           sync.Mutex
	backlogAt     time.Time
	backlogLast   map[string]int64

	// mu guards the parsed spec, cached by version: the output streams of each computation.
	mu          sync.Mutex
	specVersion int64
	streams     map[string][]string // computation id -> output stream ids
}

// NewController returns a collector with nothing observed yet; now is the clock the lags
// are measured by (nil: time.Now).
func NewController(now func() time.Time) *Controller {
	if now == nil {
		now = time.Now
	}
	return &Controller{now: now}
}

// Backlog returns, by source stream id, the rows of the pipeline's source streams not read
// yet (committed source offsets to the end of each partition); a stream it cannot tell is
// left out. It does I/O; ctx bounds it.
type Backlog func(ctx context.Context, a *ytstore.Attributes, partitions []ytstore.Partition) map[string]int64

// backlogTimeout bounds one Backlog call of a scrape.
const backlogTimeout = 5 * time.Second

// SetBacklog makes the collector report the count lag of source streams, read with b at
// most once per period (a scrape in between reports the last values). Call it before the
// collector is registered.
func (c *Controller) SetBacklog(b Backlog, period time.Duration) {
	c.backlog, c.backlogPeriod = b, period
}

// sourceBacklog returns the backlog of the snapshot's source streams: the last result when
// it is younger than backlogPeriod, else a new one (nil without a Backlog).
func (c *Controller) sourceBacklog(s *controller.Snapshot, now time.Time) map[string]int64 {
	if c.backlog == nil {
		return nil
	}
	c.bmu.Lock()
	defer c.bmu.Unlock()
	if c.backlogLast != nil && now.Sub(c.backlogAt) < c.backlogPeriod {
		return c.backlogLast
	}
	ctx, cancel := context.WithTimeout(context.Background(), backlogTimeout)
	defer cancel()
	a := s.Attributes
	c.backlogLast, c.backlogAt = c.backlog(ctx, &a, s.Input.Partitions), now
	if c.backlogLast == nil {
		c.backlogLast = map[string]int64{}
	}
	return c.backlogLast
}

// Observe records a cycle; it is controller.Config.Observe and returns at once.
func (c *Controller) Observe(s *controller.Snapshot) { c.last.Store(s) }

// UnitedStream is the pseudo-stream of the whole pipeline, UnitedSourceStream that of all
// its source streams, as Flow names them.
const (
	UnitedStream       = "__united__"
	UnitedSourceStream = "__united_source__"
)

// pipelineStates are the values of yt_flow_pipeline_state's state label, in Flow's order.
var pipelineStates = []string{ytstore.StateWorking, ytstore.StateDraining, ytstore.StatePausing, ytstore.StatePaused, ytstore.StateStopped, ytstore.StateCompleted}

// partitionStates and jobStatuses are the values the partition and job counts report (0
// included); JobStarting is a job of the layout with no status row yet.
var (
	partitionStates = []string{ytstore.PartitionActive, ytstore.PartitionDraining, ytstore.PartitionCompleted}
	jobStatuses     = []string{JobStarting, ytstore.JobRunning, ytstore.JobFailed, ytstore.JobCompleted}
)

// JobStarting is the status label of a job that has written no status yet.
const JobStarting = "starting"

var (
	descLeader = prometheus.NewDesc("yt_flow_controller_leader",
		"1 while this controller is the pipeline's leader, else 0; the other controller metrics come from the leader only.", nil, nil)
	descPipelineState = prometheus.NewDesc("yt_flow_pipeline_state",
		"1 for the pipeline's current state (@pipeline_state), 0 for the others.", []string{"state"}, nil)
	descSpecVersion = prometheus.NewDesc("yt_flow_spec_version",
		"@spec_version of the pipeline.", nil, nil)
	descDeadLettersDropped = prometheus.NewDesc("yt_flow_dead_letters_dropped_total",
		"Dead letters `yt-flow dead-letters drop` deleted (the pipeline's @dead_letters_dropped).", []string{"computation_id"}, nil)
	descThrottlerGranted = prometheus.NewDesc("yt_flow_throttler_granted_total",
		"Units a distributed throttler granted in all, over leaders (@throttler_grants; Flow's throttler value); at most its limit × yt_flow_throttler_periods_total.", []string{"throttler_id"}, nil)
	descThrottlerPeriods = prometheus.NewDesc("yt_flow_throttler_periods_total",
		"Periods a distributed throttler's bucket ran, on the leaders' clocks (@throttler_grants).", []string{"throttler_id"}, nil)
	descThrottlerPending = prometheus.NewDesc("yt_flow_throttler_pending_units",
		"Units the jobs asked a distributed throttler for that its last round could not grant (Flow's throttler queue_size).", []string{"throttler_id"}, nil)
	descDynSpecVersion = prometheus.NewDesc("yt_flow_dynamic_spec_version",
		"@dynamic_spec_version of the pipeline.", nil, nil)
	descCurrentEpoch = prometheus.NewDesc("yt_flow_current_epoch",
		"Scheduling cycles the leader completed in its current leadership term.", nil, nil)
	descComputationCount = prometheus.NewDesc("yt_flow_computation_count",
		"Computations of the pipeline's spec.", nil, nil)
	descWorkerCount = prometheus.NewDesc("yt_flow_worker_count",
		"Registered workers, by whether their session is alive.", []string{"state"}, nil)
	descVersionMismatch = prometheus.NewDesc("yt_flow_version_mismatch_worker_count",
		"Live workers that get no jobs because their flow core version is not the pipeline's flow core target (Flow's version_mismatch_worker_count).", nil, nil)
	descPartitionCount = prometheus.NewDesc("yt_flow_partition_count",
		"Partitions of each computation, by state (active, draining, completed).", []string{"computation_id", "state"}, nil)
	descJobStatus = prometheus.NewDesc("yt_flow_job_status",
		"Jobs of the layout by the state of their job_status row (starting: none yet).", []string{"computation_id", "status"}, nil)
	descInputLag = prometheus.NewDesc("yt_flow_computation_input_lag",
		"Inputs buffered by the computation's jobs, as their statuses report (input_lag).", []string{"computation_id"}, nil)
	descInFlight = prometheus.NewDesc("yt_flow_computation_in_flight",
		"Messages the computation's jobs hold (in_flight): buffered inputs and outputs not yet acknowledged or delivered.", []string{"computation_id"}, nil)
	descSystemWatermark = prometheus.NewDesc("yt_flow_system_watermark_seconds",
		"@system_watermark as Unix time.", nil, nil)
	descEventWatermark = prometheus.NewDesc("yt_flow_event_watermark_seconds",
		"@event_watermark as Unix time (absent before a source read anything and once every source is exhausted).", nil, nil)
	descTimeLag = prometheus.NewDesc("yt_flow_stream_time_lag_seconds",
		"Age of the oldest message of the stream not yet persisted downstream (its producer's smallest system watermark); __united__: of the pipeline's SystemWatermark.", []string{"stream_id"}, nil)
	descEventTimeLag = prometheus.NewDesc("yt_flow_stream_event_time_lag_seconds",
		"Now minus the pipeline's EventWatermark (__united__ only; 0 once every source is exhausted).", []string{"stream_id"}, nil)
	descCountLag = prometheus.NewDesc("yt_flow_stream_count_lag",
		"Messages of the stream produced and not yet acknowledged by its consumers or sinks; of a source stream: rows not read yet; __united__: all messages the jobs hold; __united_source__: the source streams' sum.", []string{"stream_id"}, nil)

	descOptimalPartitions = prometheus.NewDesc("yt_flow_optimal_partition_count",
		"The partition count a keyed computation's measured load needs (0 while not every partition is measured), labelled with what decides it: a target (messages_per_second, bytes_per_second, cpu_load, timer_count, memory_used), min_partition_count, max_partition_count or desired_partition_count.", []string{"computation_id", "driver"}, nil)
	descComputationLoad = prometheus.NewDesc("yt_flow_computation_load",
		"Measured load of a keyed computation's active partitions, as partitioning by load sees it: messages_per_second, bytes_per_second, cpu_load (cores of busy time), timer_count.", []string{"computation_id", "measure"}, nil)

	controllerDescs = []*prometheus.Desc{descLeader, descPipelineState, descSpecVersion, descDynSpecVersion, descDeadLettersDropped, descThrottlerGranted, descThrottlerPeriods, descThrottlerPending, descCurrentEpoch,
		descComputationCount, descWorkerCount, descVersionMismatch, descPartitionCount, descOptimalPartitions, descComputationLoad, descJobStatus, descInputLag, descInFlight,
		descSystemWatermark, descEventWatermark, descTimeLag, descEventTimeLag, descCountLag}
)

// Describe implements prometheus.Collector.
func (c *Controller) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range controllerDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector: it reports the last observed cycle.
func (c *Controller) Collect(ch chan<- prometheus.Metric) {
	s := c.last.Load()
	if s == nil || !s.Leading || s.Input == nil {
		ch <- prometheus.MustNewConstMetric(descLeader, prometheus.GaugeValue, 0)
		return
	}
	for _, m := range c.metrics(s, c.now()) {
		ch <- m
	}
}

// computationView aggregates the jobs of one computation in a snapshot.
type computationView struct {
	partitions map[string]int
	jobs       map[string]int
	inputLag   int64
	inFlight   int64
	// watermark is the smallest system_watermark the jobs report (0: they hold nothing).
	watermark uint64
}

// metrics computes the metrics of snapshot s at time now.
func (c *Controller) metrics(s *controller.Snapshot, now time.Time) []prometheus.Metric {
	var out []prometheus.Metric
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		out = append(out, prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...))
	}
	in, a := s.Input, s.Attributes
	gauge(descLeader, 1)
	for _, st := range pipelineStates {
		v := 0.0
		if a.PipelineState == st {
			v = 1
		}
		gauge(descPipelineState, v, st)
	}
	gauge(descSpecVersion, float64(a.SpecVersion))
	gauge(descDynSpecVersion, float64(a.DynamicSpecVersion))
	for _, comp := range sortedKeys(a.DeadLettersDropped) {
		out = append(out, prometheus.MustNewConstMetric(descDeadLettersDropped, prometheus.CounterValue, float64(a.DeadLettersDropped[comp]), comp))
	}
	if g := a.ThrottlerGrants; g != nil {
		for _, id := range sortedKeys(g.Throttlers) {
			tot := g.Throttlers[id]
			out = append(out, prometheus.MustNewConstMetric(descThrottlerGranted, prometheus.CounterValue, float64(tot.Granted), id),
				prometheus.MustNewConstMetric(descThrottlerPeriods, prometheus.CounterValue, tot.Periods, id))
			gauge(descThrottlerPending, float64(tot.Pending), id)
		}
	}
	gauge(descCurrentEpoch, float64(s.Cycle))
	gauge(descComputationCount, float64(len(in.Topology.Computations)))
	alive, mismatched := 0, 0
	for _, w := range in.Workers {
		if in.WorkerAlive[w.WorkerID] {
			alive++
			if in.FlowCoreTarget != "" && w.FlowCoreVersion != in.FlowCoreTarget {
				mismatched++
			}
		}
	}
	gauge(descVersionMismatch, float64(mismatched))
	gauge(descWorkerCount, float64(alive), "alive")
	gauge(descWorkerCount, float64(len(in.Workers)-alive), "dead")

	views := map[string]*computationView{}
	view := func(id string) *computationView {
		v := views[id]
		if v == nil {
			v = &computationView{partitions: map[string]int{}, jobs: map[string]int{}}
			views[id] = v
		}
		return v
	}
	for _, comp := range in.Topology.Computations {
		view(comp.ID)
	}
	for _, p := range in.Partitions {
		view(p.ComputationID).partitions[p.State]++
	}
	statuses := make(map[string]ytstore.JobStatus, len(in.Statuses))
	for _, st := range in.Statuses {
		statuses[st.JobID] = st
	}
	var united int64
	for _, j := range in.Jobs {
		v := view(j.ComputationID)
		st, ok := statuses[j.JobID]
		if !ok {
			v.jobs[JobStarting]++
			continue
		}
		v.jobs[st.State]++
		v.inputLag += st.InputLag
		v.inFlight += st.InFlight
		united += st.InFlight
		if st.SystemWatermark != 0 && (v.watermark == 0 || st.SystemWatermark < v.watermark) {
			v.watermark = st.SystemWatermark
		}
	}
	nowUs := uint64(now.UnixMicro())
	lag := func(ts uint64) float64 {
		if ts == 0 || ts >= nowUs {
			return 0
		}
		return (time.Duration(nowUs-ts) * time.Microsecond).Seconds()
	}
	streams := c.outputStreams(a)
	emitted := map[string]bool{UnitedStream: true, UnitedSourceStream: true}
	for _, id := range sortedKeys(views) {
		v := views[id]
		for _, st := range partitionStates {
			gauge(descPartitionCount, float64(v.partitions[st]), id, st)
		}
		for _, st := range jobStatuses {
			gauge(descJobStatus, float64(v.jobs[st]), id, st)
		}
		gauge(descInputLag, float64(v.inputLag), id)
		gauge(descInFlight, float64(v.inFlight), id)
		for _, sid := range streams[id] {
			if emitted[sid] {
				continue
			}
			emitted[sid] = true
			gauge(descTimeLag, lag(v.watermark), sid)
			gauge(descCountLag, float64(max(v.inFlight-v.inputLag, 0)), sid)
		}
	}
	for _, pc := range s.Partitioning {
		gauge(descOptimalPartitions, float64(pc.Optimal), pc.Computation, pc.Driver)
		if pc.ByLoad {
			gauge(descComputationLoad, pc.Load.Messages, pc.Computation, "messages_per_second")
			gauge(descComputationLoad, pc.Load.Bytes, pc.Computation, "bytes_per_second")
			gauge(descComputationLoad, pc.Load.CPU, pc.Computation, "cpu_load")
			gauge(descComputationLoad, pc.Load.Timers, pc.Computation, "timer_count")
		}
	}
	if backlog := c.sourceBacklog(s, now); len(backlog) > 0 {
		var total int64
		for _, sid := range sortedKeys(backlog) {
			total += backlog[sid]
			if !emitted[sid] {
				emitted[sid] = true
				gauge(descCountLag, float64(backlog[sid]), sid)
			}
		}
		gauge(descCountLag, float64(total), UnitedSourceStream)
	}
	if a.SystemWatermark != 0 {
		gauge(descSystemWatermark, float64(a.SystemWatermark)/1e6)
		gauge(descTimeLag, lag(a.SystemWatermark), UnitedStream)
	}
	gauge(descCountLag, float64(united), UnitedStream)
	if e := a.EventWatermark; e != nil {
		switch {
		case *e == math.MaxUint64:
			gauge(descEventTimeLag, 0, UnitedStream)
		case *e > 1:
			gauge(descEventWatermark, float64(*e)/1e6)
			gauge(descEventTimeLag, lag(*e), UnitedStream)
		}
	}
	return out
}

// outputStreams returns the output stream ids of each computation of the spec in a,
// parsed once per spec version (none when the spec does not parse).
func (c *Controller) outputStreams(a ytstore.Attributes) map[string][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.streams != nil && c.specVersion == a.SpecVersion {
		return c.streams
	}
	c.specVersion, c.streams = a.SpecVersion, map[string][]string{}
	if len(a.Spec) == 0 {
		return c.streams
	}
	p, err := spec.ParsePipeline(a.Spec)
	if err != nil {
		return c.streams
	}
	for id, comp := range p.Computations {
		c.streams[id] = append([]string(nil), comp.OutputStreamIDs...)
	}
	return c.streams
}
