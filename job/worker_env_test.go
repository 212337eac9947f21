// The word count test harness (wcEnv): a pipeline on ytlocal with one worker and a layout
// written by the test, no controller.

package job

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/yson"

	_ "github.com/ytflow/yt-flow/examples/word_count" // registers SplitWords and CountWords
	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytql"
	"github.com/ytflow/yt-flow/ytstore"
)

const wordCountSpec = `{
  computations = {
    split = {
      computation_class_name = "NYT::NFlow::TProcessFunctionSourceComputation";
      processing_function = "SplitWords";
      source_streams = {
        lines = {
          source_class_name = "NYT::NFlow::TQueueSource";
          parameters = {queue_path = "//tmp/wc/input"; consumer_path = "//tmp/wc/consumer"};
        };
      };
      output_stream_ids = ["words"];
    };
    count = {
      computation_class_name = "NYT::NFlow::TProcessFunctionComputation";
      processing_function = "CountWords";
      group_by_schema = [
        {name = "hash"; type = "uint64"; required = %true; expression = "farm_hash(word)"};
        {name = "word"; type = "string"; required = %true};
      ];
      input_stream_ids = ["words"];
      output_stream_ids = ["counts"];
      sinks = {
        table = {
          sink_class_name = "NYT::NFlow::NSortedDynamicTable::TSyncSink";
          input_stream_ids = ["counts"];
          parameters = {table_path = "//tmp/wc/counts"};
        };
      };
    };
  };
  streams = {
    words = {schema = [{name = "word"; type = "string"; required = %true}]};
    counts = {schema = [{name = "hash"; type = "uint64"}; {name = "word"; type = "string"}; {name = "count"; type = "int64"}]};
  };
}`

// wcEnv is a word count pipeline on ytlocal with a layout written by the test (no controller).
type wcEnv struct {
	t      testing.TB
	ctx    context.Context
	store  *ytstore.Store
	leader *ytstore.Session
	worker *Worker
}

func startWordCount(t testing.TB) *wcEnv { return startWordCountVia(t, nil) }

// startWordCountVia is startWordCount with the worker talking to the proxy that via returns
// for the ytlocal address (nil: directly).
func startWordCountVia(t testing.TB, via func(ytAddr string) string) *wcEnv {
	t.Helper()
	return startWordCountOpts(t, via, nil)
}

// startWordCountOpts is startWordCountVia with tune applied to the worker's config.
func startWordCountOpts(t testing.TB, via func(ytAddr string) string, tune func(*Config)) *wcEnv {
	t.Helper()
	return startWordCountSpec(t, wordCountSpec, via, tune)
}

// startWordCountSpec is startWordCountOpts with another static spec (same tables).
func startWordCountSpec(t testing.TB, specText string, via func(ytAddr string) string, tune func(*Config)) *wcEnv {
	t.Helper()
	return startWordCountEnv(t, specText, via, tune, false)
}

// startWordCountEnv is startWordCountSpec; with rowTimestamps the input queue's schema has the
// $timestamp system column, so its rows report their commit timestamps.
func startWordCountEnv(t testing.TB, specText string, via func(ytAddr string) string, tune func(*Config), rowTimestamps bool) *wcEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	srv, err := ytlocal.Start(ctx, ytlocal.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	const path = "//tmp/wc/pipeline"
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: srv.Addr(), Path: path})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	require.NoError(t, st.CreatePipeline(ctx))
	require.NoError(t, st.SetSpecs(ctx, ytstore.SpecUpdate{Spec: yson.RawValue(specText), SpecVersion: 1, TargetState: ytstore.TargetWorking}))
	inputColumns := []schema.Column{{Name: "text", Type: schema.TypeString}}
	if rowTimestamps {
		inputColumns = append(inputColumns, schema.Column{Name: "$timestamp", Type: schema.TypeUint64})
	}
	for _, ut := range []ytstore.UserTable{
		{Path: "//tmp/wc/input", Kind: ytstore.UserQueue, Schema: schema.Schema{Columns: inputColumns}},
		{Path: "//tmp/wc/consumer", Kind: ytstore.UserConsumer, Queue: "//tmp/wc/input"},
		{Path: "//tmp/wc/counts", Kind: ytstore.UserSortedTable, Schema: schema.Schema{UniqueKeys: true, Columns: []schema.Column{
			{Name: "hash", Type: schema.TypeUint64, SortOrder: schema.SortAscending},
			{Name: "word", Type: schema.TypeString, SortOrder: schema.SortAscending},
			{Name: "count", Type: schema.TypeInt64},
		}}},
	} {
		require.NoError(t, st.EnsureUserTable(ctx, ut))
	}
	leader, err := st.StartSession(ctx, "test leader", time.Minute)
	require.NoError(t, err)
	t.Cleanup(func() { _ = leader.Close() })

	workerProxy := srv.Addr()
	if via != nil {
		workerProxy = via(srv.Addr())
	}
	cfg := Config{Proxy: workerProxy, Path: path, WorkerID: "w1", LeaseCheckPeriod: time.Second,
		EmptyBatchBackoff: 20 * time.Millisecond, PollPeriod: 50 * time.Millisecond, PushTimeout: time.Second}
	if tune != nil {
		tune(&cfg)
	}
	w := NewWorker(cfg)
	wctx, wcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	t.Cleanup(func() {
		wcancel()
		select {
		case err := <-done:
			assert.NoError(t, err, "worker Run returns cleanly on cancel")
		case <-time.After(30 * time.Second):
			t.Error("worker did not stop within 30s of cancel")
		}
	})
	select {
	case <-w.Ready():
	case err := <-done:
		t.Fatalf("worker stopped: %v", err)
	case <-ctx.Done():
		t.Fatal("worker not ready")
	}
	return &wcEnv{t: t, ctx: ctx, store: st, leader: leader, worker: w}
}

// putJob writes a job row (and its partition) with a fresh lease and returns the lease.
func (e *wcEnv) putJob(jobID, computation, partition string, sourcePartition int64) string {
	e.t.Helper()
	lease, err := e.store.StartLease(e.ctx, jobID, time.Minute)
	require.NoError(e.t, err)
	e.applyLayout(ytstore.LayoutChange{
		PutPartitions: []ytstore.Partition{{PartitionID: partition, ComputationID: computation, SourcePartition: sourcePartition, State: ytstore.PartitionActive}},
		PutJobs: []ytstore.Job{{JobID: jobID, ComputationID: computation, PartitionID: partition, WorkerID: "w1",
			LeaseID: lease, SourcePartition: sourcePartition}},
	})
	return lease
}

func (e *wcEnv) deleteJob(jobID string) {
	e.t.Helper()
	e.applyLayout(ytstore.LayoutChange{DeleteJobs: []string{jobID}})
}

// applyLayout applies c, retrying row lock conflicts with the worker's job_status writes.
func (e *wcEnv) applyLayout(c ytstore.LayoutChange) {
	e.t.Helper()
	for attempt := 1; ; attempt++ {
		err := e.store.ApplyLayout(e.ctx, e.leader, c)
		if err == nil {
			return
		}
		if !errors.Is(err, ytstore.ErrConflict) || attempt == 20 {
			require.NoError(e.t, err)
		}
	}
}

func (e *wcEnv) write(lines ...string) {
	e.t.Helper()
	rows := make([]map[string]any, len(lines))
	for i, l := range lines {
		rows[i] = map[string]any{"text": l}
	}
	require.NoError(e.t, e.store.InsertRows(e.ctx, "//tmp/wc/input", rows))
}

func (e *wcEnv) counts() map[string]int64 {
	e.t.Helper()
	rows, err := e.store.SelectRows(e.ctx, "word, count from [//tmp/wc/counts]")
	require.NoError(e.t, err)
	out := map[string]int64{}
	for _, r := range rows {
		out[fmt.Sprint(r["word"])] = r["count"].(int64)
	}
	return out
}

// eventually polls cond until it holds or the deadline passes.
func (e *wcEnv) eventually(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *wcEnv) waitCounts(want map[string]int64) {
	e.t.Helper()
	var got map[string]int64
	deadline := time.Now().Add(60 * time.Second)
	for {
		got = e.counts()
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("counts: got %v, want %v", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitInboxEmpty waits until job's inbox holds nothing. A count is visible once its epoch
// committed, a moment before the job acknowledges the inputs and drops them from its inbox: a
// copy pushed in that moment joins the buffered original instead of reaching the dedup index.
// Tests that push a copy of a committed message wait for this first.
func (e *wcEnv) waitInboxEmpty(job string) {
	e.t.Helper()
	e.eventually(job+"'s inbox to empty", func() bool { return e.worker.Stats()[job].InboxLen == 0 })
}

// pushWords pushes one message of stream "words" with id, the word count key of word and
// payload (nil: {word=word}, as split would send it) to job of computation "count" over the
// JSON /push of earlier versions, and returns the reply.
func (e *wcEnv) pushWords(job, id, word string, payload []byte, born uint64) pushResponse {
	e.t.Helper()
	key := flow.Key{ytql.FarmHash(word), word}
	if payload == nil {
		var err error
		payload, err = yson.Marshal(flow.Row{"word": word})
		require.NoError(e.t, err)
	}
	body, err := json.Marshal(pushRequest{JobID: job, Computation: "count", Messages: []wireMessage{{
		ID: id, Stream: "words", Key: epoch.EncodeKey(key), KeyHash: epoch.KeyHash(key), Payload: payload, Born: born,
	}}})
	require.NoError(e.t, err)
	req, err := http.NewRequest(http.MethodPost, "http://"+e.worker.Addr()+"/push", bytes.NewReader(body))
	require.NoError(e.t, err)
	req.Header.Set("Content-Type", "application/json")
	signRequest(req, e.worker.signingKey(), body)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer func() { _ = resp.Body.Close() }()
	var pr pushResponse
	require.NoError(e.t, json.NewDecoder(resp.Body).Decode(&pr))
	return pr
}

// fetchStats reads /stats of worker w over HTTP.
func fetchStats(t *testing.T, w *Worker) map[string]JobStats {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+w.Addr()+"/stats", nil)
	require.NoError(t, err)
	signRequest(req, w.signingKey(), nil)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	var out map[string]JobStats
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out
}

// startPeer runs a second worker of the pipeline with e's worker's settings under id, until
// the test ends.
func (e *wcEnv) startPeer(id string) *Worker {
	e.t.Helper()
	cfg := e.worker.cfg
	cfg.WorkerID, cfg.Listen = id, ""
	w := NewWorker(cfg)
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	e.t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(e.t, err, "worker %s returns cleanly on cancel", id)
		case <-time.After(30 * time.Second):
			e.t.Errorf("worker %s did not stop within 30s of cancel", id)
		}
	})
	select {
	case <-w.Ready():
	case err := <-done:
		e.t.Fatalf("worker %s stopped: %v", id, err)
	case <-e.ctx.Done():
		e.t.Fatalf("worker %s not ready", id)
	}
	return w
}

// jobLease is the lease of job id in the layout.
func (e *wcEnv) jobLease(id string) string {
	e.t.Helper()
	jobs, err := e.store.Jobs(e.ctx)
	require.NoError(e.t, err)
	for _, j := range jobs {
		if j.JobID == id {
			return j.LeaseID
		}
	}
	e.t.Fatalf("no job %s in the layout", id)
	return ""
}
