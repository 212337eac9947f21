package monitoring

import (
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ytflow/yt-flow/job"
)

// StatsSource is what the worker collector reads at scrape time: *job.Worker. Stats returns
// the counters of every job the worker runs or ran; they never decrease (the counters of a
// job that ran twice on the worker accumulate).
type StatsSource interface {
	Stats() map[string]job.JobStats
}

// Worker collects the metrics of the workers of one process from their job counters
// (job.Worker.Stats), summed per computation over their jobs. Create it with NewWorker.
type Worker struct {
	now func() time.Time

	// wmu guards workers (Add).
	wmu     sync.Mutex
	workers []StatsSource

	// mu guards the rate samples: the message counts per computation at the last sample
	// and the rates computed then.
	mu       sync.Mutex
	sampled  time.Time
	counts   map[string]int64
	rates    map[string]float64
	rateSpan time.Duration
}

// minRateSpan is the least time between the two samples a messages_per_second rate is
// computed from; a scrape sooner than that after the last sample reports the last rates.
const minRateSpan = time.Second

// NewWorker returns a collector over workers; now is the clock of the message rates (nil:
// time.Now).
func NewWorker(now func() time.Time, workers ...StatsSource) *Worker {
	if now == nil {
		now = time.Now
	}
	return &Worker{workers: workers, now: now, sampled: now(), counts: map[string]int64{}, rates: map[string]float64{}, rateSpan: minRateSpan}
}

var (
	descJobs = prometheus.NewDesc("yt_flow_worker_jobs",
		"Jobs the workers of this process run now.", nil, nil)
	descMessages = prometheus.NewDesc("yt_flow_computation_messages_total",
		"Messages processed: inputs and source rows of applied epochs, less duplicates.", []string{"computation_id"}, nil)
	descMessageRate = prometheus.NewDesc("yt_flow_computation_messages_per_second",
		"Messages processed per second between the last two samples (scrapes at least a second apart).", []string{"computation_id"}, nil)
	descEpochs = prometheus.NewDesc("yt_flow_computation_epochs_total",
		"Epochs applied by the computation's jobs.", []string{"computation_id"}, nil)
	descEpochParts = prometheus.NewDesc("yt_flow_epoch_part_seconds_total",
		"Wall time the computation's jobs spent in each epoch part (input_fetch, prepare, process, commit, idle).", []string{"computation_id", "part"}, nil)
	descDuplicates = prometheus.NewDesc("yt_flow_duplicates_dropped_total",
		"Inputs dropped because the dedup index (or the same batch) already held them.", []string{"computation_id"}, nil)
	descLookupsSkipped = prometheus.NewDesc("yt_flow_dedup_lookups_skipped_total",
		"Inputs that needed no dedup lookup: born after the job started and not committed by it.", []string{"computation_id"}, nil)
	descFenced = prometheus.NewDesc("yt_flow_fenced_commits_total",
		"Epoch commits rejected because the job's lease was dead (a zombie job; it stopped).", []string{"computation_id"}, nil)
	descNotApplied = prometheus.NewDesc("yt_flow_commits_not_applied_total",
		"Epoch commits that did not apply (conflict, rejected, or a token that did not match); the epoch was recomputed.", []string{"computation_id"}, nil)
	descUnknown = prometheus.NewDesc("yt_flow_commits_unknown_total",
		"Epoch commits whose outcome was unknown and was resolved by re-reading the partition token.", []string{"computation_id"}, nil)
	descProcessFailures = prometheus.NewDesc("yt_flow_process_failures_total",
		"Failed invocations of the process function (an error or a panic); each failed its epoch, which was retried. Keys and message ids are in job_status and the worker log.", []string{"computation_id"}, nil)
	descSetAside = prometheus.NewDesc("yt_flow_messages_set_aside_total",
		"Messages and timers failure_policy set aside after max_attempts failed attempts: written to dead_letters (policy dead_letter) or dropped (skip).", []string{"computation_id", "policy"}, nil)
	descReplayed = prometheus.NewDesc("yt_flow_dead_letters_replayed_total",
		"Replayed dead letters (yt-flow dead-letters replay) the computation's jobs took from the replay partition, each in the epoch commit that deleted its row (processed, or dropped by dedup as a repeat).", []string{"computation_id"}, nil)
	descAtMostOnceDropped = prometheus.NewDesc("yt_flow_at_most_once_dropped_total",
		"Rows dropped by at-most-once (best-effort) sinks whose queue was full.", []string{"computation_id"}, nil)
	descPayloadMismatches = prometheus.NewDesc("yt_flow_payload_mismatches_total",
		"Messages received again under the same id with another payload (a non-deterministic swift computation).", []string{"computation_id"}, nil)
	descAlignmentHolds = prometheus.NewDesc("yt_flow_alignment_holds_total",
		"Epochs of source jobs that read nothing because watermark_alignment held them back.", []string{"computation_id"}, nil)
	descOrderingHolds = prometheus.NewDesc("yt_flow_ordering_holds_total",
		"Epochs in which input_ordering held back a buffered input until an input stream's event watermark passed it.", []string{"computation_id"}, nil)
	descPushes = prometheus.NewDesc("yt_flow_pushes_total",
		"Pushes of outputs to reader jobs: on the same worker (local), another worker of the process (in_process) or over HTTP (http).", []string{"computation_id", "transport"}, nil)
	descSinkDelivered = prometheus.NewDesc("yt_flow_sink_delivered_total",
		"Batches an async sink reported as held, or epochs an at-least-once sync sink acknowledged.", []string{"computation_id", "sink"}, nil)
	descSinkFailures = prometheus.NewDesc("yt_flow_sink_delivery_failures_total",
		"Sink deliveries (writes) that failed; each is retried.", []string{"computation_id", "sink"}, nil)
	descThrottlerConsumed = prometheus.NewDesc("yt_flow_throttler_consumed_total",
		"Units the computation's jobs took from a distributed throttler: input rows, input bytes or quota asked for with AcquireQuota (Flow's throttler consumed).", []string{"computation_id", "throttler_id"}, nil)
	descThrottlerRequested = prometheus.NewDesc("yt_flow_throttler_requested_units",
		"Units the computation's running jobs ask a distributed throttler for and were not granted yet.", []string{"computation_id", "throttler_id"}, nil)
	descThrottlerWait = prometheus.NewDesc("yt_flow_throttler_wait_seconds_total",
		"Time the computation's jobs waited for a grant of a distributed throttler: epochs held back for input rows or bytes, AcquireQuota calls (Flow's throttler wait_time).", []string{"computation_id", "throttler_id"}, nil)
	descInbox = prometheus.NewDesc("yt_flow_computation_inbox_messages",
		"Inputs buffered in the inboxes of the computation's running jobs.", []string{"computation_id"}, nil)
	descOutbox = prometheus.NewDesc("yt_flow_computation_outbox_messages",
		"Committed outputs of the computation's running jobs not yet acknowledged or delivered.", []string{"computation_id"}, nil)

	workerDescs = []*prometheus.Desc{descJobs, descMessages, descMessageRate, descEpochs, descEpochParts, descDuplicates,
		descLookupsSkipped, descFenced, descNotApplied, descUnknown, descProcessFailures, descSetAside, descReplayed, descAtMostOnceDropped, descPayloadMismatches,
		descAlignmentHolds, descOrderingHolds, descPushes, descSinkDelivered, descSinkFailures, descThrottlerConsumed, descThrottlerRequested, descThrottlerWait, descInbox, descOutbox}
)

// Add adds a worker to those the collector reads.
func (c *Worker) Add(w StatsSource) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.workers = append(c.workers, w)
}

// Describe implements prometheus.Collector.
func (c *Worker) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range workerDescs {
		ch <- d
	}
}

// computationTotals are the counters of one computation summed over jobs.
type computationTotals struct {
	job.JobStats
	parts      map[string]int64
	sinks      map[string]job.SinkStats
	throttlers map[string]job.ThrottlerStats
}

// Collect implements prometheus.Collector: it reads every worker's Stats.
func (c *Worker) Collect(ch chan<- prometheus.Metric) {
	per := map[string]*computationTotals{}
	running := 0
	c.wmu.Lock()
	workers := append([]StatsSource(nil), c.workers...)
	c.wmu.Unlock()
	for _, w := range workers {
		for _, st := range w.Stats() {
			if st.Running {
				running++
			}
			t := per[st.ComputationID]
			if t == nil {
				t = &computationTotals{parts: map[string]int64{}, sinks: map[string]job.SinkStats{}, throttlers: map[string]job.ThrottlerStats{}}
				per[st.ComputationID] = t
			}
			t.add(st)
		}
	}
	ch <- prometheus.MustNewConstMetric(descJobs, prometheus.GaugeValue, float64(running))
	rates := c.sample(per)
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	for _, id := range sortedKeys(per) {
		t := per[id]
		counter(descMessages, t.Messages, id)
		ch <- prometheus.MustNewConstMetric(descMessageRate, prometheus.GaugeValue, rates[id], id)
		counter(descEpochs, t.Epochs, id)
		for _, part := range job.EpochPartNames {
			ch <- prometheus.MustNewConstMetric(descEpochParts, prometheus.CounterValue, time.Duration(t.parts[part]).Seconds(), id, part)
		}
		counter(descDuplicates, t.Duplicates, id)
		counter(descLookupsSkipped, t.LookupsSkipped, id)
		counter(descFenced, t.FencedCommits, id)
		counter(descNotApplied, t.NotApplied, id)
		counter(descUnknown, t.CommitsUnknown, id)
		counter(descProcessFailures, t.ProcessFailures, id)
		counter(descSetAside, t.DeadLettered, id, "dead_letter")
		counter(descSetAside, t.Skipped, id, "skip")
		counter(descReplayed, t.Replayed, id)
		counter(descAtMostOnceDropped, t.BestEffortDropped, id)
		counter(descPayloadMismatches, t.PayloadMismatches, id)
		counter(descAlignmentHolds, t.AlignmentHolds, id)
		counter(descOrderingHolds, t.OrderingHolds, id)
		counter(descPushes, t.PushesLocal, id, "local")
		counter(descPushes, t.PushesInProcess, id, "in_process")
		counter(descPushes, t.PushesHTTP, id, "http")
		for _, sink := range sortedKeys(t.sinks) {
			counter(descSinkDelivered, t.sinks[sink].Delivered, id, sink)
			counter(descSinkFailures, t.sinks[sink].Failures, id, sink)
		}
		for _, th := range sortedKeys(t.throttlers) {
			ts := t.throttlers[th]
			counter(descThrottlerConsumed, ts.Taken, id, th)
			ch <- prometheus.MustNewConstMetric(descThrottlerRequested, prometheus.GaugeValue, float64(ts.Requested), id, th)
			ch <- prometheus.MustNewConstMetric(descThrottlerWait, prometheus.CounterValue, ts.WaitSeconds, id, th)
		}
		ch <- prometheus.MustNewConstMetric(descInbox, prometheus.GaugeValue, float64(t.InboxLen), id)
		ch <- prometheus.MustNewConstMetric(descOutbox, prometheus.GaugeValue, float64(t.OutboxLen), id)
	}
}

// add sums the counters of one job into t; the inbox and outbox only of a running job.
func (t *computationTotals) add(st job.JobStats) {
	t.Messages += st.Messages
	t.Epochs += st.Epochs
	t.Duplicates += st.Duplicates
	t.LookupsSkipped += st.LookupsSkipped
	t.FencedCommits += st.FencedCommits
	t.NotApplied += st.NotApplied
	t.CommitsUnknown += st.CommitsUnknown
	t.ProcessFailures += st.ProcessFailures
	t.DeadLettered += st.DeadLettered
	t.Skipped += st.Skipped
	t.Replayed += st.Replayed
	t.BestEffortDropped += st.BestEffortDropped
	t.PayloadMismatches += st.PayloadMismatches
	t.AlignmentHolds += st.AlignmentHolds
	t.OrderingHolds += st.OrderingHolds
	t.PushesLocal += st.PushesLocal
	t.PushesInProcess += st.PushesInProcess
	t.PushesHTTP += st.PushesHTTP
	for k, v := range st.EpochParts {
		t.parts[k] += v
	}
	for k, v := range st.Sinks {
		s := t.sinks[k]
		s.Delivered += v.Delivered
		s.Failures += v.Failures
		t.sinks[k] = s
	}
	for k, v := range st.Throttlers {
		ts := t.throttlers[k]
		ts.Taken += v.Taken
		ts.WaitSeconds += v.WaitSeconds
		if st.Running {
			ts.Requested += v.Requested
		}
		t.throttlers[k] = ts
	}
	if st.Running {
		t.InboxLen += st.InboxLen
		t.OutboxLen += st.OutboxLen
	}
}

// sample returns the message rates per computation: from the last sample to now when that
// is at least rateSpan ago (then now becomes the last sample), else the rates of the last
// sample.
func (c *Worker) sample(per map[string]*computationTotals) map[string]float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	span := now.Sub(c.sampled)
	if span < c.rateSpan {
		return c.rates
	}
	rates := make(map[string]float64, len(per))
	counts := make(map[string]int64, len(per))
	for id, t := range per {
		counts[id] = t.Messages
		rates[id] = float64(max(t.Messages-c.counts[id], 0)) / span.Seconds()
	}
	c.sampled, c.counts, c.rates = now, counts, rates
	return rates
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
