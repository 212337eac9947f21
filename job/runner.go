package job

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.ytsaurus.tech/library/go/core/log"
	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytstore"
)

// ErrZombie is returned by a runner whose commit was rejected because its lease is dead.
var ErrZombie = errors.New("job lease lost")

// sourceState is one source stream of a source job.
type sourceState struct {
	id     string
	src    connector.Source
	offset int64 // next offset to read, as committed
	ended  bool  // finite source reached the end
	// ahead is a read of the rows after the epoch being committed, started with the commit;
	// advancing is the last consumer advance started (nil once seen done).
	ahead     *readAhead
	advancing *advancing
	// toAdvance is a committed offset the consumer was not moved to yet (when pending);
	// advancedAt is when the last advance started (advanceCommitted).
	toAdvance  int64
	pending    bool
	advancedAt time.Time
}

// consumerAdvancePeriod bounds how often a source moves its YT consumer. The committed offset
// lives in the partition state; the consumer only reports lag (and lets an auto-trimmed queue
// drop what was read), so moving it once a second serves as well as after every epoch, for a
// fraction of the requests (TestConsumerAdvanceThrottled).
const consumerAdvancePeriod = time.Second

// readAhead is a source read running in the background.
type readAhead struct {
	from, max int64
	done      chan struct{}
	rows      []ytstore.QueueRow
	err       error
}

// readAhead starts reading up to max rows from offset from in the background.
func (s *sourceState) readAhead(ctx context.Context, from, max int64) {
	ra := &readAhead{from: from, max: max, done: make(chan struct{})}
	s.ahead = ra
	go func() {
		defer close(ra.done)
		ra.rows, ra.err = s.src.Read(ctx, from, max)
	}()
}

// read returns up to max rows from the committed offset: those read ahead when that read
// started there and found rows, else a fresh read. Queue rows never change once written, so
// rows read during the previous commit are the rows at that offset now. A read ahead that
// did not fill the batch is topped up with the rows written since it ran (during the
// commit), so that they do not wait for one more epoch.
func (s *sourceState) read(ctx context.Context, max int64) (rows []ytstore.QueueRow, readAhead bool, err error) {
	if ra := s.ahead; ra != nil {
		s.ahead = nil
		<-ra.done
		if ra.err == nil && ra.from == s.offset && ra.max == max && len(ra.rows) > 0 {
			rows = ra.rows
			if n := int64(len(rows)); n < max {
				// A failed top-up is no error: those rows come in the next epoch.
				if more, err := s.src.Read(ctx, rows[n-1].Offset+1, max-n); err == nil {
					rows = append(rows, more...)
				}
			}
			return rows, true, nil
		}
	}
	rows, err = s.src.Read(ctx, s.offset, max)
	return rows, false, err
}

// advancing is a consumer advance running in the background; err is set before done closes.
type advancing struct {
	done   chan struct{}
	offset int64
	err    error
}

// committed notes offset as committed: the consumer is moved there by advanceCommitted.
func (s *sourceState) committed(offset int64) {
	s.offset = offset
	s.toAdvance, s.pending = offset, true
}

// advanceCommitted moves the consumer (in the background) to the last committed offset when
// it was not moved there yet and the last advance started consumerAdvancePeriod ago or more;
// force skips the wait (a finite source at its end). Advances are forced moves, so they run
// one at a time, in order: while one runs, nothing starts (unless forced: then it waits for
// it). An advance that failed is retried with the next one; the committed offset itself is
// safe in the partition state, the consumer only reports it.
func (s *sourceState) advanceCommitted(ctx context.Context, lg log.Structured, now time.Time, force bool) {
	if a := s.advancing; a != nil {
		select {
		case <-a.done:
		default:
			if !force || !s.pending {
				return
			}
			<-a.done
		}
		s.advancing = nil
		if a.err != nil && !s.pending {
			s.toAdvance, s.pending = a.offset, true
		}
	}
	if !s.pending || (!force && now.Sub(s.advancedAt) < consumerAdvancePeriod) {
		return
	}
	a := &advancing{done: make(chan struct{}), offset: s.toAdvance}
	s.advancing, s.pending, s.advancedAt = a, false, now
	go func() {
		defer close(a.done)
		if a.err = s.src.Advance(ctx, a.offset); a.err != nil && ctx.Err() == nil {
			lg.Warn("consumer advance failed; retried with the next (the offset is committed in the partition state)", log.String("source", s.id), log.Error(a.err))
		}
	}()
}

// waitAdvance waits for the consumer advance in progress, if any.
func (s *sourceState) waitAdvance() {
	if s.advancing != nil {
		<-s.advancing.done
		s.advancing = nil
	}
}

// runnerStats are counters readable from other goroutines.
type runnerStats struct {
	epochs     atomic.Int64
	duplicates atomic.Int64
	// lookupsSkipped counts inputs not looked up in the dedup index (fresh.go).
	lookupsSkipped atomic.Int64
	lastCommitTS   atomic.Uint64
	dropped        atomic.Int64
	// readAheads counts source batches read during the previous commit.
	readAheads atomic.Int64
	// alignmentHolds counts epochs whose source reads watermark_alignment held back.
	alignmentHolds atomic.Int64
	// pushesLocal, pushesInProcess and pushesHTTP count pushes to reader jobs on this worker,
	// on other workers of this process (Config.InProcessPeers) and on others.
	pushesLocal, pushesInProcess, pushesHTTP atomic.Int64
	// payloadsTaken counts received inputs whose payload map the producer handed over in
	// memory (handOver) instead of bytes to decode.
	payloadsTaken atomic.Int64
	// mismatchesLogged is the payload mismatch count last logged.
	mismatchesLogged atomic.Int64
	// phases is where the job's wall time went, in Flow's epoch part names.
	phases epochPhases
}

// epochPhases accumulates the wall time of epoch parts (nanoseconds) and the rows the epochs
// took; a job logs them when it stops.
type epochPhases struct {
	fetch, prepare, process, commit, idle atomic.Int64
	rows                                  atomic.Int64
}

func (p *epochPhases) since(d *atomic.Int64, start time.Time) time.Time {
	now := time.Now()
	d.Add(int64(now.Sub(start)))
	return now
}

func (p *epochPhases) fields() []log.Field {
	ms := func(d *atomic.Int64) int64 { return d.Load() / int64(time.Millisecond) }
	return []log.Field{
		log.Int64("input_fetch_ms", ms(&p.fetch)), log.Int64("prepare_ms", ms(&p.prepare)),
		log.Int64("process_ms", ms(&p.process)), log.Int64("commit_ms", ms(&p.commit)),
		log.Int64("idle_ms", ms(&p.idle)), log.Int64("rows", p.rows.Load()),
	}
}

// committer is what the commit loop needs of the store: commit, re-read the partition's
// commit token, draw a fresh token. Tests wrap the real store to inject commit faults.
type committer interface {
	CommitEpoch(ctx context.Context, w *ytstore.EpochWrite) error
	PartitionToken(ctx context.Context, partitionID string) (token uint64, found bool, err error)
	GenerateTimestamp(ctx context.Context) (uint64, error)
	TxAlive(ctx context.Context, tx string) (bool, error)
}

// paceFraction and paceMinShare: an epoch whose largest batch took at least
// max_rows_per_batch / paceMinShare rows without filling it is followed by the next one after
// batch_duration / paceFraction at the earliest (runner.pace). Half of batch_duration: in the
// word count at 24 000 msgs/s (half of its peak) a quarter gave p50 70–75 ms, p99 242–339 ms
// on 1.56 cores, a half 101 ms, 216–239 ms on 1.33 cores, the whole 153 ms, 264–293 ms.
const (
	paceFraction = 2
	paceMinShare = 10
)

// runner runs one job: its epoch loop and its sender.
type runner struct {
	w *Worker
	// batchRows is the largest number of rows the last epoch took from its input or one
	// source, and batchLimit their limit (max_rows_per_batch); they decide the pacing
	// (runner.pace).
	batchRows, batchLimit int
	job                   ytstore.Job
	store                 *ytstore.Store
	commits               committer
	comp                  *spec.Computation
	dyn                   spec.DynamicComputation
	fn                    flow.Function
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
	// inputs holds the inputs an epoch took from the inbox; keyHashes and keyStates are
	// prepare's (the keys whose states the epoch reads, and those states by key).
	inputs    []epoch.Input
	keyHashes map[uint64]bool
	keyStates map[string]map[string][]byte

	inbox   *inbox
	outbox  *outbox
	order   *pushOrder
	timers  *epoch.TimerSet
	compact bool

	sources    []*sourceState
	syncSinks  map[string]connector.SyncSink
	asyncSinks map[string]connector.AsyncSink
	bestEffort map[string]*connector.AtMostOnce
	seq        map[string]int64 // next producer sequence number per async sink
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
	upstreamObs     map[string]upstreamMark
	// failures counts consecutive epochs that did not apply.
	failures int
	// openEpoch is the time of the epoch in progress (0 between epochs); loaded is set once
	// the durable state is loaded. Both feed job_status.system_watermark.
	openEpoch atomic.Uint64
	// lastStamp is the largest epoch time (µs) the job used, at least the @system_watermark
	// it loaded with (stamp).
	stampMu   sync.Mutex
	lastStamp uint64
	// eventSeen is the largest event timestamp a source job read (eventtime.go).
	eventSeen atomic.Uint64
	// sourceIdleSince is the time (µs) of the first source read that found nothing after the
	// last one that found rows; 0 while the sources give rows (eventtime.go).
	sourceIdleSince atomic.Uint64
	loaded          atomic.Bool
	// problem is the last transient error (source unreadable, lookup failed, epoch not
	// applied), reported in job_status while the job keeps running; cleared by a commit.
	problem atomic.Pointer[string]
	// swiftSrc are the read-ahead windows of a swift source job (nil for other kinds).
	swiftSrc []*swiftSource
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
	if !r.draining.Load() || r.retiring.Load() || r.dyn.Draining {
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
	offsetStatePrefix = "offset/"
	seqStatePrefix    = "seq/"
	userStatePrefix   = "state/"
	sinkDestPrefix    = "sink/"
)

// newRunner prepares a runner for job j of pipeline p; it reads nothing yet.
func (w *Worker) newRunner(j ytstore.Job, p *spec.Pipeline, dyn *spec.DynamicPipeline, keyer epoch.Keyer) (*runner, error) {
	comp, ok := p.Computations[j.ComputationID]
	if !ok {
		return nil, fmt.Errorf("job %s: computation %s is not in the spec", j.JobID, j.ComputationID)
	}
	r := &runner{
		w: w, job: j, store: w.store, commits: w.store, comp: comp, dyn: dyn.Computation(comp.ID),
		log: log.With(w.log.Logger(), log.String("computation", comp.ID), log.String("partition", j.PartitionID),
			log.String("job", j.JobID), log.String("lease", j.LeaseID)).Structured(),
		inbox: newInbox(w.cfg.InboxLimit), outbox: newOutbox(), order: newPushOrder(),
		compact:    comp.CompactDedup(),
		syncSinks:  map[string]connector.SyncSink{},
		asyncSinks: map[string]connector.AsyncSink{},
		bestEffort: map[string]*connector.AtMostOnce{},
		seq:        map[string]int64{},
		partState:  map[string][]byte{},
		stateCache: newStateCache(w.cfg.StateCacheKeys),
		fresh:      newFreshInputs(w.cfg.FreshInputIDs),
	}
	r.upstream = upstreamOf(p, comp.ID)
	if comp.Passthrough {
		r.fn = passthrough{outputs: comp.OutputStreamIDs}
		r.shareStates = true // it reads no state
	} else {
		fn, err := flow.Lookup(comp.ProcessingFunction)
		if err != nil {
			return nil, fmt.Errorf("job %s: computation %s: %w", j.JobID, comp.ID, err)
		}
		r.fn = fn
		r.shareStates = flow.LeavesStateAlone(fn)
	}
	r.params = flow.Row{}
	for k, v := range comp.ProcessingFunctionParameters {
		r.params[k] = v
	}
	for k, v := range r.dyn.ProcessingFunctionParameters {
		r.params[k] = v
	}
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
			r.sources = append(r.sources, &sourceState{id: id, src: src})
		}
	}
	if comp.Kind == spec.KindSwiftSource {
		if len(comp.Sinks) > 0 {
			return nil, fmt.Errorf("job %s: computation %s: swift source computations have no sinks (spec validation rejects them)", j.JobID, comp.ID)
		}
		for _, s := range r.sources {
			r.swiftSrc = append(r.swiftSrc, &swiftSource{src: s})
		}
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
type passthrough struct{ outputs []string }

func (p passthrough) Invoke(inv *flow.Invocation) (*flow.Result, error) {
	res := &flow.Result{}
	for _, m := range inv.Messages {
		for _, s := range p.outputs {
			res.Outputs = append(res.Outputs, flow.Output{StreamID: s, Payload: m.Payload, ParentIDs: []string{m.MessageID}, EventTimestamp: m.EventTimestamp})
		}
	}
	return res, nil
}

// load restores the job's durable state: source offsets, sink sequence numbers, timers and
// the output store rows still to deliver.
func (r *runner) load(ctx context.Context) error {
	// The four reads are independent: they run concurrently (a job starts one round trip
	// later instead of four).
	var (
		wg                         sync.WaitGroup
		ps                         map[string][]byte
		timerRows                  []ytstore.TimerRow
		outs                       []ytstore.OutputRow
		published                  uint64
		psErr, tErr, outErr, wmErr error
	)
	wg.Go(func() { ps, psErr = r.store.LoadPartitionStates(ctx, r.job.PartitionID) })
	if !r.cfg.Source {
		wg.Go(func() { timerRows, tErr = r.store.LoadTimers(ctx, r.comp.ID, r.job.LowerKey, r.job.UpperKey) })
	}
	wg.Go(func() { outs, outErr = r.store.LoadOutputs(ctx, r.job.PartitionID) })
	wg.Go(func() { published, wmErr = r.store.SystemWatermark(ctx) })
	wg.Wait()
	if err := cmp.Or(psErr, tErr, outErr); err != nil {
		return err
	}
	if wmErr != nil {
		return fmt.Errorf("computation %s partition %s: read system watermark: %w", r.comp.ID, r.job.PartitionID, wmErr)
	}
	for _, s := range r.sources {
		if b, ok := ps[offsetStatePrefix+s.id]; ok {
			if err := yson.Unmarshal(b, &s.offset); err != nil {
				return fmt.Errorf("partition %s: state %s%s: %w", r.job.PartitionID, offsetStatePrefix, s.id, err)
			}
		}
	}
	for id := range r.asyncSinks {
		if b, ok := ps[seqStatePrefix+id]; ok {
			var n int64
			if err := yson.Unmarshal(b, &n); err != nil {
				return fmt.Errorf("partition %s: state %s%s: %w", r.job.PartitionID, seqStatePrefix, id, err)
			}
			r.seq[id] = n
		}
	}
	for name, b := range ps {
		if user, ok := strings.CutPrefix(name, userStatePrefix); ok {
			r.partState[user] = b
		}
	}
	var timers []epoch.DueTimer
	for _, row := range timerRows {
		t, err := timerFromRow(row)
		if err != nil {
			return fmt.Errorf("computation %s: %w", r.comp.ID, err)
		}
		timers = append(timers, t)
	}
	r.timers = epoch.NewTimerSet(timers)
	r.pendingTimers.Store(int64(r.timers.Len()))
	r.outbox.add(outs)
	r.stampMu.Lock()
	r.lastStamp = max(r.lastStamp, published)
	r.stampMu.Unlock()
	r.startSwiftSources(published)
	r.loaded.Store(true)
	return nil
}

func timerFromRow(row ytstore.TimerRow) (epoch.DueTimer, error) {
	key, err := epoch.DecodeKey(row.Key)
	if err != nil {
		return epoch.DueTimer{}, fmt.Errorf("timer %s: key: %w", row.MessageID, err)
	}
	var payload flow.Row
	if len(row.Payload) > 0 {
		var err error
		if payload, err = decodePayload(row.Payload, nil); err != nil {
			return epoch.DueTimer{}, fmt.Errorf("timer %s: payload: %w", row.MessageID, err)
		}
	}
	return epoch.DueTimer{KeyHash: row.KeyHash, Timer: flow.Timer{
		StreamID: row.StreamID, Key: key, Trigger: row.TriggerTimestamp, Payload: payload,
		MessageID: row.MessageID, EventTimestamp: row.EventTimestamp,
	}}, nil
}

func (r *runner) timerRow(t epoch.DueTimer, systemTS uint64) (ytstore.TimerRow, error) {
	row := ytstore.TimerRow{
		ComputationID: r.comp.ID, KeyHash: t.KeyHash, Key: epoch.EncodeKey(t.Timer.Key), MessageID: t.Timer.MessageID,
		StreamID: t.Timer.StreamID, SystemTimestamp: systemTS, EventTimestamp: t.Timer.EventTimestamp, TriggerTimestamp: t.Timer.Trigger,
	}
	if t.Timer.Payload != nil {
		b, err := yson.Marshal(t.Timer.Payload)
		if err != nil {
			return row, fmt.Errorf("timer payload: %w", err)
		}
		row.Payload = b
	}
	return row, nil
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
			r.stats.phases.since(&r.stats.phases.idle, start)
		} else if pace := r.pace(); pace > 0 {
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

// pace is the shortest time from the start of the last epoch to the start of the next: half
// of batch_duration when the epoch's largest batch took at least a tenth of
// max_rows_per_batch without filling it (a full batch means a backlog: go on at once; a
// small one a trickle, where latency matters more than the commit's cost), else 0. A
// draining or completing job never waits.
func (r *runner) pace() time.Duration {
	if r.batchRows >= r.batchLimit || r.batchRows*paceMinShare < r.batchLimit {
		return 0
	}
	if r.draining.Load() || r.retiring.Load() || r.completing() {
		return 0
	}
	return r.dyn.BatchDuration / paceFraction
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

// timerClock is the time of each timer stream: the pipeline SystemWatermark for
// system_time streams, the wall clock for current_time ones, and the pipeline
// EventWatermark for event_time ones (the default; the wall clock in a pipeline created
// before event watermarks existed, which never gets one).
//
// A completing job's clock is +inf for every stream: completion is the end of all time.
func (r *runner) timerClock(now uint64, completing bool) func(streamID string) uint64 {
	return func(streamID string) uint64 {
		if completing {
			return math.MaxUint64
		}
		t := r.comp.Timers[streamID]
		switch {
		case t != nil && t.TimeType == "system_time":
			return r.w.systemWatermark.Load()
		case t != nil && t.TimeType == "current_time":
			return now
		}
		switch r.w.eventTime.Load() {
		case eventTimeWatermark:
			// Invariant: an event_time timer fires once the pipeline EventWatermark passed its
			// trigger (TestEventTimeTimersFollowTheWatermark), shifted back by the largest
			// delay of its streams_with_delays (TestEventTimerStreamDelays).
			return eventClock(r.w.eventWatermark.Load(), t)
		case eventTimeWallClock:
			return now // a pipeline without event watermarks (created by an older version)
		}
		return 0 // not known yet: nothing fires
	}
}

// eventClock is the time of an event_time timer stream at pipeline EventWatermark ew: ew
// minus the largest delay of the stream's streams_with_delays (one watermark covers every
// stream, so the stream with the largest delay governs); +inf stays +inf.
func eventClock(ew uint64, t *spec.Timer) uint64 {
	if ew == math.MaxUint64 || t == nil {
		return ew
	}
	var delay uint64
	for _, d := range t.StreamsWithDelays {
		if d > 0 {
			delay = max(delay, uint64(d.Microseconds()))
		}
	}
	return ew - min(ew, delay)
}

func nowMicros() uint64 { return uint64(time.Now().UnixMicro()) }

// stamp is the time of an epoch that starts at now by the worker's clock: never before an
// earlier epoch's of the job, nor before the @system_watermark the job loaded with. Its
// outputs carry it as their system timestamp.
//
// Invariant: a job never produces a message below the SystemWatermark it started under or
// below one it produced before, even when the worker's clock steps back or lags the clocks
// that moved the watermark, so a reader's dedup row of it is not collected while it can
// still be retransmitted (TestEpochStampsNeverGoBack).
func (r *runner) stamp(now uint64) uint64 {
	r.stampMu.Lock()
	defer r.stampMu.Unlock()
	r.lastStamp = max(r.lastStamp, now)
	return r.lastStamp
}

func (r *runner) leaseCheckPeriod() uint64 {
	p := r.dyn.LeaseCheckPeriod
	if r.w.cfg.LeaseCheckPeriod > 0 {
		p = r.w.cfg.LeaseCheckPeriod
	}
	return uint64(p.Microseconds())
}

// epoch runs one epoch. It returns the time of its commit (0 when it did not commit) and
// whether it found nothing to do.
func (r *runner) epoch(ctx context.Context, lastCommit uint64) (committedAt uint64, idle bool, err error) {
	if len(r.swiftSrc) > 0 {
		return r.swiftSourceEpoch(ctx, lastCommit)
	}
	limit := r.dyn.MaxRowsPerBatch
	if limit <= 0 {
		limit = 1000
	}
	now := r.stamp(nowMicros())
	phase := time.Now()
	// While the epoch is open, its outputs will carry now as their system timestamp.
	r.openEpoch.Store(now)
	defer r.openEpoch.Store(0)
	draining, retiring := r.draining.Load(), r.retiring.Load()
	// Invariant: a job whose outputs are not delivered reads nothing new, so a slow reader
	// back-pressures its writers (TestOutboxLimitBackPressure).
	blocked := r.outbox.size() >= r.w.cfg.OutboxLimit
	b := &epoch.Batch{Now: now, DistinctInputs: true} // the inbox holds one entry per id
	if retiring {
		// A retiring job processes no input: what it buffered goes unacknowledged, so the
		// senders retransmit it to the key's new owner.
		r.inbox.drop()
	} else if !blocked {
		b.Inputs = r.inbox.takeInto(r.inputs, limit)
		r.inputs = b.Inputs
		r.noteBatch(len(b.Inputs), limit)
	}
	completing := r.completing() && r.upstreamDrained.Load()
	// Invariant: a completing job fires every pending timer before it reports drained; a
	// stopping or pausing job keeps its timers for the next start (TestCompletionFiresTimers).
	if (!draining || completing) && !blocked {
		b.Timers = r.timers.DueBy(r.timerClock(now, completing), limit)
	}
	if r.applied.Swap(draining) != draining {
		r.w.wakeStatus()
	}
	sourceRows, sourcesRead := 0, false
	held := len(r.sources) > 0 && !draining && !blocked && r.alignmentHold()
	for _, s := range r.sources {
		if s.ended || draining || blocked || held {
			continue
		}
		rows, ahead, err := s.read(ctx, int64(limit))
		if err != nil {
			r.inbox.release(inputIDs(b.Inputs))
			r.log.Warn("source read failed", log.String("source", s.id), log.Error(err))
			r.noteProblem("read source "+s.id, err)
			return 0, true, nil
		}
		if ahead {
			r.stats.readAheads.Add(1)
		}
		r.noteBatch(len(rows), limit)
		sourceRows, sourcesRead = sourceRows+len(rows), true
		if len(rows) == 0 && s.src.Finite() {
			s.ended = true
		}
		for _, row := range rows {
			b.Sources = append(b.Sources, epoch.SourceRow{
				SourcePartition: epoch.SourcePartition{SourceID: s.id, Partition: r.job.SourcePartition},
				Offset:          row.Offset, Payload: flow.Row(row.Columns),
				SystemTimestamp: tsMicros(row.Timestamp, now), EventTimestamp: tsMicros(row.Timestamp, now),
			})
		}
	}
	if sourcesRead {
		r.noteSourceRead(sourceRows, now)
	}
	r.updateCompleted()
	empty := len(b.Inputs) == 0 && len(b.Timers) == 0 && len(b.Sources) == 0
	phase = r.stats.phases.since(&r.stats.phases.fetch, phase)
	r.stats.phases.rows.Add(int64(len(b.Inputs) + len(b.Timers) + len(b.Sources)))
	done := r.outbox.takeDoneIf(r.deleteDoneNow(draining))
	if empty && len(done) == 0 && now-lastCommit < r.leaseCheckPeriod() {
		return 0, true, nil
	}
	abandon := func() {
		r.inbox.release(inputIDs(b.Inputs))
		r.outbox.giveBack()
	}

	if r.cfg.Swift {
		defer r.stats.phases.since(&r.stats.phases.process, phase) // a swift map only processes
		return r.swiftEpoch(ctx, b, now)
	}
	// The epoch's three reads are independent: its token, the dedup lookup of its inputs and
	// the states of every key it may invoke (a superset of the plan's keys: duplicates are
	// not known yet). They run concurrently.
	pre := r.prepare(ctx, b)
	defer pre.tx.Release() // a no-op once the commit used it
	phase = r.stats.phases.since(&r.stats.phases.prepare, phase)
	if pre.tokenErr != nil {
		abandon()
		r.log.Warn("epoch: generate timestamp failed", log.Error(pre.tokenErr))
		r.noteProblem("generate timestamp", pre.tokenErr)
		return 0, true, nil
	}
	token := pre.token
	b.SeqNo = token
	if r.fresh != nil && r.cfg.Dedup {
		r.fresh.started(token)
	}

	committedSet := map[string]bool{}
	if pre.dedupErr != nil {
		abandon()
		r.log.Warn("epoch: dedup lookup failed", log.Error(pre.dedupErr))
		r.noteProblem("dedup lookup", pre.dedupErr)
		return 0, true, nil
	}
	for i, f := range pre.found {
		if !f.Found {
			continue
		}
		in := b.Inputs[i]
		committedSet[in.Message.MessageID] = true
		// Invariant: a copy of a committed message with another payload is reported, and the
		// committed copy stands (TestCommittedPayloadMismatchReported).
		if f.PayloadFingerprint != 0 && in.PayloadFingerprint != 0 && f.PayloadFingerprint != in.PayloadFingerprint {
			r.inbox.reportCommittedMismatch(in, f.PayloadFingerprint)
		}
	}
	if pre.statesErr != nil {
		abandon()
		return 0, false, fmt.Errorf("job %s: load states: %w", r.job.JobID, pre.statesErr)
	}
	plan := r.planner.Plan(&r.cfg, b, func(in epoch.Input) bool { return committedSet[in.Message.MessageID] })
	if len(plan.Duplicates) > 0 {
		// Invariant: inputs the dedup index already holds are acknowledged at once and dropped
		// (TestWorkerDropsDuplicates).
		r.inbox.ack(plan.Duplicates)
		total := r.stats.duplicates.Add(int64(len(plan.Duplicates)))
		r.log.Info("duplicates dropped", log.Int("count", len(plan.Duplicates)), log.Int64("duplicates_dropped", total))
	}

	results, err := r.invoke(plan, pre.states, now)
	if err != nil {
		abandon()
		return 0, false, err
	}
	c, err := r.planner.Build(&r.cfg, b, plan, results)
	r.releaseResults(results)
	if err != nil {
		abandon()
		return 0, false, err
	}
	if err := r.assignEventTimes(c.Stored); err != nil {
		abandon()
		return 0, false, err
	}
	w, stored, seqAfter, err := r.write(c, b, token)
	if err != nil {
		abandon()
		return 0, false, err
	}
	w.OutputsDone = done
	w.Tx = pre.tx
	if !epoch.NeedCommit(c, len(done), now, lastCommit, r.leaseCheckPeriod()) {
		abandon()
		return 0, true, nil
	}
	// Invariant: source offsets advance only with the commit; rows read ahead during it are
	// used only from the offset it committed (TestSourceReadAhead).
	if !draining {
		for _, s := range r.sources {
			if off, ok := c.Offsets[epoch.SourcePartition{SourceID: s.id, Partition: r.job.SourcePartition}]; ok && !s.ended {
				s.readAhead(ctx, off, int64(limit))
			}
		}
	}
	phase = r.stats.phases.since(&r.stats.phases.process, phase)
	err = r.commit(ctx, w)
	r.stats.phases.since(&r.stats.phases.commit, phase)
	if err != nil {
		abandon()
		if errors.Is(err, errNotApplied) && ctx.Err() == nil {
			r.failures++
			if r.failures < maxNotApplied {
				r.log.Warn("epoch did not apply; recomputing it", log.Int("attempt", r.failures), log.Error(err))
				r.noteProblem("commit", err)
				return 0, true, nil
			}
		}
		return 0, false, err
	}
	r.failures = 0
	r.problem.Store(nil)
	r.outbox.committed()
	if r.fresh != nil && r.cfg.Dedup {
		r.fresh.committed(plan.Fresh)
	}
	if !r.cfg.Source {
		r.stateCache.committed(w.States)
	} else {
		r.noteEventTimes(b, c.Stored)
	}

	// After the commit: the epoch is durable.
	r.inbox.ack(c.Acks)
	r.timers.Apply(c)
	r.pendingTimers.Store(int64(r.timers.Len()))
	if r.cfg.Source {
		for _, st := range c.States {
			if st.Value == nil {
				delete(r.partState, st.Name)
			} else {
				r.partState[st.Name] = st.Value
			}
		}
	}
	r.outbox.add(stored)
	for id, n := range seqAfter {
		r.seq[id] = n
	}
	for _, s := range r.sources {
		if off, ok := c.Offsets[epoch.SourcePartition{SourceID: s.id, Partition: r.job.SourcePartition}]; ok {
			s.committed(off)
			s.advanceCommitted(ctx, r.log, time.Now(), s.ended)
		}
	}
	var n int
	r.groups, n = groupByDest(r.groups, c.BestEffort)
	for _, o := range r.groups[:n] {
		rows := make([]map[string]any, len(o.msgs))
		for i, m := range o.msgs {
			rows[i] = map[string]any(m.Payload)
		}
		r.bestEffort[o.dest].Offer(rows)
	}
	if !c.Empty() || len(done) > 0 {
		r.stats.epochs.Add(1)
	}
	r.stats.lastCommitTS.Store(w.Token)
	r.updateCompleted()
	return nowMicros(), empty, nil
}

// swiftEpoch processes the batch of a swift map job: it persists nothing; outputs are held
// in memory until delivered, and an input is acknowledged upstream only once all its outputs
// are (at once when it has none). After a restart the upstream retransmits the inputs not
// acknowledged, and their recomputed outputs carry the same ids (epoch.SwiftOutputID), which
// the readers' dedup absorbs. Swift map functions must be deterministic and stateless.
func (r *runner) swiftEpoch(ctx context.Context, b *epoch.Batch, now uint64) (uint64, bool, error) {
	if len(b.Inputs) == 0 {
		return 0, true, nil
	}
	release := func() { r.inbox.release(inputIDs(b.Inputs)) }
	plan := epoch.PlanEpoch(&r.cfg, b, nil)
	r.inbox.ack(plan.Duplicates) // repeats within the batch: the first copy stands for them
	results, err := r.invoke(plan, nil, now)
	if err != nil {
		release()
		return 0, false, err
	}
	c, err := epoch.BuildCommit(&r.cfg, b, plan, results)
	r.releaseResults(results)
	if err != nil {
		release()
		return 0, false, err
	}
	if len(c.States) > 0 || len(c.TimersSet) > 0 || len(c.Sync) > 0 || len(c.BestEffort) > 0 {
		release()
		return 0, false, fmt.Errorf("job %s: swift computation %s: the process function wrote state or timers; swift map computations are stateless", r.job.JobID, r.comp.ID)
	}
	rows := make([]ytstore.OutputRow, 0, len(c.Stored))
	parents := make([][]string, 0, len(c.Stored))
	payloads, err := r.storedPayloads(c.Stored)
	if err != nil {
		release()
		return 0, false, err
	}
	born := make(map[string]uint64, len(b.Inputs))
	for _, in := range b.Inputs {
		born[in.Message.MessageID] = in.Born
	}
	for i, o := range c.Stored {
		rows = append(rows, ytstore.OutputRow{
			PartitionID: r.job.PartitionID, Destination: o.Destination.ID, MessageID: o.Message.MessageID, StreamID: o.Message.StreamID,
			KeyHash: o.KeyHash, Key: epoch.EncodeKey(o.Message.Key), Payload: payloads[i],
			EventTimestamp: o.Message.EventTimestamp, SystemTimestamp: o.Message.SystemTimestamp,
			Born: swiftBirth(o.Parents, born),
		})
		parents = append(parents, o.Parents)
	}
	r.inbox.ack(r.outbox.addSwift(c.Acks, rows, parents))
	r.stats.epochs.Add(1)
	r.problem.Store(nil)
	return now, false, nil
}

func tsMicros(ytTimestamp, fallback uint64) uint64 {
	if ytTimestamp == 0 {
		return fallback
	}
	// YT timestamps hold unix seconds above bit 30.
	return (ytTimestamp >> 30) * 1_000_000
}

func inputIDs(ins []epoch.Input) []string {
	ids := make([]string, len(ins))
	for i, in := range ins {
		ids[i] = in.Message.MessageID
	}
	return ids
}

func (r *runner) dedupKey(in epoch.Input) ytstore.DedupKey {
	k := ytstore.DedupKey{ComputationID: r.comp.ID, KeyHash: epoch.KeyHash(in.Message.Key), MessageID: in.Message.MessageID, Compact: r.compact}
	if !r.compact { // the compact index keys by hash and message id only
		k.Key = epoch.EncodeKey(in.Message.Key)
	}
	return k
}

// doneBatch is how many finished output store rows (chunks acknowledged by every reader or
// delivered by their sink) wait to be deleted together; see runner.deleteDoneNow.
const doneBatch = 8

// deleteDoneNow says when an epoch deletes the finished output store rows: once doneBatch of
// them wait, once the oldest waited batch_duration, and at once while the job drains (its
// completion waits for the deletions). Deleting them every few epochs instead of in every
// one saves most epochs a delete_rows request, and an idle job a commit; until deleted, a
// finished row is still counted in flight and holds the SystemWatermark back, and a job that
// restarts before deleting it resends it, which its reader acknowledges as a duplicate
// (TestDoneRowsDeletedInBatches).
func (r *runner) deleteDoneNow(draining bool) func(n int, since time.Time) bool {
	wait := r.dyn.BatchDuration
	if wait <= 0 {
		wait = time.Second
	}
	return func(n int, since time.Time) bool {
		return draining || n >= doneBatch || time.Since(since) >= wait
	}
}

// prepared is what an epoch reads before it plans: its token, which inputs the dedup index
// holds (found[i] for b.Inputs[i]) and the states of its keys (encoded key -> name -> value).
type prepared struct {
	token    uint64
	tokenErr error
	// tx is the epoch's tablet transaction, begun alongside the reads (nil when beginning it
	// failed: the commit then begins its own). Released when the epoch ends.
	tx *ytstore.EpochTx

	found    []ytstore.DedupHit
	dedupErr error

	states    map[string]map[string][]byte
	statesErr error
	// loadedHashes are the key hashes read from the table (not cached), with their rows.
	loadedHashes []uint64
	loadedRows   []ytstore.StateRow
}

// prepare begins the epoch's tablet transaction and takes its token (the transaction's start
// timestamp, or a fresh timestamp), looks its inputs up in the dedup index and loads the
// states of every key of its inputs and timers, concurrently.
func (r *runner) prepare(ctx context.Context, b *epoch.Batch) *prepared {
	if r.keyStates == nil {
		r.keyStates, r.keyHashes = map[string]map[string][]byte{}, map[uint64]bool{}
	}
	clear(r.keyStates) // the last epoch's, dead
	pre := &prepared{states: r.keyStates}
	var wg sync.WaitGroup
	wg.Go(func() {
		tx, err := r.store.BeginEpochTx(ctx)
		if err != nil {
			r.log.Debug("epoch: beginning the tablet transaction ahead failed; the commit begins one", log.Error(err))
		} else {
			pre.tx = tx
			// The token is the transaction's start timestamp when its id tells it (as
			// Flow's partition_transactions row holds last_transaction_start_timestamp):
			// unique, and later than every token drawn before, like a fresh timestamp.
			if start := tx.StartTimestamp(); start != 0 {
				pre.token = start
				return
			}
		}
		pre.token, pre.tokenErr = r.store.GenerateTimestamp(ctx)
	})
	if r.cfg.Dedup && len(b.Inputs) > 0 {
		// Most epochs look nothing up (every input is fresh): the buffers are made for the
		// first input that needs a lookup.
		var keys []ytstore.DedupKey
		var at []int // b.Inputs index of keys[i]
		for i := range b.Inputs {
			if r.fresh == nil || r.fresh.needLookup(&b.Inputs[i]) {
				if keys == nil {
					keys, at = make([]ytstore.DedupKey, 0, len(b.Inputs)-i), make([]int, 0, len(b.Inputs)-i)
				}
				keys = append(keys, r.dedupKey(b.Inputs[i]))
				at = append(at, i)
			}
		}
		if skipped := len(b.Inputs) - len(keys); skipped > 0 {
			r.stats.lookupsSkipped.Add(int64(skipped))
		}
		if len(keys) > 0 {
			pre.found = make([]ytstore.DedupHit, len(b.Inputs)) // nil: nothing found
			wg.Go(func() {
				hits, err := r.store.LookupDedupRows(ctx, keys)
				if err != nil {
					pre.dedupErr = err
					return
				}
				for i, h := range hits {
					pre.found[at[i]] = h
				}
			})
		}
	}
	if !r.cfg.Source && !r.cfg.Swift {
		seen := r.keyHashes
		clear(seen)
		var hashes []uint64
		add := func(h uint64) {
			if !seen[h] {
				seen[h] = true
				hashes = append(hashes, h)
			}
		}
		for _, t := range b.Timers {
			add(t.KeyHash)
		}
		for _, in := range b.Inputs {
			add(epoch.KeyHash(in.Message.Key))
		}
		missing := hashes[:0:0]
		for _, h := range hashes {
			if !r.stateCache.get(h, pre.states, r.shareStates) {
				missing = append(missing, h)
			}
		}
		if len(missing) > 0 {
			wg.Go(func() {
				rows, err := r.store.LoadStates(ctx, r.comp.ID, missing)
				if err != nil {
					pre.statesErr = err
					return
				}
				for _, row := range rows {
					k := string(row.Key)
					if pre.states[k] == nil {
						pre.states[k] = map[string][]byte{}
					}
					pre.states[k][row.Name] = row.State
				}
				pre.loadedHashes, pre.loadedRows = missing, rows
			})
		}
	}
	wg.Wait()
	if pre.statesErr == nil {
		r.stateCache.loaded(pre.loadedHashes, pre.loadedRows)
	}
	return pre
}

// invoke calls the process function per group of the plan; states are the loaded states of
// (at least) the plan's keys.
func (r *runner) invoke(plan *epoch.Plan, states map[string]map[string][]byte, now uint64) ([]*flow.Result, error) {
	// A source job invokes once per row with the partition's state; later rows of the epoch
	// see the writes of earlier ones.
	var cur map[string][]byte
	if r.cfg.Source {
		cur = make(map[string][]byte, len(r.partState))
		for k, v := range r.partState {
			cur[k] = v
		}
	}
	// The invocations and results of one epoch live in the runner's buffers, reused by the
	// next epoch (see releaseResults).
	if cap(r.invs) < len(plan.Groups) {
		r.invs = make([]flow.Invocation, len(plan.Groups))
		r.results = make([]*flow.Result, len(plan.Groups))
	}
	results := r.results[:len(plan.Groups)]
	invs := r.invs[:len(plan.Groups)]
	var keyBuf []byte
	for i, g := range plan.Groups {
		inv := &invs[i]
		*inv = flow.Invocation{Key: g.Key, Timers: g.Timers, Messages: g.Messages, Parameters: r.params, Now: now}
		if r.cfg.Source {
			inv.State = cur
		} else {
			keyBuf = epoch.AppendKey(keyBuf[:0], g.Key)
			inv.State = states[string(keyBuf)]
		}
		res, err := r.fn.Invoke(inv)
		if err != nil {
			r.releaseResults(results[:i])
			if row := g.SourceRow(); row != nil {
				// Invariant: a failing source row is named by queue path, tablet and row
				// offset (TestSourceRowErrorNamesQueueRow).
				return nil, fmt.Errorf("job %s: computation %s: source %s: %s row offset %d: process function %s: %w",
					r.job.JobID, r.comp.ID, row.SourceID, r.sourceName(row.SourceID), row.Offset, r.comp.ProcessingFunction, err)
			}
			return nil, fmt.Errorf("job %s: computation %s: key %v: process function %s: %w", r.job.JobID, r.comp.ID, g.Key, r.comp.ProcessingFunction, err)
		}
		if r.cfg.Source && res != nil && len(res.StateWrites) > 0 {
			// Copy on write: earlier results keep the state they saw.
			next := make(map[string][]byte, len(cur))
			for k, v := range cur {
				next[k] = v
			}
			for k, v := range res.StateWrites {
				if v == nil {
					delete(next, k)
				} else {
					next[k] = v
				}
			}
			cur = next
		}
		results[i] = res
	}
	return results, nil
}

// releaseResults releases the results of an epoch (flow.Result.Release) once its write set is
// built from them, and drops what the runner's invocation buffers point to.
func (r *runner) releaseResults(results []*flow.Result) {
	for i, res := range results {
		res.Release()
		results[i] = nil
	}
	clear(r.invs[:min(len(results), len(r.invs))])
}

type destMsgs struct {
	dest string
	msgs []flow.Message
}

// groupByDest groups outs by destination, in the order destinations first appear, into the
// buffers of groups (the runner's, reused from epoch to epoch: what an earlier call returned
// is overwritten); it returns the buffers and the first n of them hold the groups. An epoch
// has few destinations: they are found by a linear search.
func groupByDest(groups []destMsgs, outs []epoch.Out) (all []destMsgs, n int) {
	for i := range groups {
		clear(groups[i].msgs) // drop the payloads the previous epoch's groups point to
		groups[i] = destMsgs{msgs: groups[i].msgs[:0]}
	}
	for _, o := range outs {
		i := 0
		for i < n && groups[i].dest != o.Destination.ID {
			i++
		}
		if i == n {
			if n == len(groups) {
				groups = append(groups, destMsgs{})
			}
			groups[n].dest = o.Destination.ID
			n++
		}
		groups[i].msgs = append(groups[i].msgs, o.Message)
	}
	return groups, n
}

// write converts the core's commit into the store's write set. It returns the output store
// rows to hand to the sender after the commit and the sink sequence numbers it used up.
func (r *runner) write(c *epoch.Commit, b *epoch.Batch, token uint64) (*ytstore.EpochWrite, []ytstore.OutputRow, map[string]int64, error) {
	w := &ytstore.EpochWrite{PartitionID: r.job.PartitionID, Lease: r.job.LeaseID, Token: token, PartitionStates: map[string][]byte{}}
	// The dedup and state rows live in the runner's buffers, reused by the next epoch (w is
	// dead once the epoch ended); the output rows go on to the outbox.
	w.Dedup, w.States = slices.Grow(r.dedupRows[:0], len(c.Register)), r.stateRows[:0]
	defer func() { r.dedupRows, r.stateRows = w.Dedup, w.States }()
	w.OutputsAdd = make([]ytstore.OutputRow, 0, len(c.Stored))
	keys := keyArena{buf: make([]byte, 0, 24*(len(c.States)+len(c.Stored)))}
	for _, in := range c.Register {
		w.Dedup = append(w.Dedup, ytstore.DedupRow{DedupKey: r.dedupKey(in), SystemTimestamp: in.Message.SystemTimestamp, PayloadFingerprint: in.PayloadFingerprint})
	}
	for _, s := range c.States {
		if r.cfg.Source {
			w.PartitionStates[userStatePrefix+s.Name] = s.Value
			continue
		}
		w.States = append(w.States, ytstore.StateRow{ComputationID: r.comp.ID, KeyHash: s.KeyHash, Key: keys.add(s.Key), Name: s.Name, State: s.Value})
	}
	for _, t := range c.TimersFired {
		row, err := r.timerRow(t, b.Now)
		if err != nil {
			return nil, nil, nil, err
		}
		w.TimersFired = append(w.TimersFired, row)
	}
	for _, t := range c.TimersSet {
		row, err := r.timerRow(t, b.Now)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("job %s: %w", r.job.JobID, err)
		}
		w.TimersSet = append(w.TimersSet, row)
	}
	seq := map[string]int64{}
	payloads, err := r.storedPayloads(c.Stored)
	if err != nil {
		return nil, nil, nil, err
	}
	for i, o := range c.Stored {
		row := ytstore.OutputRow{
			PartitionID: r.job.PartitionID, Destination: o.Destination.ID, MessageID: o.Message.MessageID, StreamID: o.Message.StreamID,
			KeyHash: o.KeyHash, Payload: payloads[i], EventTimestamp: o.Message.EventTimestamp, SystemTimestamp: o.Message.SystemTimestamp,
		}
		if o.Destination.Kind == epoch.ToComputation {
			row.Key = keys.add(o.Message.Key)
		} else {
			n, ok := seq[o.Destination.ID]
			if !ok {
				n = r.seq[o.Destination.ID]
			}
			row.SequenceNumber = n
			seq[o.Destination.ID] = n + 1
		}
		w.OutputsAdd = append(w.OutputsAdd, row)
	}
	r.memRefs = handOver(c.Stored, w.OutputsAdd, [][]epoch.Out{c.Sync, c.BestEffort}, r.memRefs)
	// One output store row per destination and epoch (split at ytstore.MaxChunkMessages).
	ytstore.AssignChunks(w.OutputsAdd, token)
	for id, n := range seq {
		b, _ := yson.Marshal(n)
		w.PartitionStates[seqStatePrefix+id] = b
	}
	for sp, off := range c.Offsets {
		b, _ := yson.Marshal(off)
		w.PartitionStates[offsetStatePrefix+sp.SourceID] = b
	}
	var n int
	r.groups, n = groupByDest(r.groups, c.Sync)
	for _, g := range r.groups[:n] {
		sw, err := r.syncSinks[g.dest].Write(g.msgs)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("job %s: %s: %w", r.job.JobID, g.dest, err)
		}
		w.Sinks = append(w.Sinks, sw)
	}
	return w, w.OutputsAdd, seq, nil
}

// keyArena encodes the keys of one epoch's rows into one buffer instead of one allocation
// per key; each encoding is its own full slice of it (an append to it cannot overwrite the
// next one).
type keyArena struct{ buf []byte }

func (a *keyArena) add(k flow.Key) []byte {
	start := len(a.buf)
	a.buf = epoch.AppendKey(a.buf, k)
	return a.buf[start:len(a.buf):len(a.buf)]
}

// storedPayloads encodes the payloads of outs (YSON).
func (r *runner) storedPayloads(outs []epoch.Out) ([][]byte, error) {
	rows := make([]flow.Row, len(outs))
	for i, o := range outs {
		rows[i] = o.Message.Payload
	}
	payloads, bad, err := marshalPayloads(rows)
	if err != nil {
		if bad >= 0 {
			o := outs[bad].Message
			return nil, fmt.Errorf("job %s: output %s on stream %s: payload: %w", r.job.JobID, o.MessageID, o.StreamID, err)
		}
		return nil, fmt.Errorf("job %s: %w", r.job.JobID, err)
	}
	return payloads, nil
}

// errNotApplied reports an epoch whose commit definitely did not apply: the runner drops
// the epoch and recomputes it from durable state (dedup, states) in the next iteration.
var errNotApplied = errors.New("epoch not applied")

// commit commits w once, resolving an unknown outcome by re-reading the partition token.
// It returns nil when the epoch is durable, an error wrapping ErrZombie when the lease is
// dead, and errNotApplied when the epoch did not apply.
func (r *runner) commit(ctx context.Context, w *ytstore.EpochWrite) error {
	err := r.commits.CommitEpoch(ctx, w)
	outcome := outcomeOf(err)
	if outcome == epoch.LeaseLost {
		// "No such transaction" may name the epoch's own tablet transaction (e.g. its commit
		// reply was lost and the retried request found it finished), not the lease: only a
		// lease that is really gone makes the job a zombie.
		// Invariant: a live lease never stops the job; the outcome is then resolved by the
		// partition token (TestCommitLeaseAliveRechecks).
		if alive, aerr := r.commits.TxAlive(ctx, w.Lease); aerr == nil && alive {
			outcome = epoch.Unknown
		}
	}
	next := epoch.AfterCommit(outcome)
	backoff := 100 * time.Millisecond
	for next == epoch.Recheck {
		stored, found, rerr := r.commits.PartitionToken(ctx, r.job.PartitionID)
		if rerr == nil {
			// Invariant: an unknown outcome is resolved by the partition token, so an epoch
			// that applied is not applied twice (TestCommitUnknownRecheck).
			next = epoch.AfterRecheck(w.Token, stored, found)
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.log.Warn("commit outcome unknown; re-reading the partition token failed", log.Error(rerr))
		sleep(ctx, backoff)
		backoff = min(2*backoff, 2*time.Second)
	}
	switch next {
	case epoch.Proceed:
		return nil
	case epoch.Stop:
		// Invariant: a commit rejected by a dead lease stops the job at once; nothing else
		// is written (TestZombieCommitRejected, TestZombieJobStops).
		r.log.Warn("lease lost: job stops", log.Error(err))
		return fmt.Errorf("job %s: %w: %w", r.job.JobID, ErrZombie, err)
	}
	if err == nil {
		err = errors.New("the partition token does not match: the commit did not apply")
	}
	return fmt.Errorf("job %s: %w: %w", r.job.JobID, errNotApplied, err)
}

func outcomeOf(err error) epoch.Outcome {
	switch {
	case err == nil:
		return epoch.Committed
	case errors.Is(err, ytstore.ErrNotApplied):
		return epoch.Rejected
	case errors.Is(err, ytstore.ErrLeaseLost):
		return epoch.LeaseLost
	case errors.Is(err, ytstore.ErrCommitUnknown):
		return epoch.Unknown
	}
	return epoch.Rejected
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// updateCompleted marks a source job completed once every finite source is exhausted at
// its committed offset; the job keeps running to deliver its outbox.
func (r *runner) updateCompleted() {
	if len(r.sources) == 0 {
		return
	}
	for _, s := range r.sources {
		if !s.ended {
			return
		}
	}
	if !r.completed.Swap(true) {
		r.w.wakeStatus()
	}
}

// status is the job's row for job_status.
func (r *runner) status(state, errText string) ytstore.JobStatus {
	inbox := int64(r.inbox.len())
	if errText == "" {
		if p := r.problem.Load(); p != nil {
			errText = *p
		}
	}
	n, last := r.inbox.payloadMismatches()
	if seen := r.stats.mismatchesLogged.Swap(n); n > seen {
		r.log.Warn("payload mismatch: a message id was received again with another payload", log.Int64("payload_mismatches", n), log.String("latest", last))
	}
	if n > 0 && errText == "" {
		errText = fmt.Sprintf("job %s (computation %s): %d payload mismatches; latest: %s", r.job.JobID, r.comp.ID, n, last)
	}
	updated := nowMicros()
	return ytstore.JobStatus{
		JobID: r.job.JobID, WorkerID: r.w.id, State: state, Error: errText, SystemWatermark: r.systemWatermark(),
		EventWatermark: ytstore.OptionalUint64(r.eventWatermark()), EventIdleSince: ytstore.OptionalUint64(r.eventIdleSince()),
		Epoch: r.stats.epochs.Load(), LastCommitTS: r.stats.lastCommitTS.Load(), InputLag: inbox, UpdatedAt: updated,
		InFlight: r.inFlight(inbox), Draining: r.applied.Load(),
	}
}

// inFlight is what the job still holds: buffered inputs, undelivered outputs, swift source
// rows not committed past and, while completing, pending timers.
func (r *runner) inFlight(inbox int64) int64 {
	n := inbox + int64(r.outbox.held()) + r.swiftSourceHeld()
	if r.completing() {
		n += r.pendingTimers.Load()
	}
	return n
}

// systemWatermark is the smallest system timestamp of what the job holds: buffered inputs,
// rows still in its output store, the outputs of the epoch in progress and of swift source
// rows not committed past (swiftSource.minSystemTS); 0 when it holds nothing.
//
// Invariant: a message is counted from the moment the job receives or produces it until its
// output store row is deleted by a committed epoch, so the dedup index is never collected
// below a message that can still be retransmitted (TestSystemWatermarkCoversOutbox).
func (r *runner) systemWatermark() uint64 {
	var least uint64
	for _, ts := range []uint64{r.openEpoch.Load(), r.inbox.minSystemTS(), r.outbox.minSystemTS(), r.swiftSourceMinTS()} {
		if ts != 0 && (least == 0 || ts < least) {
			least = ts
		}
	}
	return least
}

// JobStats are the counters of one job, as served on the worker's /stats endpoint.
type JobStats struct {
	ComputationID string `json:"computation_id"`
	PartitionID   string `json:"partition_id"`
	Epochs        int64  `json:"epochs"`
	// Duplicates counts inputs dropped because the dedup index already held them.
	Duplicates int64 `json:"duplicates_dropped"`
	// BestEffortDropped counts rows dropped by at-most-once sinks whose queue was full.
	BestEffortDropped int64 `json:"best_effort_dropped"`
	InboxLen          int   `json:"inbox"`
	OutboxLen         int   `json:"outbox"`
	Completed         bool  `json:"completed"`
	// PayloadMismatches counts messages received again with a different payload under the
	// same id: a swift computation that is not deterministic.
	PayloadMismatches int64 `json:"payload_mismatches"`
	// PushesLocal, PushesInProcess and PushesHTTP count the pushes this job sent to reader
	// jobs on its own worker and on other workers of its process (Config.InProcessPeers), both
	// handed over in memory, and on other workers (over HTTP).
	PushesLocal     int64 `json:"pushes_local"`
	PushesInProcess int64 `json:"pushes_in_process"`
	PushesHTTP      int64 `json:"pushes_http"`
	// PayloadsTaken counts the inputs this job received from a producer in its process with
	// the producer's payload map, not decoded from bytes (an in-process push hands a map over
	// once; retransmissions and HTTP pushes carry bytes).
	PayloadsTaken int64 `json:"payloads_taken"`
	// LookupsSkipped counts inputs that needed no dedup lookup: born after the job started and
	// not committed by it (fresh.go).
	LookupsSkipped int64 `json:"dedup_lookups_skipped"`
	// AlignmentHolds counts epochs of a source job that read nothing because its estimate was
	// more than watermark_alignment.drift_bound ahead of the pipeline EventWatermark.
	AlignmentHolds int64 `json:"alignment_holds"`
}

func (r *runner) jobStats() JobStats {
	var dropped int64
	for _, be := range r.bestEffort {
		dropped += be.Dropped()
	}
	mismatches, _ := r.inbox.payloadMismatches()
	return JobStats{
		ComputationID: r.comp.ID, PartitionID: r.job.PartitionID, Epochs: r.stats.epochs.Load(),
		Duplicates: r.stats.duplicates.Load(), BestEffortDropped: dropped,
		PushesLocal: r.stats.pushesLocal.Load(), PushesInProcess: r.stats.pushesInProcess.Load(), PushesHTTP: r.stats.pushesHTTP.Load(), PayloadsTaken: r.stats.payloadsTaken.Load(), LookupsSkipped: r.stats.lookupsSkipped.Load(),
		AlignmentHolds: r.stats.alignmentHolds.Load(),
		InboxLen:       r.inbox.len(), OutboxLen: r.outbox.size(), Completed: r.completed.Load(),
		PayloadMismatches: mismatches,
	}
}
