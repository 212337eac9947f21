// What a job reports: its counters (runnerStats, JobStats), its job_status row, in_flight and
// SystemWatermark.

package job

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"go.ytsaurus.tech/library/go/core/log"

	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/ytstore"
)

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
	// orderingHolds counts epochs in which input_ordering held back a buffered input.
	orderingHolds atomic.Int64
	// visits counts the key visitor visits the job's epochs took (keyvisit.go), committed or not.
	visits atomic.Int64
	// throttledEpochs counts the epochs of a throttled job that took no input for want of a grant.
	throttledEpochs atomic.Int64
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
	// messages counts the messages the job processed: inputs and source rows of applied
	// epochs, less duplicates (a swift source counts its rows as it reads them).
	messages atomic.Int64
	// bytesIn counts the key and payload bytes of the inputs the job accepted.
	bytesIn atomic.Int64
	// fenced counts commits rejected because the job's lease was dead (the job stops);
	// notApplied commits that did not apply (the epoch is recomputed); unknown commits whose
	// outcome had to be resolved by re-reading the partition token.
	fenced, notApplied, unknown atomic.Int64
	// invokeFailures counts failed invocations of the process function (errors and panics);
	// each failed its epoch, which was retried (failure.go).
	invokeFailures atomic.Int64
	// deadLettered and skipped count the messages and timers failure_policy set aside
	// (dead_letter, skip) in applied epochs.
	deadLettered, skipped atomic.Int64
	// replayed counts the replayed dead letters (messages and timers) applied epochs
	// processed (replay.go).
	replayed atomic.Int64
	// sinks holds the delivery counters of the job's async and at-least-once sync sinks, by
	// sink id; built by newRunner and not changed after.
	sinks map[string]*sinkStats
	// pushNs and deliverNs sum the wall time (ns) of the job's pushes to reader jobs (sent to
	// answered: the reader's commit included) and of its async sink deliveries; deliveries
	// counts those deliveries. Pushes overlap, so pushNs may exceed the wall time.
	pushNs, deliverNs, deliveries atomic.Int64
	// paceNs is the part of the idle epoch part a busy job spent pacing (runner.pace).
	paceNs atomic.Int64
}

// sinkStats are the counters of one sink of a job.
type sinkStats struct {
	// delivered counts the batches an async sink reported as held, or the epochs an
	// at-least-once sync sink acknowledged; failures the calls that failed (each is retried).
	delivered, failures atomic.Int64
}

// sink returns the counters of sink id (a throwaway when the sink is unknown).
func (s *runnerStats) sink(id string) *sinkStats {
	if st, ok := s.sinks[id]; ok {
		return st
	}
	return &sinkStats{}
}

// epochPhases accumulates the wall time of epoch parts (nanoseconds) and the rows the epochs
// took; a job logs them when it stops.
type epochPhases struct {
	fetch, prepare, process, commit, idle atomic.Int64
	// alignment is the wait after an epoch in which watermark_alignment held the job's
	// source reads back (Flow's Input.WatermarkAlignment), counted apart from idle.
	alignment atomic.Int64
	rows      atomic.Int64
}

func (p *epochPhases) since(d *atomic.Int64, start time.Time) time.Time {
	now := time.Now()
	d.Add(int64(now.Sub(start)))
	return now
}

// parts returns the accumulated times by epoch part name (EpochPartNames), in nanoseconds.
func (p *epochPhases) parts() map[string]int64 {
	return map[string]int64{
		"input_fetch": p.fetch.Load(), "prepare": p.prepare.Load(), "process": p.process.Load(),
		"commit": p.commit.Load(), "idle": p.idle.Load(), "watermark_alignment": p.alignment.Load(),
	}
}

func (p *epochPhases) fields() []log.Field {
	ms := func(d *atomic.Int64) int64 { return d.Load() / int64(time.Millisecond) }
	return []log.Field{
		log.Int64("input_fetch_ms", ms(&p.fetch)), log.Int64("prepare_ms", ms(&p.prepare)),
		log.Int64("process_ms", ms(&p.process)), log.Int64("commit_ms", ms(&p.commit)),
		log.Int64("idle_ms", ms(&p.idle)), log.Int64("watermark_alignment_ms", ms(&p.alignment)),
		log.Int64("rows", p.rows.Load()),
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
		if p := r.broken.Load(); p != nil {
			errText = *p
		} else if p := r.problem.Load(); p != nil {
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
	requests, rows := r.throttleRequests()
	return ytstore.JobStatus{
		JobID: r.job.JobID, WorkerID: r.w.id, State: state, Error: errText, SystemWatermark: r.systemWatermark(),
		EventWatermark: ytstore.OptionalUint64(r.eventWatermark()), EventIdleSince: ytstore.OptionalUint64(r.eventIdleSince()),
		Epoch: r.stats.epochs.Load(), LastCommitTS: r.stats.lastCommitTS.Load(), InputLag: inbox, UpdatedAt: updated,
		InFlight: r.inFlight(inbox), Draining: r.applied.Load(), Load: r.loadReport(),
		ThrottleRequested: ytstore.OptionalUint64(max(rows, 0)), ThrottleRequests: requests,
	}
}

// loadReport is the job's load report (ytstore.Load): processed messages, received bytes, busy
// time, stored timers and the pivots of its inputs.
func (r *runner) loadReport() ytstore.Load {
	busy := r.stats.phases.process.Load() / int64(time.Microsecond) // prepare is mostly waiting for reads
	l := ytstore.Load{
		Messages: ytstore.OptionalUint64(max(r.stats.messages.Load(), 0)), Bytes: ytstore.OptionalUint64(max(r.stats.bytesIn.Load(), 0)),
		BusyTime: ytstore.OptionalUint64(max(busy, 0)), Timers: ytstore.OptionalUint64(max(r.pendingTimers.Load(), 0)),
	}
	if r.pivots != nil {
		l.Pivots = r.pivots.Pivots()
	}
	return l
}

// noteInputs records the first n messages of ms within the job's range, which it accepted, for
// its load report.
func (r *runner) noteInputs(ms []wireMessage, n int) {
	var bytes int64
	for _, m := range ms {
		if n == 0 {
			break
		}
		if !epoch.InRange(m.KeyHash, r.job.LowerKey, r.job.UpperKey) {
			continue
		}
		if r.pivots != nil {
			r.pivots.Add(m.KeyHash)
		}
		bytes += int64(len(m.Key) + len(m.Payload))
		n--
	}
	r.stats.bytesIn.Add(bytes)
}

// inFlight is what the job still holds: buffered inputs, undelivered outputs, swift source
// rows not committed past and, while completing, pending timers.
func (r *runner) inFlight(inbox int64) int64 {
	n := inbox + int64(r.outbox.held()) + r.swiftSourceHeld()
	if r.completing() {
		n += r.pendingTimers.Load() + r.visitsPending()
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
	// OrderingHolds counts epochs in which input_ordering held back a buffered input for want
	// of an input stream's watermark (the epoch took fewer inputs than it could).
	OrderingHolds int64 `json:"ordering_holds"`
	// Visits counts the key visitor visits the job's epochs took (key_visitor_streams).
	Visits int64 `json:"visits"`
	// ThrottleTaken counts the input rows a throttled job took (at most what it was granted)
	// and ThrottledEpochs its epochs that took none for want of a grant.
	ThrottleTaken   int64 `json:"throttle_taken"`
	ThrottledEpochs int64 `json:"throttled_epochs"`
	// Throttlers are the job's figures by throttler id (input rows, input bytes and
	// AcquireQuota).
	Throttlers map[string]ThrottlerStats `json:"throttlers,omitempty"`
	// Messages counts the inputs and source rows of applied epochs, less duplicates (a swift
	// source job counts its rows as it reads them).
	Messages int64 `json:"messages"`
	// FencedCommits counts commits rejected because the job's lease was dead (a zombie; the
	// job stopped), NotApplied commits that did not apply (the epoch was recomputed), and
	// CommitsUnknown commits whose outcome was resolved by re-reading the partition token.
	FencedCommits  int64 `json:"fenced_commits"`
	NotApplied     int64 `json:"commits_not_applied"`
	CommitsUnknown int64 `json:"commits_unknown"`
	// ProcessFailures counts failed invocations of the process function (errors and panics);
	// each failed its epoch, which was retried.
	ProcessFailures int64 `json:"process_failures"`
	// DeadLettered and Skipped count the messages and timers failure_policy set aside in
	// applied epochs: written to dead_letters, or dropped.
	DeadLettered int64 `json:"dead_lettered"`
	Skipped      int64 `json:"skipped"`
	// Replayed counts the replayed dead letters applied epochs processed.
	Replayed int64 `json:"replayed"`
	// DynamicSpecVersion is the @dynamic_spec_version the job runs with: the one it started
	// with, or a later one it applied (dynamic.go).
	DynamicSpecVersion int64 `json:"dynamic_spec_version,omitempty"`
	// EpochParts is the wall time (nanoseconds) the job spent in each epoch part: input_fetch,
	// prepare, process, commit and idle.
	EpochParts map[string]int64 `json:"epoch_parts_ns"`
	// PushNs sums the wall time of the job's pushes (sent to answered, the reader's commit
	// included; pushes overlap), DeliverNs that of its async sink deliveries, Deliveries
	// counts those deliveries. They happen after the epochs, in the job's sender.
	PushNs     int64 `json:"push_ns"`
	DeliverNs  int64 `json:"deliver_ns"`
	Deliveries int64 `json:"deliveries"`
	// PaceNs is the part of EpochParts["idle"] spent pacing busy epochs (runner.pace).
	PaceNs int64 `json:"pace_ns"`
	// Sinks are the delivery counters of the job's async and at-least-once sync sinks.
	Sinks   map[string]SinkStats `json:"sinks,omitempty"` // Running is set for a job the worker runs now (not for one it ran and stopped).
	Running bool                 `json:"running"`
}

// SinkStats are the delivery counters of one sink of a job.
type SinkStats struct {
	// Delivered counts the batches an async sink reported as held, or the epochs an
	// at-least-once sync sink acknowledged.
	Delivered int64 `json:"delivered"`
	// Failures counts the deliveries (writes) that failed; each is retried.
	Failures int64 `json:"failures"`
}

// EpochPartNames are the keys of JobStats.EpochParts, in the order of an epoch.
var EpochPartNames = []string{"input_fetch", "prepare", "process", "commit", "idle", "watermark_alignment"}

// plus returns the counters of s added to those of an earlier run of the same job (the
// worker ran it before); the gauges (inbox, outbox, completed) are s's.
func (s JobStats) plus(old JobStats) JobStats {
	s.Epochs += old.Epochs
	s.Duplicates += old.Duplicates
	s.BestEffortDropped += old.BestEffortDropped
	s.PayloadMismatches += old.PayloadMismatches
	s.PushesLocal += old.PushesLocal
	s.PushesInProcess += old.PushesInProcess
	s.PushesHTTP += old.PushesHTTP
	s.PayloadsTaken += old.PayloadsTaken
	s.LookupsSkipped += old.LookupsSkipped
	s.AlignmentHolds += old.AlignmentHolds
	s.OrderingHolds += old.OrderingHolds
	s.Visits += old.Visits
	s.ThrottleTaken += old.ThrottleTaken
	s.ThrottledEpochs += old.ThrottledEpochs
	for id, o := range old.Throttlers {
		if s.Throttlers == nil {
			s.Throttlers = map[string]ThrottlerStats{}
		}
		t := s.Throttlers[id]
		t.Taken += o.Taken
		t.WaitSeconds += o.WaitSeconds
		s.Throttlers[id] = t
	}
	s.Messages += old.Messages
	s.FencedCommits += old.FencedCommits
	s.NotApplied += old.NotApplied
	s.CommitsUnknown += old.CommitsUnknown
	s.ProcessFailures += old.ProcessFailures
	s.DeadLettered += old.DeadLettered
	s.Skipped += old.Skipped
	s.Replayed += old.Replayed
	s.PushNs += old.PushNs
	s.DeliverNs += old.DeliverNs
	s.Deliveries += old.Deliveries
	s.PaceNs += old.PaceNs
	if len(old.EpochParts) > 0 {
		parts := make(map[string]int64, len(EpochPartNames))
		for k, v := range s.EpochParts {
			parts[k] = v
		}
		for k, v := range old.EpochParts {
			parts[k] += v
		}
		s.EpochParts = parts
	}
	if len(old.Sinks) > 0 {
		sinks := make(map[string]SinkStats, len(s.Sinks)+len(old.Sinks))
		for k, v := range s.Sinks {
			sinks[k] = v
		}
		for k, v := range old.Sinks {
			n := sinks[k]
			n.Delivered += v.Delivered
			n.Failures += v.Failures
			sinks[k] = n
		}
		s.Sinks = sinks
	}
	return s
}

func (r *runner) jobStats() JobStats {
	var dropped int64
	for _, be := range r.bestEffort {
		dropped += be.Dropped()
	}
	mismatches, _ := r.inbox.payloadMismatches()
	var sinks map[string]SinkStats
	if len(r.stats.sinks) > 0 {
		sinks = make(map[string]SinkStats, len(r.stats.sinks))
		for id, st := range r.stats.sinks {
			// Async sinks are outbox destinations named sinkDestPrefix + sink id.
			sinks[strings.TrimPrefix(id, sinkDestPrefix)] = SinkStats{Delivered: st.delivered.Load(), Failures: st.failures.Load()}
		}
	}
	return JobStats{
		ComputationID: r.comp.ID, PartitionID: r.job.PartitionID, Epochs: r.stats.epochs.Load(),
		Duplicates: r.stats.duplicates.Load(), BestEffortDropped: dropped,
		PushesLocal: r.stats.pushesLocal.Load(), PushesInProcess: r.stats.pushesInProcess.Load(), PushesHTTP: r.stats.pushesHTTP.Load(), PayloadsTaken: r.stats.payloadsTaken.Load(), LookupsSkipped: r.stats.lookupsSkipped.Load(),
		AlignmentHolds: r.stats.alignmentHolds.Load(), OrderingHolds: r.stats.orderingHolds.Load(), Visits: r.stats.visits.Load(),
		ThrottleTaken: r.rowsTaken(), ThrottledEpochs: r.stats.throttledEpochs.Load(), Throttlers: r.throttlerStats(),
		InboxLen: r.inbox.len(), OutboxLen: r.outbox.size(), Completed: r.completed.Load(),
		PayloadMismatches: mismatches,
		Messages:          r.stats.messages.Load(), FencedCommits: r.stats.fenced.Load(),
		NotApplied: r.stats.notApplied.Load(), CommitsUnknown: r.stats.unknown.Load(),
		ProcessFailures: r.stats.invokeFailures.Load(), DeadLettered: r.stats.deadLettered.Load(), Skipped: r.stats.skipped.Load(),
		Replayed: r.stats.replayed.Load(), DynamicSpecVersion: r.dynVersion.Load(),
		EpochParts: r.stats.phases.parts(),
		PushNs:     r.stats.pushNs.Load(), DeliverNs: r.stats.deliverNs.Load(), Deliveries: r.stats.deliveries.Load(), PaceNs: r.stats.paceNs.Load(),
		Sinks: sinks,
	}
}
