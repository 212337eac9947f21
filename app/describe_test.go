package app

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"strings"
	"testing"
	"time"

	"github.com/ytflow/yt-flow/ytstore"
)

// writeLayout registers workers (w-1 serving backtraces at srv, w-2 at a closed port; both
// with live sessions), a job per partition of writeStates (the agg job failed) and three
// controller log records.
func (f *flowTest) writeLayout(srv string) {
	t := f.t
	ctx := context.Background()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := closed.Addr().String()
	closed.Close()
	for _, w := range []struct{ id, addr string }{{"w-1", srv}, {"w-2", deadAddr}} {
		session, err := f.st.StartSession(ctx, "worker "+w.id, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = session.Close() })
		if err := f.st.PutWorker(ctx, ytstore.Worker{WorkerID: w.id, Address: w.addr, SessionTx: session.ID(), StartTime: 1_800_000_000_000_000, HeartbeatTime: 1_800_000_001_000_000}); err != nil {
			t.Fatal(err)
		}
	}
	err = f.st.InsertRows(ctx, lifecyclePath+"/jobs", []map[string]any{
		{"job_id": "j-agg", "computation_id": "agg", "partition_id": "agg/0of1", "worker_id": "w-1", "lease_id": "0-0-0-0", "lower_key": uint64(0), "upper_key": uint64(0), "source_partition": int64(-1), "source_id": "", "created_at": uint64(1), "draining": false, "retiring": false},
		{"job_id": "j-gen", "computation_id": "gen", "partition_id": "gen/src/r/0", "worker_id": "w-2", "lease_id": "0-0-0-0", "lower_key": uint64(0), "upper_key": uint64(0), "source_partition": int64(0), "source_id": "r", "created_at": uint64(1), "draining": false, "retiring": false},
	})
	if err != nil {
		t.Fatal(err)
	}
	err = f.st.InsertRows(ctx, lifecyclePath+"/job_status", []map[string]any{
		{"job_id": "j-agg", "worker_id": "w-1", "state": "failed", "error": "process Agg: boom", "epoch": int64(3), "updated_at": uint64(1), "last_commit_ts": uint64(0), "input_lag": int64(0), "in_flight": int64(0), "draining": false, "system_watermark": uint64(0)},
		{"job_id": "j-gen", "worker_id": "w-2", "state": "running", "error": "", "epoch": int64(4), "updated_at": uint64(1), "last_commit_ts": uint64(0), "input_lag": int64(0), "in_flight": int64(0), "draining": false, "system_watermark": uint64(0)},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"leader ctl-1", "Jobs status (PipelineState: working)", "E PublicFlowController Job failed"} {
		if err := f.st.AppendControllerLog(ctx, ytstore.LogRecord{Time: 1_800_000_000_000_000, Host: "ctl-1", Data: d}); err != nil {
			t.Fatal(err)
		}
	}
}

func backtraceServer(t *testing.T) string {
	mux := http.NewServeMux()
	mux.Handle("/debug/pprof/goroutine", pprof.Handler("goroutine"))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestShowLogs(t *testing.T) {
	f := newFlowTest(t)
	f.writeLayout("127.0.0.1:1")
	p := lifecyclePath
	code, out, errs := f.cmd("", "show-logs", "--count", "2", "--format", "json", p)
	var recs []struct {
		RowIndex int64  `json:"row_index"`
		Time     string `json:"time"`
		Data     string `json:"data"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &recs) != nil || len(recs) != 2 || recs[0].RowIndex != 1 || recs[1].Data != "E PublicFlowController Job failed" || recs[0].Time != "2027-01-15T08:00:00.000000Z" {
		t.Fatalf("show-logs --count 2: %d %q %q", code, out, errs)
	}
	code, out, _ = f.cmd("", "show-logs", "--offset", "0", "--count", "1", p)
	if l, _ := ysonOf(t, out).([]any); code != 0 || len(l) != 1 || l[0].(map[string]any)["data"] != "leader ctl-1" {
		t.Fatalf("show-logs --offset 0 --count 1: %d %q", code, out)
	}
	code, out, errs = f.cmd("", "show-logs", "--count", "-3", p)
	failsCleanly(t, "negative count", code, out, errs, 2, "--count must not be negative")
	code, out, errs = f.cmd("", "show-logs", "//home/t/none")
	failsCleanly(t, "missing pipeline", code, out, errs, 1, "does not exist")
}

func TestDescribePipelineAndWorkers(t *testing.T) {
	f := newFlowTest(t)
	f.writeStates()
	f.writeLayout(backtraceServer(t))
	p := lifecyclePath
	code, out, errs := f.cmd("", "describe-pipeline", "--format", "json", p)
	var d struct {
		State        string `json:"state"`
		SpecVersion  int64  `json:"spec_version"`
		Computations map[string]struct {
			Total    int            `json:"total_partition_count"`
			Counts   map[string]int `json:"partition_counts"`
			Jobs     int            `json:"job_count"`
			Running  int            `json:"running_job_count"`
			Messages []string       `json:"messages"`
		} `json:"computations"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &d) != nil {
		t.Fatalf("describe-pipeline: %d %q %q", code, out, errs)
	}
	agg, gen := d.Computations["agg"], d.Computations["gen"]
	if d.State != "unknown" || d.SpecVersion != 1 || agg.Total != 1 || agg.Counts["active"] != 1 || agg.Jobs != 1 || agg.Running != 0 ||
		len(agg.Messages) != 1 || !strings.HasPrefix(agg.Messages[0], "Job failed (JobFinishReason: Failed): process Agg: boom (JobId: j-agg") ||
		gen.Total != 1 || gen.Running != 1 || len(gen.Messages) != 0 {
		t.Fatalf("describe-pipeline: %+v", d)
	}

	code, out, errs = f.cmd("", "describe-workers", p)
	ws, _ := ysonOf(t, out).([]any)
	if code != 0 || len(ws) != 2 {
		t.Fatalf("describe-workers: %d %q %q", code, out, errs)
	}
	w1 := ws[0].(map[string]any)
	if w1["worker_id"] != "w-1" || w1["alive"] != true || w1["job_count"] != int64(1) || w1["jobs"].([]any)[0].(map[string]any)["job_id"] != "j-agg" {
		t.Fatalf("describe-workers: %v", w1)
	}
}

func TestGetWorkerBacktraces(t *testing.T) {
	f := newFlowTest(t)
	f.writeLayout(backtraceServer(t))
	p := lifecyclePath
	code, out, errs := f.cmd("", "get-worker-backtraces", "--worker", "w-1", "--format", "text", p)
	if code != 0 || !strings.HasPrefix(out, "== worker w-1 (127.0.0.1:") || !strings.Contains(out, "goroutine ") || errs != "" {
		t.Fatalf("get-worker-backtraces --worker w-1: %d %q %q", code, out, errs)
	}
	// w-2 serves nothing: its error is in the output, and the exit code says so.
	code, out, errs = f.cmd("", "get-worker-backtraces", p)
	m, _ := ysonOf(t, out).(map[string]any)
	if code != 1 || m["workers"].(map[string]any)["w-1"] == nil || m["errors"].(map[string]any)["w-2"] == nil ||
		strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "1 of 2 workers gave no backtraces; worker w-2:") {
		t.Fatalf("get-worker-backtraces: %d %q %q", code, out, errs)
	}
	code, out, errs = f.cmd("", "get-worker-backtraces", "--worker", "w-9", p)
	failsCleanly(t, "unknown worker", code, out, errs, 1, `has no worker "w-9"`)
}

func TestGetFlowView(t *testing.T) {
	f := newFlowTest(t)
	f.writeStates()
	f.writeLayout("127.0.0.1:1")
	p := lifecyclePath
	code, out, errs := f.cmd("", "get-flow-view", p)
	v, _ := ysonOf(t, out).(map[string]any)
	if code != 0 || v == nil {
		t.Fatalf("get-flow-view: %d %q %q", code, out, errs)
	}
	for _, k := range []string{"pipeline", "spec", "dynamic_spec", "computations", "jobs", "workers", "errors"} {
		if _, ok := v[k]; !ok {
			t.Errorf("get-flow-view lacks %s:\n%s", k, out)
		}
	}
	comps := v["computations"].(map[string]any)
	agg := comps["agg"].(map[string]any)
	if agg["key_state_count"] != int64(4) || agg["partitions"].(map[string]any)["agg/0of1"].(map[string]any)["job_id"] != "j-agg" {
		t.Errorf("computation agg: %v", agg)
	}
	src := comps["gen"].(map[string]any)["partitions"].(map[string]any)["gen/src/r/0"].(map[string]any)
	if src["states"].(map[string]any)["offset/r"] != int64(42) || src["source_id"] != "r" {
		t.Errorf("source partition: %v", src)
	}
	code, out, _ = f.cmd("", "get-flow-view", "--view-path", "/jobs/j-agg/status/error", "--format", "json", p)
	if code != 0 || strings.TrimSpace(out) != `"process Agg: boom"` {
		t.Fatalf("get-flow-view --view-path: %d %q", code, out)
	}
	code, out, errs = f.cmd("", "get-flow-view", "--view-path", "/nothing", p)
	failsCleanly(t, "missing view path", code, out, errs, 1, `no "nothing"`)
}
