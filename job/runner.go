// The runner of one job: its struct, newRunner (routes, sinks, sources) and its life (run),
// with the pacing of busy epochs and the idle wait.

package job

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.ytsaurus.tech/library/go/core/log"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/internal/autopart"
	"github.com/ytflow/yt-flow/internal/ordering"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytstore"
)

// ErrZombie is returned by a runner whose commit was rejected because its lease is dead.
var ErrZombie = errors.New("job lease lost")

// paceFraction and paceMinShare: an epoch whose largest batch took at least
// max_rows_per_batch / paceMinShare rows without filling it is followed by the next one after
// Config.PaceFactor times its own wall time, and batch_duration / paceFraction at the
// latest (runner.pace). With the fixed pace of half of batch_duration (PaceFactor < 0): in
// the word count at 24 000 msgs/s (half of its peak) a quarter gave p50 70–75 ms, p99
// 242–339 ms on 1.56 cores, a half 101 ms, 216–239 ms on 1.33 cores, the whole 153 ms,
// 264–293 ms. Pacing by cost keeps the share of the commits' fixed costs bounded (the loop
// works at most 1/PaceFactor of the time) without holding cheap epochs back a fixed period;
// docs/perf-notes.md ("Epoch path") has the figures.
const (
	paceFraction      = 2
	paceMinShare      = 10
	defaultPaceFactor = 4
)

// runner runs one job: its epoch loop and its sender.
type runner struct {
	w *Worker
	// batchRows is the largest number of rows the last epoch took from its input or one
	// source, and batchLimit their limit (max_rows_per_batch); they decide the pacing
	// (runner.pace).
	batchRows, batchLimit int
	job                   ytstore.Job
	// loads, reads and commits are the store as the job's start, an epoch's reads and its
	// commit see it (*ytstore.Store; tests wrap it).
	loads   stateLoader
	reads   epochReads
	scanner stateScanner
	// visitors are the key visitor streams of a keyed job (keyvisit.go).
	visitors []*keyVisitor
	// extStore reads the external states' tables; ext are those tables once opened and
	// extLoaded their rows for the current epoch (state name -> encoded key -> row).
	extStore  externalStore
	ext       []*extTable
	extLoaded map[string]map[string]flow.Row
	// extRowsLoaded are the rows of the tables with several rows per key, extSubKeys those
	// tables' further key columns by state name.
	extRowsLoaded map[string]map[string][]flow.Row
	extSubKeys    map[string][]string
	// joins are the state joiners once opened, joined what they read for the current epoch
	// (statejoin.go).
	joins   []*stateJoin
	joined  *joinedEpoch
	commits committer
	comp    *spec.Computation
	dyn     spec.DynamicComputation
	// dynVersion is the dynamic spec version r.dyn comes from; pendingDyn a newer one the
	// worker offered (dynamic.go); dynDraining mirrors r.dyn.Draining for other goroutines;
	// dynEntities are the job's sources and sinks with their dynamic parameters.
	dynVersion  atomic.Int64
	pendingDyn  atomic.Pointer[dynamicOffer]
	dynDraining atomic.Bool
	dynEntities []*dynEntity
	fn          flow.Function
	// shareStates lets invocations read the state cache's maps instead of copies
	// (flow.LeavesStateAlone).
	shareStates bool
	params      flow.Row
	cfg         epoch.Config
	log         log.Structured
	// planner, invs, results, dedupRows and stateRows are the buffers of the epoch loop
	// (planning, invocations, the write set's dedup and state rows), reused from epoch to
	// epoch: what an epoch keeps in them is dead once it ended.
	planner   epoch.Planner
	invs      []flow.Invocation
	results   []*flow.Result
	dedupRows []ytstore.DedupRow
	groups    []destMsgs // groupByDest's buffers
	memRefs   []memRef   // handOver's scratch space
	stateRows []ytstore.StateRow
	payloads  payloadEncoder // the stored payloads' scratch (epoch_write.go)
	// sourceRows is the array an epoch's source rows are gathered in, kept from epoch to
	// epoch and cleared after each (it holds no payload between epochs).
	sourceRows []epoch.SourceRow
	// inputs holds the inputs an epoch took from the inbox; keyHashes and keyStates are
	// prepare's (the keys whose states the epoch reads, and those states by key).
	inputs    []epoch.Input
	keyHashes map[uint64]bool
	keyStates map[string]map[string][]byte

	inbox *inbox
	// ordering is the computation's input_ordering (nil: arrival order; inputOrdering).
	ordering *ordering.Config
	outbox   *outbox
	order    *pushOrder
	timers   *epoch.TimerSet
	compact  bool

	sources   []*sourceState
	syncSinks map[string]connector.SyncSink
	// aloSinks are the at-least-once sync sinks; beforeCommit holds the epoch's writes to
	// them, made before its commit (writeBeforeCommit).
	aloSinks     map[string]connector.AtLeastOnceSyncSink
	beforeCommit []aloWrite
	asyncSinks   map[string]connector.AsyncSink
	bestEffort   map[string]*connector.AtMostOnce
	seq          map[string]int64 // next producer sequence number per async sink
	// topologyPending holds the topology fingerprints of async sinks to keep with the next
	// commit (checkTopologies).
	topologyPending map[string]string
	// partState is the user state of a source job (per partition; invocations have a nil
	// key), kept in partition_states under userStatePrefix.
	partState map[string][]byte
	// stateCache holds the committed states of the job's keys (statecache.go).
	stateCache *stateCache
	// fresh tells which inputs need no dedup lookup (fresh.go); nil: look every input up.
	fresh *freshInputs

	stats     runnerStats
	completed atomic.Bool
	// draining and retiring mirror the job row's flags (the worker's poll sets them);
	// applied echoes them once an epoch started under them.
	draining, retiring, applied atomic.Bool
	// pendingTimers is the number of stored timers (set after each commit); a completing
	// job counts them in in_flight.
	pendingTimers atomic.Int64
	// upstream holds the computations that feed this one, directly or not. A completing job
	// fires its timers only once upstreamDrained is set (Worker.checkUpstreamDrained, which
	// alone touches upstreamObs).
	upstream        map[string]bool
	upstreamDrained atomic.Bool
	// drainSeen is when the job saw its draining flag set (ns): the target state must be read
	// after it before the job counts as completing (Worker.checkUpstreamDrained).
	drainSeen   atomic.Int64
	upstreamObs map[string]upstreamMark
	// failures counts consecutive epochs that did not apply.
	failures int
	// invokeAttempts counts consecutive epochs whose process function failed (failure.go).
	invokeAttempts int
	// replay holds the replayed dead letters read and not committed yet (replay.go).
	replay replayFeed
	// openEpoch is the time of the epoch in progress (0 between epochs); loaded is set once
	// the durable state is loaded. Both feed job_status.system_watermark.
	openEpoch atomic.Uint64
	// lastStamp is the largest epoch time (µs) the job used, at least the @system_watermark
	// it loaded with (stamp).
	stampMu   sync.Mutex
	lastStamp uint64
	// eventSeen is the largest event timestamp a source job read (eventtime.go).
	eventSeen atomic.Uint64
	// alignmentHeld is whether watermark_alignment held the source reads of the last epoch
	// back: the wait after it counts as the watermark_alignment epoch part.
	alignmentHeld atomic.Bool
	// quotas are the job's accounts with distributed throttlers, by throttler id
	// (throttle.go), guarded by quotaMu.
	quotaMu sync.Mutex
	quotas  map[string]*quotaAccount
	quotaFn flow.QuotaFunc // acquireQuota, for the invocations
	// sourceIdleSince is the time (µs) of the first source read that found nothing after the
	// last one that found rows; 0 while the sources give rows (eventtime.go).
	sourceIdleSince atomic.Uint64
	loaded          atomic.Bool
	// problem is the last transient error (source unreadable, lookup failed, epoch not
	// applied), reported in job_status while the job keeps running; cleared by a commit.
	problem atomic.Pointer[string]
	// broken is the error of an async sink that gave up (connector.ErrSinkBroken): it stays
	// in job_status, ahead of any transient problem, until the job ends.
	broken atomic.Pointer[string]
	// swiftSrc are the read-ahead windows of a swift source job (nil for other kinds).
	swiftSrc []*swiftSource
	// pivots keeps the key quantiles of a keyed job's inputs (pivot_finder; nil for source
	// jobs), reported in job_status for partitioning by load.
	pivots *autopart.Finder
}

// noteBroken records that async sink dest gave up for good (err wraps
// connector.ErrSinkBroken): job_status shows it until the job ends; the first time it is
// logged as an error.
func (r *runner) noteBroken(dest string, err error) {
	msg := fmt.Sprintf("job %s (computation %s, partition %s): deliver to %s: %v", r.job.JobID, r.comp.ID, r.job.PartitionID, dest, err)
	if r.broken.Swap(&msg) == nil {
		r.log.Error("async sink broken: it delivers nothing until the pipeline is paused and started", log.String("sink", dest), log.Error(err))
	}
}

// noteProblem records a transient error for job_status.
func (r *runner) noteProblem(what string, err error) {
	msg := fmt.Sprintf("job %s (computation %s, partition %s): %s: %v", r.job.JobID, r.comp.ID, r.job.PartitionID, what, err)
	r.problem.Store(&msg)
}

// completing tells a job drained for completion from one drained to stop or pause: it
// drains (and does not retire) while the pipeline's target state is working and its
// computation is not drained by the dynamic spec. An unread target state counts as working,
// so pending timers hold completion back rather than being lost.
func (r *runner) completing() bool {
	if !r.draining.Load() || r.retiring.Load() || r.dynDraining.Load() {
		return false
	}
	t := r.w.targetState.Load()
	return t == nil || *t == "" || *t == ytstore.TargetWorking
}

// maxNotApplied is how many consecutive epochs may fail to apply before the job fails.
const maxNotApplied = 20

// setFlags applies the job row's draining/retiring flags; a change wakes the job's loop,
// which applies it in its next epoch instead of after its idle wait (the pipeline's
// completion and draining wait for every job to apply it).
func (r *runner) setFlags(j ytstore.Job) {
	draining := j.Draining || j.Retiring
	if draining && !r.draining.Load() {
		r.drainSeen.Store(time.Now().UnixNano())
	}
	changed := r.draining.Swap(draining) != draining
	changed = r.retiring.Swap(j.Retiring) != j.Retiring || changed
	if !j.Draining {
		r.upstreamDrained.Store(false)
	}
	if changed {
		r.wake()
	}
}

// wake makes an idle job's loop run its next epoch now.
func (r *runner) wake() {
	if r.inbox == nil {
		return
	}
	select {
	case r.inbox.notify <- struct{}{}:
	default:
	}
}

const (
	seqStatePrefix = "seq/"
	// topologyStatePrefix keeps an async sink's topology fingerprint (load.go checkTopologies).
	topologyStatePrefix = "topology/"
	userStatePrefix     = "state/"
	sinkDestPrefix      = "sink/"
)

// newRunner prepares a runner for job j of pipeline p; it reads nothing yet.
func (w *Worker) newRunner(j ytstore.Job, p *spec.Pipeline, dyn *spec.DynamicPipeline, keyer epoch.Keyer) (*runner, error) {
	comp, ok := p.Computations[j.ComputationID]
	if !ok {
		return nil, fmt.Errorf("job %s: computation %s is not in the spec", j.JobID, j.ComputationID)
	}
	r := &runner{
		w: w, job: j, loads: w.store, reads: w.store, scanner: w.store, commits: w.store, extStore: w.store, comp: comp, dyn: dyn.Computation(comp.ID),
		log: log.With(w.log.Logger(), log.String("computation", comp.ID), log.String("partition", j.PartitionID),
			log.String("job", j.JobID), log.String("lease", j.LeaseID)).Structured(),
		inbox: newInbox(w.cfg.InboxLimit), outbox: newOutbox(), order: newPushOrder(),
		compact:    comp.CompactDedup(),
		syncSinks:  map[string]connector.SyncSink{},
		aloSinks:   map[string]connector.AtLeastOnceSyncSink{},
		asyncSinks: map[string]connector.AsyncSink{},
		bestEffort: map[string]*connector.AtMostOnce{},
		seq:        map[string]int64{},
		partState:  map[string][]byte{},
		stateCache: newStateCache(w.cfg.StateCacheKeys),
		fresh:      newFreshInputs(w.cfg.FreshInputIDs),
	}
	r.quotaFn = r.acquireQuota
	r.upstream = upstreamOf(p, comp.ID)
	r.ordering = inputOrdering(comp)
	if r.ordering != nil {
		r.inbox.perStream = map[string]int{}
	}
	if !comp.Kind.Swift() && len(comp.Sources) == 0 {
		r.visitors = newKeyVisitors(comp)
	}
	if !comp.Kind.Source() {
		r.pivots = autopart.NewFinder(comp.PivotFinder.PartCount, comp.PivotFinder.WindowSize)
	}
	if comp.Passthrough {
		r.fn = passthrough{outputs: comp.OutputStreamIDs, columns: comp.PassthroughColumns}
		r.shareStates = true // it reads no state
	} else {
		fn, err := flow.Lookup(comp.ProcessingFunction)
		if err != nil {
			return nil, fmt.Errorf("job %s: computation %s: %w", j.JobID, comp.ID, err)
		}
		r.fn = fn
		r.shareStates = flow.LeavesStateAlone(fn)
	}
	r.dynDraining.Store(r.dyn.Draining)
	r.setParams()
	r.cfg = epoch.Config{
		ComputationID: comp.ID, PartitionID: j.PartitionID,
		Dedup: comp.ProcessingMode != spec.AtLeastOnceConsistent && !comp.Kind.Source() && comp.Kind != spec.KindSwiftMap,
		Swift: comp.Kind.Swift(),
		// Invariant: with relaxed batching a parent is acknowledged only after every output
		// it contributed to is delivered (TestSwiftRelaxedBatching).
		RelaxedBatching: comp.Kind == spec.KindSwiftMap && comp.AllowBatchingWithRelaxedGuarantees,
		Source:          comp.Kind.Source(),
		Routes:          map[string][]epoch.Destination{},
		Keyer:           keyer,
	}
	for _, out := range comp.OutputStreamIDs {
		for _, id := range sortedIDs(p.Computations) {
			for _, in := range p.Computations[id].InputStreamIDs {
				if in == out {
					r.cfg.Routes[out] = append(r.cfg.Routes[out], epoch.Destination{ID: id, Kind: epoch.ToComputation})
				}
			}
		}
	}
	for _, id := range sortedIDs(comp.Sinks) {
		dest, err := r.openSink(j, comp, id)
		if err != nil {
			return nil, err
		}
		for _, in := range comp.Sinks[id].InputStreamIDs {
			r.cfg.Routes[in] = append(r.cfg.Routes[in], dest)
		}
	}
	if comp.Kind.Source() {
		for _, id := range sortedIDs(comp.Sources) {
			if j.SourceID != "" && id != j.SourceID {
				continue
			}
			src, err := r.openSource(j, comp, id)
			if err != nil {
				return nil, err
			}
			r.sources = append(r.sources, &sourceState{id: id, src: src, topUpWait: w.cfg.TopUpWait})
		}
	}
	if comp.Kind == spec.KindSwiftSource {
		if len(r.asyncSinks) > 0 {
			return nil, fmt.Errorf("job %s: computation %s: a swift source computation runs no async sink without at_most_once_strategy (spec validation rejects them)", j.JobID, comp.ID)
		}
		for _, s := range r.sources {
			r.swiftSrc = append(r.swiftSrc, &swiftSource{src: s})
		}
	}
	r.stats.sinks = map[string]*sinkStats{}
	for id := range r.asyncSinks {
		r.stats.sinks[id] = &sinkStats{}
	}
	for id := range r.aloSinks {
		r.stats.sinks[id] = &sinkStats{}
	}
	return r, nil
}

// upstreamOf returns the computations whose outputs reach computation id, directly or
// through others.
func upstreamOf(p *spec.Pipeline, id string) map[string]bool {
	up := map[string]bool{}
	var visit func(string)
	visit = func(c string) {
		for _, in := range p.Computations[c].InputStreamIDs {
			for _, pid := range sortedIDs(p.Computations) {
				if !up[pid] && slices.Contains(p.Computations[pid].OutputStreamIDs, in) {
					up[pid] = true
					visit(pid)
				}
			}
		}
	}
	visit(id)
	return up
}

// sourceName names the partition of source stream id the job reads ("queue //q tablet 3";
// "" when the job reads no such source).
func (r *runner) sourceName(id string) string {
	for _, s := range r.sources {
		if s.id == id && s.src != nil {
			return s.src.String()
		}
	}
	return ""
}

func sortedIDs[V any](m map[string]V) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// passthrough forwards every input to every output stream.
// passthrough forwards each input message to every output; an output listed in columns
// (spec.Computation.PassthroughColumns) gets a copy of the payload with those columns only.
type passthrough struct {
	outputs []string
	columns map[string][]string
}

func (p passthrough) Invoke(inv *flow.Invocation) (*flow.Result, error) {
	res := &flow.Result{}
	for _, m := range inv.Messages {
		for _, s := range p.outputs {
			payload := m.Payload
			if cols, ok := p.columns[s]; ok {
				payload = make(flow.Row, len(cols))
				for _, c := range cols {
					if v, ok := m.Payload[c]; ok {
						payload[c] = v
					}
				}
			}
			res.Outputs = append(res.Outputs, flow.Output{StreamID: s, Payload: payload, ParentIDs: []string{m.MessageID}, EventTimestamp: m.EventTimestamp})
		}
	}
	return res, nil
}

// run is the job's life: load, then epochs until ctx ends or the job fails.
func (r *runner) run(ctx context.Context) error {
	// Invariant: pushes waiting for a stopped job's commits are answered at once with what
	// it committed, so the senders turn to the keys' new owner (TestPushAnsweredWhenJobStops).
	defer r.inbox.stop()
	if err := r.load(ctx); err != nil {
		return fmt.Errorf("job %s: load: %w", r.job.JobID, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1 + len(r.bestEffort))
	go func() { defer wg.Done(); r.send(ctx) }()
	for _, be := range r.bestEffort {
		go func() { defer wg.Done(); _ = be.Run(ctx) }()
	}
	defer func() {
		cancel()
		wg.Wait()
		for _, s := range r.sources {
			s.waitAdvance()
			if s.ahead != nil {
				<-s.ahead.done
			}
		}
	}()

	r.log.Info("job started", log.Int("timers", r.timers.Len()), log.Int("outputs_pending", r.outbox.size()))
	defer func() {
		r.log.Info("job stopped", append([]log.Field{log.Int64("epochs", r.stats.epochs.Load()), log.Int64("dedup_lookups_skipped", r.stats.lookupsSkipped.Load()), log.Int64("duplicates_dropped", r.stats.duplicates.Load())}, r.stats.phases.fields()...)...)
	}()
	lastCommit := uint64(0)
	busy := false          // an epoch found work lately (recentlyBusy)
	var lastWork time.Time // when an epoch last found work
	for ctx.Err() == nil {
		if err := r.applyPendingDynamic(ctx); err != nil {
			return err
		}
		started := time.Now()
		r.batchRows = 0
		committed, idle, err := r.epoch(ctx, lastCommit)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if committed != 0 {
			if lastCommit == 0 {
				// With "job started", the milestones of a job's start (recovery after a
				// failure: bench/recovery_test.go reads them).
				r.log.Info("first epoch committed", log.Int64("epochs", r.stats.epochs.Load()))
			}
			lastCommit = committed
		}
		for _, s := range r.sources {
			s.advanceCommitted(ctx, r.log, time.Now(), false) // what a recent advance left behind
		}
		if idle {
			start := time.Now()
			t := time.NewTimer(r.idleWait(busy))
			var doneReady <-chan struct{}
			if r.draining.Load() {
				// Finished outputs are deleted by an epoch commit, and the pipeline's
				// completion waits for that: commit it at once.
				doneReady = r.outbox.doneReady
			}
			select {
			case <-ctx.Done():
			case <-r.inbox.notify:
			case <-doneReady:
			case <-t.C:
			}
			t.Stop()
			part := &r.stats.phases.idle
			if r.alignmentHeld.Load() {
				part = &r.stats.phases.alignment // waiting for the group's watermark
			}
			r.stats.phases.since(part, start)
		} else if pace := r.pace(time.Since(started)); pace > 0 {
			// A batch that did not fill up but was not small either (load, not a trickle)
			// is followed by the next one after pace at the earliest, so that it gathers
			// more: under moderate load epochs stay few and large instead of many and small,
			// each paying the commit's requests; a trickle is not delayed.
			if wait := pace - time.Since(started); wait > 0 {
				start := time.Now()
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
				case <-t.C:
				}
				t.Stop()
				r.stats.paceNs.Add(int64(time.Since(start)))
				r.stats.phases.since(&r.stats.phases.idle, start)
			}
		}
		if !idle {
			lastWork = time.Now()
		}
		busy = r.recentlyBusy(lastWork, time.Now())
	}
	return nil
}

// recentlyBusy reports whether the job found work within the last empty_batch_backoff (at
// lastWork): such a source keeps polling soon (idleWait) for that long after its input paused,
// so that a sparse input (a quiet moment of a few tens of milliseconds at a low rate) does
// not make its next rows wait the whole backoff; after that it backs off.
func (r *runner) recentlyBusy(lastWork, now time.Time) bool {
	return !lastWork.IsZero() && now.Sub(lastWork) < r.backoff()
}

// backoff is empty_batch_backoff, or the worker's override.
func (r *runner) backoff() time.Duration {
	if r.w.cfg.EmptyBatchBackoff > 0 {
		return r.w.cfg.EmptyBatchBackoff
	}
	return r.dyn.EmptyBatchBackoff
}

// noteBatch records that an epoch took n rows from its input or a source, of at most limit.
func (r *runner) noteBatch(n, limit int) {
	if n > r.batchRows {
		r.batchRows, r.batchLimit = n, limit
	}
}

// pace is the shortest time from the start of the last epoch, which took took, to the start
// of the next: Config.PaceFactor times took, at most half of batch_duration, when the
// epoch's largest batch took at least a tenth of max_rows_per_batch without filling it (a
// full batch means a backlog: go on at once; a small one a trickle, where latency matters
// more than the commit's cost), else 0. A draining or completing job never waits.
func (r *runner) pace(took time.Duration) time.Duration {
	if r.batchRows >= r.batchLimit || r.batchRows*paceMinShare < r.batchLimit {
		return 0
	}
	if r.draining.Load() || r.retiring.Load() || r.completing() {
		return 0
	}
	return epoch.Pace(took, r.w.cfg.PaceFactor, r.dyn.BatchDuration/paceFraction)
}

// idleWait is how long an idle job waits before its next epoch unless an input arrives:
// empty_batch_backoff, or, for a source job that read rows within the last
// empty_batch_backoff (busy, recentlyBusy) and for a swift source job that holds rows its
// offset has not passed, at most half of batch_duration (at least 10ms): a source that is
// being written to is polled again soon, a swift source commits its offset soon after its
// outputs are delivered, an idle one waits the backoff.
func (r *runner) idleWait(busy bool) time.Duration {
	backoff := r.backoff()
	soon := busy && (len(r.sources) > 0 || len(r.swiftSrc) > 0) || r.swiftSourceHeld() > 0
	if soon && r.dyn.BatchDuration > 0 {
		backoff = min(backoff, max(r.dyn.BatchDuration/2, 10*time.Millisecond))
	}
	return backoff
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
