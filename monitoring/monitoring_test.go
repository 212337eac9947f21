package monitoring

import (
	"context"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ytflow/yt-flow/controller"
	"github.com/ytflow/yt-flow/internal/autopart"
	"github.com/ytflow/yt-flow/job"
	"github.com/ytflow/yt-flow/ytstore"
)

// gather collects c on a registry of its own and returns every sample by
// name{label="value",…} (labels sorted by name).
func gather(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			sort.Strings(labels)
			key := f.GetName()
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.Gauge != nil:
				out[key] = m.GetGauge().GetValue()
			case m.Counter != nil:
				out[key] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

func expect(t *testing.T, got map[string]float64, want map[string]float64) {
	t.Helper()
	for k, v := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("no sample %s", k)
		} else if math.Abs(g-v) > 1e-9 {
			t.Errorf("%s = %v, want %v", k, g, v)
		}
	}
}

// TestServerLifecycle: New binds a random loopback port; Run serves /metrics from the
// server's own registry (with the Go and process collectors) and /debug/pprof/, and returns
// nil once its context ends; Close after that is a no-op, and twice is fine.
func TestServerLifecycle(t *testing.T) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "yt_flow_test_gauge", Help: "a test gauge"})
	g.Set(7)
	srv, err := New(Config{}, g)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(srv.Addr(), "127.0.0.1:") {
		t.Errorf("default address %s is not on loopback", srv.Addr())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	get := func(path string) string {
		resp, err := http.Get("http://" + srv.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
		return string(body)
	}
	metrics := get("/metrics")
	for _, s := range []string{"yt_flow_test_gauge 7", "go_goroutines", "process_cpu_seconds_total"} {
		if !strings.Contains(metrics, s) {
			t.Errorf("/metrics lacks %q", s)
		}
	}
	if strings.Contains(metrics, "promhttp_metric_handler_requests_total") {
		t.Errorf("/metrics serves the global registry's handler metrics")
	}
	if !strings.Contains(get("/debug/pprof/"), "goroutine") {
		t.Errorf("/debug/pprof/ lists no goroutine profile")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("Close after Run: %v", err)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

type fakeWorker map[string]job.JobStats

func (f fakeWorker) Stats() map[string]job.JobStats { return f }

// TestWorkerSumsPerComputation: the collector sums the jobs of a computation over the
// workers it reads; inbox and outbox count running jobs only; the message rate is the
// increase between two samples at least a second apart divided by their distance, and a
// scrape sooner repeats the last rate.
func TestWorkerSumsPerComputation(t *testing.T) {
	now := time.Unix(1000, 0)
	a := fakeWorker{
		"count-0": {ComputationID: "count", Messages: 10, Epochs: 2, Duplicates: 1, FencedCommits: 1, InboxLen: 3, Running: true,
			EpochParts: map[string]int64{"commit": int64(time.Second)}, Sinks: map[string]job.SinkStats{"out": {Delivered: 4, Failures: 1}},
			Throttlers: map[string]job.ThrottlerStats{"bytes": {Taken: 100, Requested: 30, WaitSeconds: 1.5}, "quota": {Taken: 7}}},
		"count-1": {ComputationID: "count", Messages: 5, Epochs: 1, InboxLen: 100, EpochParts: map[string]int64{"commit": int64(time.Second / 2)},
			Throttlers: map[string]job.ThrottlerStats{"bytes": {Taken: 50, Requested: 1000, WaitSeconds: 0.5}}},
	}
	b := fakeWorker{"count-2": {ComputationID: "count", Messages: 5, NotApplied: 2, CommitsUnknown: 1, ProcessFailures: 4, DeadLettered: 2, Replayed: 1, PushesHTTP: 3, Running: true,
		Sinks: map[string]job.SinkStats{"out": {Delivered: 1}}}}
	c := NewWorker(func() time.Time { return now }, a)
	c.Add(b)

	now = now.Add(2 * time.Second)
	expect(t, gather(t, c), map[string]float64{
		"yt_flow_worker_jobs": 2,
		`yt_flow_computation_messages_total{computation_id="count"}`:                    20,
		`yt_flow_computation_messages_per_second{computation_id="count"}`:               10,
		`yt_flow_computation_epochs_total{computation_id="count"}`:                      3,
		`yt_flow_duplicates_dropped_total{computation_id="count"}`:                      1,
		`yt_flow_fenced_commits_total{computation_id="count"}`:                          1,
		`yt_flow_commits_not_applied_total{computation_id="count"}`:                     2,
		`yt_flow_commits_unknown_total{computation_id="count"}`:                         1,
		`yt_flow_process_failures_total{computation_id="count"}`:                        4,
		`yt_flow_messages_set_aside_total{computation_id="count",policy="dead_letter"}`: 2,
		`yt_flow_messages_set_aside_total{computation_id="count",policy="skip"}`:        0,
		`yt_flow_dead_letters_replayed_total{computation_id="count"}`:                   1,
		`yt_flow_epoch_part_seconds_total{computation_id="count",part="commit"}`:        1.5,
		`yt_flow_epoch_part_seconds_total{computation_id="count",part="process"}`:       0,
		`yt_flow_sink_delivered_total{computation_id="count",sink="out"}`:               5,
		`yt_flow_sink_delivery_failures_total{computation_id="count",sink="out"}`:       1,
		`yt_flow_pushes_total{computation_id="count",transport="http"}`:                 3,
		`yt_flow_computation_inbox_messages{computation_id="count"}`:                    3,
		`yt_flow_computation_outbox_messages{computation_id="count"}`:                   0,
		`yt_flow_at_most_once_dropped_total{computation_id="count"}`:                    0,
		`yt_flow_payload_mismatches_total{computation_id="count"}`:                      0,
		`yt_flow_dedup_lookups_skipped_total{computation_id="count"}`:                   0,
		`yt_flow_alignment_holds_total{computation_id="count"}`:                         0,
		`yt_flow_pushes_total{computation_id="count",transport="local"}`:                0,
		`yt_flow_pushes_total{computation_id="count",transport="in_process"}`:           0,
		`yt_flow_epoch_part_seconds_total{computation_id="count",part="input_fetch"}`:   0,
		// A job that does not run counts what it took and waited, not what it asks for.
		`yt_flow_throttler_consumed_total{computation_id="count",throttler_id="bytes"}`:     150,
		`yt_flow_throttler_requested_units{computation_id="count",throttler_id="bytes"}`:    30,
		`yt_flow_throttler_wait_seconds_total{computation_id="count",throttler_id="bytes"}`: 2,
		`yt_flow_throttler_consumed_total{computation_id="count",throttler_id="quota"}`:     7,
	})

	st := b["count-2"]
	st.Messages += 40
	b["count-2"] = st
	now = now.Add(500 * time.Millisecond) // too soon: the last rate stands
	expect(t, gather(t, c), map[string]float64{`yt_flow_computation_messages_per_second{computation_id="count"}`: 10})
	now = now.Add(3500 * time.Millisecond) // 4s after the last sample, 40 more messages
	expect(t, gather(t, c), map[string]float64{`yt_flow_computation_messages_per_second{computation_id="count"}`: 10})
	now = now.Add(time.Second) // nothing new
	expect(t, gather(t, c), map[string]float64{`yt_flow_computation_messages_per_second{computation_id="count"}`: 0})
}

const testSpec = `{
    computations = {
        split = {
            computation_class_name = "NYT::NFlow::TProcessFunctionSourceComputation";
            processing_function = "SplitWords";
            source_streams = {lines = {source_class_name = "NYT::NFlow::TQueueSource"; parameters = {queue_path = "//q/in"; consumer_path = "//q/c"}}};
            output_stream_ids = ["words"];
        };
        count = {
            computation_class_name = "NYT::NFlow::TProcessFunctionComputation";
            processing_function = "CountWords";
            group_by_schema = [{name = "hash"; type = "uint64"; required = %true; expression = "farm_hash(word)"}; {name = "word"; type = "string"; required = %true}];
            input_stream_ids = ["words"];
            output_stream_ids = ["counts"];
            sinks = {out = {sink_class_name = "NYT::NFlow::TAsyncQueueSink"; input_stream_ids = ["counts"]; parameters = {queue_path = "//q/out"; producer_path = "//q/p"}}};
        };
    };
    streams = {
        words = {schema = [{name = "word"; type = "string"; required = %true}]};
        counts = {schema = [{name = "hash"; type = "uint64"}; {name = "word"; type = "string"}; {name = "count"; type = "int64"}]};
    };
}`

// TestControllerSnapshot: the collector reports the last snapshot: leadership, the pipeline
// state as a one-hot gauge, versions, the cycle, workers by liveness, partitions and jobs per
// computation and state (a job without a status is starting), the live workers of another
// version than the flow core target, and per output stream the age
// of its producer's oldest held message and the messages it holds past its inbox; a snapshot
// that ends leadership leaves only yt_flow_controller_leader 0.
func TestControllerSnapshot(t *testing.T) {
	const sec = uint64(time.Second / time.Microsecond)
	now := time.Unix(2_000_000, 0)
	nowUs := uint64(now.UnixMicro())
	c := NewController(func() time.Time { return now })
	expect(t, gather(t, c), map[string]float64{"yt_flow_controller_leader": 0})

	ew := nowUs - 60*sec
	c.Observe(&controller.Snapshot{
		Leading: true, Cycle: 42,
		Partitioning: []controller.PartitionCount{{Computation: "count", ByLoad: true, Current: 2, Optimal: 3, Driver: "messages_per_second",
			Load: autopart.Load{Messages: 25000, Bytes: 1e6, CPU: 0.25, Timers: 7}}},
		Attributes: ytstore.Attributes{Spec: []byte(testSpec), SpecVersion: 3, DynamicSpecVersion: 5, PipelineState: ytstore.StateWorking, DeadLettersDropped: map[string]int64{"count": 2},
			SystemWatermark: nowUs - 10*sec, EventWatermark: &ew,
			ThrottlerGrants: &ytstore.ThrottlerGrants{Throttlers: map[string]ytstore.ThrottlerTotals{"rows": {Limit: 100, Periods: 2.5, Granted: 240, Pending: 60}}}},
		Input: &controller.Input{
			Topology:       controller.Topology{Computations: []controller.Computation{{ID: "count"}, {ID: "split"}}},
			Workers:        []ytstore.Worker{{WorkerID: "w1", FlowCoreVersion: "v2"}, {WorkerID: "w2", FlowCoreVersion: "v1"}, {WorkerID: "w3"}},
			FlowCoreTarget: "v2",
			WorkerAlive:    map[string]bool{"w1": true, "w2": true},
			Partitions: []ytstore.Partition{
				{PartitionID: "count/0of2", ComputationID: "count", State: ytstore.PartitionActive},
				{PartitionID: "count/1of2", ComputationID: "count", State: ytstore.PartitionActive},
				{PartitionID: "count/0of1", ComputationID: "count", State: ytstore.PartitionDraining},
				{PartitionID: "split/0", ComputationID: "split", State: ytstore.PartitionCompleted},
			},
			Jobs: []ytstore.Job{
				{JobID: "c0", ComputationID: "count", PartitionID: "count/0of2"},
				{JobID: "c1", ComputationID: "count", PartitionID: "count/1of2"},
				{JobID: "c2", ComputationID: "count", PartitionID: "count/0of1"},
				{JobID: "s0", ComputationID: "split", PartitionID: "split/0"},
			},
			Statuses: []ytstore.JobStatus{
				{JobID: "c0", State: ytstore.JobRunning, InputLag: 4, InFlight: 10, SystemWatermark: nowUs - 30*sec},
				{JobID: "c1", State: ytstore.JobFailed, InFlight: 1, SystemWatermark: nowUs - 5*sec},
				{JobID: "s0", State: ytstore.JobCompleted, InFlight: 7, SystemWatermark: nowUs - 2*sec},
				{JobID: "gone", State: ytstore.JobRunning, InFlight: 100},
			},
		},
	})
	expect(t, gather(t, c), map[string]float64{
		"yt_flow_controller_leader":                                                            1,
		`yt_flow_pipeline_state{state="working"}`:                                              1,
		`yt_flow_pipeline_state{state="completed"}`:                                            0,
		"yt_flow_spec_version":                                                                 3,
		"yt_flow_dynamic_spec_version":                                                         5,
		"yt_flow_current_epoch":                                                                42,
		"yt_flow_computation_count":                                                            2,
		`yt_flow_worker_count{state="alive"}`:                                                  2,
		`yt_flow_worker_count{state="dead"}`:                                                   1,
		"yt_flow_version_mismatch_worker_count":                                                1,
		`yt_flow_partition_count{computation_id="count",state="active"}`:                       2,
		`yt_flow_partition_count{computation_id="count",state="draining"}`:                     1,
		`yt_flow_partition_count{computation_id="count",state="completed"}`:                    0,
		`yt_flow_partition_count{computation_id="split",state="completed"}`:                    1,
		`yt_flow_optimal_partition_count{computation_id="count",driver="messages_per_second"}`: 3,
		`yt_flow_computation_load{computation_id="count",measure="messages_per_second"}`:       25000,
		`yt_flow_computation_load{computation_id="count",measure="bytes_per_second"}`:          1e6,
		`yt_flow_computation_load{computation_id="count",measure="cpu_load"}`:                  0.25,
		`yt_flow_computation_load{computation_id="count",measure="timer_count"}`:               7,
		`yt_flow_job_status{computation_id="count",status="running"}`:                          1,
		`yt_flow_job_status{computation_id="count",status="failed"}`:                           1,
		`yt_flow_job_status{computation_id="count",status="starting"}`:                         1,
		`yt_flow_job_status{computation_id="split",status="completed"}`:                        1,
		`yt_flow_computation_input_lag{computation_id="count"}`:                                4,
		`yt_flow_computation_in_flight{computation_id="count"}`:                                11,
		`yt_flow_stream_time_lag_seconds{stream_id="counts"}`:                                  30,
		`yt_flow_stream_time_lag_seconds{stream_id="words"}`:                                   2,
		`yt_flow_stream_time_lag_seconds{stream_id="__united__"}`:                              10,
		`yt_flow_stream_count_lag{stream_id="counts"}`:                                         7,
		`yt_flow_stream_count_lag{stream_id="words"}`:                                          7,
		`yt_flow_stream_count_lag{stream_id="__united__"}`:                                     18,
		`yt_flow_stream_event_time_lag_seconds{stream_id="__united__"}`:                        60,
		"yt_flow_system_watermark_seconds":                                                     float64(nowUs-10*sec) / 1e6,
		"yt_flow_event_watermark_seconds":                                                      float64(ew) / 1e6,
		`yt_flow_dead_letters_dropped_total{computation_id="count"}`:                           2,
		`yt_flow_throttler_granted_total{throttler_id="rows"}`:                                 240,
		`yt_flow_throttler_periods_total{throttler_id="rows"}`:                                 2.5,
		`yt_flow_throttler_pending_units{throttler_id="rows"}`:                                 60,
	})

	// With a backlog reader, source streams get their unread rows as count lag, read at most
	// once per period.
	calls := 0
	c.SetBacklog(func(_ context.Context, a *ytstore.Attributes, parts []ytstore.Partition) map[string]int64 {
		calls++
		if a.SpecVersion != 3 || len(parts) != 4 {
			t.Errorf("backlog read with spec version %d and %d partitions", a.SpecVersion, len(parts))
		}
		return map[string]int64{"lines": 12, "counts": 99}
	}, time.Minute)
	want := map[string]float64{
		`yt_flow_stream_count_lag{stream_id="lines"}`:             12,
		`yt_flow_stream_count_lag{stream_id="counts"}`:            7, // an output stream keeps its own
		`yt_flow_stream_count_lag{stream_id="__united_source__"}`: 111,
	}
	expect(t, gather(t, c), want)
	now = now.Add(30 * time.Second)
	expect(t, gather(t, c), want)
	if calls != 1 {
		t.Errorf("backlog read %d times within its period, want 1", calls)
	}
	now = now.Add(31 * time.Second)
	gather(t, c)
	if calls != 2 {
		t.Errorf("backlog read %d times after its period, want 2", calls)
	}

	c.Observe(&controller.Snapshot{})
	got := gather(t, c)
	if len(got) != 1 || got["yt_flow_controller_leader"] != 0 {
		t.Errorf("after leadership ended: %v, want only yt_flow_controller_leader 0", got)
	}
}

// TestEveryFamilyDocumented keeps docs/metrics.md true: every family the collectors describe
// has a row there.
func TestEveryFamilyDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`fqName: "([^"]+)"`)
	for _, d := range append(append([]*prometheus.Desc(nil), controllerDescs...), workerDescs...) {
		m := name.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("no name in %s", d)
		}
		if !strings.Contains(string(doc), "| `"+m[1]+"` |") {
			t.Errorf("docs/metrics.md has no row for %s", m[1])
		}
	}
}
