package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"go.ytsaurus.tech/library/go/core/log"
	"go.ytsaurus.tech/library/go/core/log/nop"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/internal/corever"
	"github.com/ytflow/yt-flow/ytstore"
)

// Config configures Run. The zero value of every field but Proxy and Path is
// a usable default.
type Config struct {
	// Proxy is the YTsaurus HTTP proxy. Required.
	Proxy string
	// Token authenticates to the proxy; empty = none. Never logged.
	Token string
	// Path is the pipeline node. Required.
	Path string
	// Logger gets structured logs; nil discards them.
	Logger log.Structured
	// Address is published in @leader_controller_address while this instance
	// leads. Default: the host name and process id.
	Address string
	// FlowCoreVersion is the version of this controller's binary (internal/corever),
	// published in @leader_flow_core_version while it leads. When the pipeline's
	// @flow_core_target is set and differs, the controller pauses the pipeline. Default ""
	// (no version: any set target differs).
	FlowCoreVersion string
	// Period between scheduling cycles. Default 500ms.
	Period time.Duration
	// SessionTimeout is the timeout of the controller's session, which holds
	// the leader lock: a leader that stops pinging loses the lock after it.
	// Default 5s.
	SessionTimeout time.Duration
	// LeaseTimeout is the timeout of job leases; the leader pings them every
	// cycle, so it only matters when no leader runs. Default 30s; must exceed
	// SessionTimeout + RetryPeriod so that leases survive a leader change.
	LeaseTimeout time.Duration
	// RetryPeriod is how often a standby retries the leader lock. Default 1s.
	RetryPeriod time.Duration
	// DedupGCMargin is how far below the SystemWatermark dedup rows are kept:
	// rows of input_messages and compact_input_messages with a system
	// timestamp below watermark - margin are deleted. The watermark alone is
	// exact (a job reports the oldest message it holds until its output store
	// row is deleted, and stamps its outputs no earlier than the watermark it
	// started under); the margin is defence in depth against a worker clock
	// stepping between a status and an epoch. Default 5s (Flow keeps none);
	// the dedup index holds about rate × margin rows more.
	DedupGCMargin time.Duration
	// DedupGCBatch bounds the rows deleted from each dedup table per
	// scheduling cycle. Default 10000.
	DedupGCBatch int
	// DedupGCPeriod is the least time between two dedup collections (each
	// scans the dedup tables), unless the previous one stopped at its batch
	// limit. Default 5s. Tables with the watermark row merger get their
	// watermark at least every dedupMergePeriod (1s) instead: no scan.
	DedupGCPeriod time.Duration
	// WorkerSettle is how long the first assignment of a pipeline waits for more workers
	// after one appeared that the leader's first cycle did not see (at most five times as
	// long in all; see Scheduler). Default 1s; negative: no wait.
	WorkerSettle time.Duration
	// ProbePeriod is how often the leader connects to every live worker's transport
	// endpoint. A worker whose endpoint refused ProbeRefusals attempts in a row, after it
	// had accepted one, is dead (its process is gone: the host refuses the port): the leader
	// aborts its session and reassigns its jobs at once, their leases aborted first, instead
	// of waiting for the session to time out (job.Config.SessionTimeout, 10s). A frozen
	// process still gets its connections accepted; it is found by its session timeout.
	// Default 100ms; negative: no probing (only session timeouts).
	ProbePeriod time.Duration
	// ProbeRefusals is how many refused attempts in a row declare a worker dead. Default 3.
	ProbeRefusals int
	// Observe, when set, is called after every scheduling cycle that completed with what
	// the cycle saw and published, and with a Snapshot whose Leading is false when this
	// instance stops leading. It is called on the controller's goroutine and must return at
	// once; the Snapshot is never changed after the call (metrics read it at scrape time).
	Observe func(*Snapshot)
}

// Snapshot is one scheduling cycle of the leader as Config.Observe sees it.
type Snapshot struct {
	// Leading is false in the Snapshot that ends a leadership term (then nothing else is
	// set).
	Leading bool
	// Cycle counts the completed scheduling cycles of this leadership term, from 1.
	Cycle int64
	// Input is what the cycle observed: workers, partitions, jobs, statuses, topology.
	Input *Input
	// Attributes are the pipeline's attributes as the cycle left them: PipelineState,
	// SystemWatermark and EventWatermark are the values it published.
	Attributes ytstore.Attributes
	// Partitioning says, per keyed computation, its partition count and why.
	Partitioning []PartitionCount
}

// dedupMergePeriod bounds the time between two publications of the dedup watermark to tables
// with the watermark row merger.
const dedupMergePeriod = time.Second

func (c Config) withDefaults() Config {
	c.Period = cmp.Or(c.Period, 500*time.Millisecond)
	c.SessionTimeout = cmp.Or(c.SessionTimeout, 5*time.Second)
	c.LeaseTimeout = cmp.Or(c.LeaseTimeout, 30*time.Second)
	c.RetryPeriod = cmp.Or(c.RetryPeriod, time.Second)
	c.DedupGCMargin = cmp.Or(c.DedupGCMargin, 5*time.Second)
	c.DedupGCBatch = cmp.Or(c.DedupGCBatch, 10000)
	c.DedupGCPeriod = cmp.Or(c.DedupGCPeriod, 5*time.Second)
	c.ProbePeriod = cmp.Or(c.ProbePeriod, 100*time.Millisecond)
	c.ProbeRefusals = cmp.Or(c.ProbeRefusals, DefaultProbeRefusals)
	if c.Logger == nil {
		c.Logger = (&nop.Logger{}).Structured()
	}
	if c.Address == "" {
		host, _ := os.Hostname()
		c.Address = fmt.Sprintf("%s/pid:%d", cmp.Or(host, "localhost"), os.Getpid())
	}
	return c
}

// settleMicros is Config.WorkerSettle as Scheduler.Settle.
func settleMicros(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return d.Microseconds()
}

// errNotLeader means another controller holds the leader lock.
var errNotLeader = errors.New("another controller is the leader")

// Run runs a controller until ctx ends: it competes for leadership, and while
// it leads, schedules every Period. It returns nil when ctx is cancelled and
// an error only for a bad Config or a failure to connect.
func Run(ctx context.Context, cfg Config) error {
	cfg = cfg.withDefaults()
	if cfg.Proxy == "" || cfg.Path == "" {
		return errors.New("controller: proxy and path are required")
	}
	if cfg.DedupGCMargin < 0 || cfg.DedupGCBatch < 0 || cfg.DedupGCPeriod < 0 {
		return fmt.Errorf("controller: dedup gc margin %v, batch %d and period %v must not be negative", cfg.DedupGCMargin, cfg.DedupGCBatch, cfg.DedupGCPeriod)
	}
	if cfg.ProbeRefusals < 0 {
		return fmt.Errorf("controller: probe refusals %d must not be negative", cfg.ProbeRefusals)
	}
	if cfg.LeaseTimeout <= cfg.SessionTimeout {
		return fmt.Errorf("controller: lease timeout %v must exceed session timeout %v", cfg.LeaseTimeout, cfg.SessionTimeout)
	}
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: cfg.Proxy, Token: cfg.Token, Path: cfg.Path, Logger: cfg.Logger})
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	defer st.Close()
	lg := log.With(cfg.Logger.Logger(), log.String("pipeline", cfg.Path)).Structured()
	lastErr := ""
	for {
		err := lead(ctx, st, cfg, lg)
		if ctx.Err() != nil {
			return nil
		}
		if msg := err.Error(); msg != lastErr {
			if errors.Is(err, errNotLeader) {
				lg.Info("standing by", log.Error(err))
			} else {
				lg.Warn("not leading", log.Error(err))
			}
			lastErr = msg
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(cfg.RetryPeriod):
		}
	}
}

// lead takes the leader lock and schedules until leadership or ctx ends.
func lead(ctx context.Context, st *ytstore.Store, cfg Config, lg log.Structured) error {
	termCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	sess, err := st.StartSession(termCtx, "yt-flow: controller "+cfg.Address, cfg.SessionTimeout)
	if err != nil {
		return err
	}
	defer func() { _ = sess.Close() }()
	if err := st.LockLeader(termCtx, sess); err != nil {
		if errors.Is(err, ytstore.ErrConflict) {
			return errNotLeader
		}
		return err
	}
	lg.Info("became leader", log.String("session", sess.ID()), log.String("address", cfg.Address))
	if cfg.Observe != nil {
		defer cfg.Observe(&Snapshot{})
	}
	c := &cycler{st: st, cfg: cfg, lg: lg, sess: sess, sched: &Scheduler{Settle: settleMicros(cfg.WorkerSettle)}, notify: newNotifier(lg, st)}
	var probing sync.WaitGroup
	if cfg.ProbePeriod > 0 {
		c.probe = newProber(cfg.ProbePeriod, cfg.ProbeRefusals)
		probing.Add(1)
		go func() { defer probing.Done(); _ = c.probe.run(termCtx) }()
	}
	defer func() {
		cancel() // ends the notifications and probes in flight at once
		c.notify.wait()
		probing.Wait()
	}()
	if err := st.SetControllerAttributes(termCtx, sess, "", cfg.Address); err != nil {
		return fmt.Errorf("publish leader address: %w", err)
	}
	if err := st.SetLeaderFlowCoreVersion(termCtx, sess, cfg.FlowCoreVersion); err != nil {
		return fmt.Errorf("publish leader version: %w", err)
	}
	c.log(termCtx, "controller "+cfg.Address+" became leader")
	timer := time.NewTimer(cfg.Period)
	defer timer.Stop()
	var fastUntil time.Time // after a source partition completed
	for {
		start := time.Now()
		transition, err := c.cycle(termCtx)
		c.transition = transition
		if c.sourceCompleted {
			c.sourceCompleted = false
			fastUntil = start.Add(10 * cfg.Period)
		}
		if err != nil {
			if errors.Is(err, ytstore.ErrLeaseLost) {
				return fmt.Errorf("lost leadership: %w", err)
			}
			if ctx.Err() == nil {
				lg.Warn("scheduling cycle failed", log.Error(err))
			}
		}
		// During a transition (completing, draining, pausing) the next cycle comes sooner:
		// finishing it takes a few observations of the workers' statuses.
		// So does the time after a source partition completed: the other partitions of a
		// finite source usually follow, and their completion starts the pipeline's.
		next := cfg.Period
		if transition || start.Before(fastUntil) {
			next = max(cfg.Period/25, 20*time.Millisecond)
		}
		if c.drainObserved {
			// The second observation of a drained pipeline needs a newer status of every
			// job, which the workers report every PollPeriod/20 (10 ms) in a transition:
			// look again after about that long, not a whole transition cycle.
			next = max(cfg.Period/40, 12*time.Millisecond)
		}
		// Between regular cycles the leader peeks at the job statuses every fifth of the
		// period: a job that newly reports its source completed starts the pipeline's
		// completion, which should not wait for the next cycle. During a transition it peeks
		// every PollPeriod/20 of the workers (10 ms) for the first status set in which every
		// job is drained, which the transition waits for.
		peek := max(cfg.Period/5, 20*time.Millisecond)
		if transition && !c.drainObserved {
			peek = max(cfg.Period/50, 10*time.Millisecond)
		}
		for wait := next - time.Since(start); ; wait = next - time.Since(start) {
			timer.Reset(max(min(wait, peek), 0))
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-sess.Done():
				return errors.New("lost leadership: session ended")
			case t := <-c.probe.Dead():
				// A worker's process is gone: its session is aborted now and the next cycle,
				// at once, removes its jobs (their leases aborted first) and reassigns them.
				c.abortRefusing(termCtx, t)
				next = 0
			case <-timer.C:
			}
			if time.Since(start) >= next || c.peekStatuses(termCtx, transition && !c.drainObserved) {
				break
			}
		}
	}
}

// peekStatuses reads the job statuses and reports whether a cycle should run now: a job
// status says completed that the last cycle did not see, or, with drain, every job of the
// last cycle's layout reports itself drained (a failed read says no). Outside a transition,
// in a pipeline that awaits watermarks, it also folds the statuses into the watermarks
// (peekWatermarks).
func (c *cycler) peekStatuses(ctx context.Context, drain bool) bool {
	sts, err := c.st.JobStatuses(ctx)
	if err != nil {
		return false
	}
	if !c.transition {
		c.peekWatermarks(ctx, sts)
	}
	drained := 0
	for _, st := range sts {
		if st.State == ytstore.JobCompleted && !c.completedJobs[st.JobID] {
			return true
		}
		if c.layoutJobs[st.JobID] && st.InFlight == 0 && (st.Draining || st.State == ytstore.JobCompleted) {
			drained++
		}
	}
	return drain && len(c.layoutJobs) > 0 && drained == len(c.layoutJobs)
}

// cycler runs scheduling cycles for one leadership term.
type cycler struct {
	st    *ytstore.Store
	cfg   Config
	lg    log.Structured
	sess  *ytstore.Session
	sched *Scheduler

	// wm is the SystemWatermark; nil until the first cycle reads the
	// published value.
	wm *WatermarkTracker
	// attrs are the attributes the last cycle read, with the watermarks published since
	// (peekWatermarks); nil before the first cycle.
	attrs *ytstore.Attributes
	// peekStamp is the sum of the updated_at of the statuses the last peekWatermarks folded.
	peekStamp uint64
	// ew tracks the EventWatermark (nil until the first cycle that publishes one).
	ew *WatermarkTracker
	// sw tracks the EventWatermark of every stream and alignment group (nil until the first
	// cycle that publishes one).
	sw *StreamWatermarkTracker
	// thr are the distributed throttlers' buckets and grants (nil until the first cycle that
	// runs one).
	thr *throttles
	// gcDone is the bound below which dedup rows were all deleted; gcMore
	// says the last collection stopped at its batch limit.
	gcDone uint64
	gcMore bool
	gcLast time.Time
	// gcMerger: 1 when the dedup tables collect their rows themselves (watermark row
	// merger; the controller only sets their watermark), -1 when the controller deletes
	// them (CollectDedup: tables of pipelines created before the merger), 0 not known yet.
	gcMerger int

	// failures maps a job id to the process failure its status reported, as last logged
	// (FailureReports).
	failures map[string]string

	// parsed specs, cached by version
	specVersion, dynVersion int64
	topology                Topology
	specErr                 error
	// sourceCompleted is set by a cycle in which a source partition completed.
	sourceCompleted bool
	// transition is set by a cycle whose pipeline is on its way to another state.
	transition bool
	// drainObserved is set by a cycle that saw every job drained once (Decision.DrainObserved).
	drainObserved bool
	// completedJobs are the jobs whose status said completed at the last observation;
	// layoutJobs the jobs of its layout.
	completedJobs map[string]bool
	layoutJobs    map[string]bool
	// notify tells the workers about layout and state changes (nil: no notifications).
	notify *notifier
	// probe connects to the workers' endpoints to find dead ones (nil: ProbePeriod < 0).
	probe *prober
	// cycles counts the completed cycles (Snapshot.Cycle).
	cycles int64
	// listErrs is the last error listing each source's partitions (by list key), logged to
	// controller_logs when it first appears or changes, and when the listing works again.
	listErrs map[string]string

	// partitioningKey and partitioningAt are what @partitioning last published and when
	// (publishPartitioning).
	partitioningKey string
	partitioningAt  time.Time
}

// cycle observes the pipeline, decides and applies the decision; transition reports that
// the pipeline is on its way to another state.
func (c *cycler) cycle(ctx context.Context) (transition bool, err error) {
	in, attrs, err := c.observe(ctx)
	if err != nil {
		return false, err
	}
	c.attrs = attrs
	d := c.sched.Step(in)
	c.drainObserved = d.DrainObserved
	if err := c.apply(ctx, d); err != nil {
		return false, err
	}
	c.sourceCompleted = c.sourceCompleted || d.SourceCompleted
	stateChanged := d.PipelineState != "" && d.PipelineState != attrs.PipelineState
	if !d.Layout.Empty() && !stateChanged {
		c.notifyWorkers(ctx, in, d)
	}
	if stateChanged {
		err := c.st.SetControllerAttributes(ctx, c.sess, d.PipelineState, "")
		c.notifyWorkers(ctx, in, d) // also when the layout changed and the state write failed
		if err != nil {
			return d.Transition, err
		}
		c.lg.Info("pipeline state changed", log.String("from", attrs.PipelineState), log.String("state", d.PipelineState))
		c.log(ctx, fmt.Sprintf("pipeline state %s -> %s", stateName(attrs.PipelineState), d.PipelineState))
	}
	c.publishPartitioning(ctx, d.Partitioning)
	if err := c.advanceWatermark(ctx, in, attrs); err != nil {
		return d.Transition, err
	}
	if err := c.advanceEventWatermark(ctx, in, attrs); err != nil {
		return d.Transition, err
	}
	if err := c.advanceThrottlers(ctx, in, attrs, time.UnixMicro(int64(in.Now))); err != nil {
		return d.Transition, err
	}
	c.observed(in, attrs, d)
	return d.Transition, nil
}

// observed hands a completed cycle to Config.Observe.
func (c *cycler) observed(in *Input, attrs *ytstore.Attributes, d *Decision) {
	c.cycles++
	if c.cfg.Observe == nil {
		return
	}
	s := &Snapshot{Leading: true, Cycle: c.cycles, Input: in, Attributes: *attrs, Partitioning: d.Partitioning}
	if d.PipelineState != "" {
		s.Attributes.PipelineState = d.PipelineState
	}
	if c.wm != nil {
		s.Attributes.SystemWatermark = max(s.Attributes.SystemWatermark, c.wm.Value())
	}
	if c.ew != nil {
		ew := c.ew.Value()
		if ew > 0 && (s.Attributes.EventWatermark == nil || ew > *s.Attributes.EventWatermark) {
			s.Attributes.EventWatermark = &ew
		}
	}
	c.cfg.Observe(s)
}

// notifyWorkers tells the live workers of the observation in that the layout or the
// pipeline state changed.
func (c *cycler) notifyWorkers(ctx context.Context, in *Input, d *Decision) {
	if c.notify != nil {
		c.notify.notify(ctx, in.Workers, d.Layout.DeleteWorkers)
	}
}

func (c *cycler) observe(ctx context.Context) (*Input, *ytstore.Attributes, error) {
	attrs, err := c.st.Attributes(ctx)
	if err != nil {
		return nil, nil, err
	}
	in := &Input{
		Now: ytstore.Now(), TargetState: attrs.TargetState, PipelineState: attrs.PipelineState,
		WorkerAlive: map[string]bool{}, LeaseAlive: map[string]bool{}, SourcePartitions: map[string][]int64{},
		FlowCoreTarget: attrs.FlowCoreTarget, ControllerVersion: c.cfg.FlowCoreVersion,
	}
	if len(attrs.Spec) > 0 {
		if attrs.SpecVersion != c.specVersion || attrs.DynamicSpecVersion != c.dynVersion || c.specErr != nil && c.specVersion == 0 {
			c.specVersion, c.dynVersion = attrs.SpecVersion, attrs.DynamicSpecVersion
			c.topology, c.specErr = parseTopology(attrs)
			if c.sw != nil && c.specErr == nil {
				c.sw.SetTopology(c.topology) // the new version's graph and rules
			}
			if c.ew != nil && c.specErr == nil {
				c.ew.SetTopology(c.topology) // the new version's watermark rules
			}
			if c.specErr != nil {
				c.lg.Error("cannot parse the pipeline spec; running no jobs", log.Error(c.specErr))
				c.log(ctx, "cannot parse the pipeline spec: "+c.specErr.Error())
			}
		}
		in.HasSpec = c.specErr == nil
		in.Topology = c.topology
		if in.HasSpec && in.Topology.ValidateBinaryChecksum {
			sum, err := corever.SelfChecksum()
			if err != nil {
				c.lg.Warn("cannot checksum this binary for validate_binary_checksum", log.Error(err))
			}
			in.ControllerChecksum = sum
		}
	}
	if in.Workers, err = c.st.Workers(ctx); err != nil {
		return nil, nil, err
	}
	sessions := make([]string, len(in.Workers))
	for i, w := range in.Workers {
		sessions[i] = w.SessionTx
	}
	alive, errs := parallel(sessions, func(tx string) (bool, error) { return c.st.TxAlive(ctx, tx) })
	for i, w := range in.Workers {
		if errs[i] != nil {
			return nil, nil, errs[i]
		}
		in.WorkerAlive[w.WorkerID] = alive[i]
	}
	c.probe.observe(in.Workers, in.WorkerAlive)
	if in.Partitions, err = c.st.Partitions(ctx); err != nil {
		return nil, nil, err
	}
	if in.Jobs, err = c.st.Jobs(ctx); err != nil {
		return nil, nil, err
	}
	if in.Statuses, err = c.st.JobStatuses(ctx); err != nil {
		return nil, nil, err
	}
	// Invariant: a job failing on a message is named in the controller log (computation,
	// partition, key, message id, attempt, error) when it starts failing and when another
	// message or error fails (TestFailureReports, TestPoisonMessageRetryStallsOnePartition).
	var failing []string
	failing, c.failures = FailureReports(c.failures, in.Statuses)
	for _, l := range failing {
		c.lg.Warn("a job reports a failing process function", log.String("status", l))
	}
	c.log(ctx, failing...)
	c.layoutJobs = make(map[string]bool, len(in.Jobs))
	for _, j := range in.Jobs {
		c.layoutJobs[j.JobID] = true
	}
	c.completedJobs = map[string]bool{}
	for _, st := range in.Statuses {
		if st.State == ytstore.JobCompleted {
			c.completedJobs[st.JobID] = true
		}
	}
	// Ping every lease: this keeps them alive and tells which are dead.
	leases := make([]string, len(in.Jobs))
	for i, j := range in.Jobs {
		leases[i] = j.LeaseID
	}
	_, pingErrs := parallel(leases, func(l string) (struct{}, error) { return struct{}{}, c.st.PingLease(ctx, l) })
	for i, j := range in.Jobs {
		err := pingErrs[i]
		switch {
		case err == nil:
			in.LeaseAlive[j.LeaseID] = true
		case errors.Is(err, ytstore.ErrLeaseLost):
			c.lg.Info("lease lost", log.String("job", j.JobID), log.String("lease", j.LeaseID))
		default:
			// Unknown this cycle: keep the job; a dead lease fences it anyway.
			in.LeaseAlive[j.LeaseID] = true
			c.lg.Warn("cannot ping lease", log.String("job", j.JobID), log.String("lease", j.LeaseID), log.Error(err))
		}
	}
	for _, src := range in.Topology.Listed() {
		ctors, _ := connector.SourceOf(src.Class)
		ix, err := ctors.Partitions(ctx, connector.Env{Store: c.st, PipelinePath: c.cfg.Path, SourceID: src.ID, SourcePartition: -1, Dynamic: src.Dynamic}, src.Params)
		if err != nil {
			c.lg.Warn("cannot list source partitions", log.String("source", src.ID), log.String("class", src.Class), log.Error(err))
			if c.listErrs == nil {
				c.listErrs = map[string]string{}
			}
			if msg := err.Error(); c.listErrs[src.ListKey] != msg {
				c.listErrs[src.ListKey] = msg
				c.log(ctx, fmt.Sprintf("source %s: cannot list its partitions (retried every cycle): %s", src.ID, msg))
			}
			continue
		}
		if _, failed := c.listErrs[src.ListKey]; failed {
			delete(c.listErrs, src.ListKey)
			c.log(ctx, fmt.Sprintf("source %s: partitions listed again", src.ID))
		}
		in.SourcePartitions[src.ListKey] = ix
	}
	return in, attrs, nil
}
