// Worker scenarios on the word count harness: end to end, removed and zombie jobs, duplicates,
// draining and retiring, session loss, back-pressure, errors and in-process peers.

package job

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytql"
	"github.com/ytflow/yt-flow/ytstore"
)

func TestWorkerEndToEnd(t *testing.T) {
	e := startWordCount(t)
	e.putJob("split-0", "split", "split-p0", 0)
	e.putJob("count-0", "count", "count-p0", -1)
	e.write("a b a", "b c")
	e.waitCounts(map[string]int64{"a": 2, "b": 2, "c": 1})
	e.write("c c d")
	e.waitCounts(map[string]int64{"a": 2, "b": 2, "c": 3, "d": 1})

	// Everything delivered is deleted from the output store by a later commit.
	e.eventually("split's output store to drain", func() bool {
		outs, err := e.store.LoadOutputs(e.ctx, "split-p0")
		require.NoError(t, err)
		return len(outs) == 0
	})
	// The source offset is committed in the partition state.
	assert.Equal(t, int64(3), e.committedOffset("split-p0"))
	// Both jobs run on this worker: split's pushes to count were handed over in memory.
	st := e.worker.Stats()["split-0"]
	assert.Positive(t, st.PushesLocal, "pushes to a job of the same worker")
	assert.Zero(t, st.PushesHTTP, "no push crossed HTTP")
}

// TestWorkerStopsRemovedJob: a job whose row disappears stops, and a new job for the same
// partition resumes from the committed state with no loss or double count.
func TestWorkerStopsRemovedJob(t *testing.T) {
	e := startWordCount(t)
	e.putJob("split-0", "split", "split-p0", 0)
	e.putJob("count-0", "count", "count-p0", -1)
	e.write("x y")
	e.waitCounts(map[string]int64{"x": 1, "y": 1})

	e.deleteJob("count-0")
	e.eventually("count-0 to stop", func() bool { return e.worker.runner("count-0") == nil })
	e.write("x")
	assert.Equal(t, map[string]int64{"x": 1, "y": 1}, e.counts())

	e.putJob("count-1", "count", "count-p0", -1)
	e.waitCounts(map[string]int64{"x": 2, "y": 1})
}

func TestZombieJobStops(t *testing.T) {
	e := startWordCount(t)
	e.putJob("split-0", "split", "split-p0", 0)
	lease := e.putJob("count-0", "count", "count-p0", -1)
	e.write("z")
	e.waitCounts(map[string]int64{"z": 1})
	token, _, err := e.store.PartitionToken(e.ctx, "count-p0")
	require.NoError(t, err)

	// The controller aborts the lease but the row stays: the job is a zombie. Its next commit
	// (new input or the lease check) is rejected and it stops without writing.
	require.NoError(t, e.store.AbortLease(e.ctx, lease))
	e.write("z")
	e.eventually("the zombie to stop", func() bool { return e.worker.runner("count-0") == nil })
	e.worker.mu.Lock()
	stopErr := e.worker.runners["count-0"].err
	e.worker.mu.Unlock()
	assert.ErrorIs(t, stopErr, ErrZombie, "the job stopped because its commit was fenced")
	assert.Equal(t, map[string]int64{"z": 1}, e.counts(), "the zombie wrote nothing")
	after, _, err := e.store.PartitionToken(e.ctx, "count-p0")
	require.NoError(t, err)
	assert.Equal(t, token, after, "no commit of the zombie applied")

	assert.Equal(t, int64(1), e.worker.Stats()["count-0"].FencedCommits, "the fenced commit is counted")

	// A replacement with a new lease takes over and counts the pending message once.
	e.deleteJob("count-0")
	e.putJob("count-1", "count", "count-p0", -1)
	e.waitCounts(map[string]int64{"z": 2})
	e.eventually("count-0 to leave the runners", func() bool {
		e.worker.mu.Lock()
		defer e.worker.mu.Unlock()
		_, ok := e.worker.runners["count-0"]
		return !ok
	})
	st := e.worker.Stats()["count-0"]
	assert.Equal(t, int64(1), st.FencedCommits, "the removed zombie's fenced commit is still counted")
	assert.False(t, st.Running)
}

// TestWorkerStatsAccumulate: the counters of a job removed from the worker stay in Stats, and
// when the job comes back (same id, new lease) its new run's counters add to them.
func TestWorkerStatsAccumulate(t *testing.T) {
	e := startWordCount(t)
	e.putJob("split-0", "split", "split-p0", 0)
	e.putJob("count-0", "count", "count-p0", -1)
	e.write("x y")
	e.waitCounts(map[string]int64{"x": 1, "y": 1})
	e.eventually("count-0 to count its two messages", func() bool { return e.worker.Stats()["count-0"].Messages == 2 })
	epochs := e.worker.Stats()["count-0"].Epochs

	e.deleteJob("count-0")
	e.eventually("count-0 to stop", func() bool { return e.worker.runner("count-0") == nil })
	st := e.worker.Stats()["count-0"]
	assert.Equal(t, int64(2), st.Messages, "a removed job's counters stay")
	assert.GreaterOrEqual(t, st.Epochs, epochs)
	assert.False(t, st.Running)

	e.putJob("count-0", "count", "count-p0", -1)
	e.write("x")
	e.waitCounts(map[string]int64{"x": 2, "y": 1})
	e.eventually("count-0's second run to add its message", func() bool { return e.worker.Stats()["count-0"].Messages == 3 })
	st = e.worker.Stats()["count-0"]
	assert.True(t, st.Running)
	assert.Greater(t, st.Epochs, epochs, "epochs accumulate over the runs")
	assert.Positive(t, st.EpochParts["commit"], "commit time accumulates")
}

// TestWorkerDropsDuplicates retransmits messages that were already committed: the reader
// acknowledges them at once, counts them as duplicates and does not apply them again.
func TestWorkerDropsDuplicates(t *testing.T) {
	e := startWordCount(t)
	e.putJob("split-0", "split", "split-p0", 0)
	e.putJob("count-0", "count", "count-p0", -1)
	e.write("dup")
	e.waitCounts(map[string]int64{"dup": 1})
	e.waitInboxEmpty("count-0")

	// The id split gave its only output (deterministic: source offset 0, first output).
	id := epoch.SourceOutputID(epoch.SourceMessageID("split", epoch.SourcePartition{SourceID: "lines", Partition: 0}, 0), "words", 0)
	assert.Equal(t, []string{id}, e.pushWords("count-0", id, "dup", nil, 0).Acked, "a duplicate is acknowledged")

	e.eventually("the duplicate to be counted", func() bool { return e.worker.Stats()["count-0"].Duplicates >= 1 })
	e.write("dup2")
	e.waitCounts(map[string]int64{"dup": 1, "dup2": 1})

	stats := fetchStats(t, e.worker)
	assert.GreaterOrEqual(t, stats["count-0"].Duplicates, int64(1), "the duplicate counter is served on /stats")
}

// TestDrainingAndRetiring: a draining source job stops reading and echoes the flag with
// nothing in flight; a retiring job refuses input so that senders keep it for the new owner.
func TestDrainingAndRetiring(t *testing.T) {
	e := startWordCount(t)
	splitLease := e.putJob("split-0", "split", "split-p0", 0)
	countLease := e.putJob("count-0", "count", "count-p0", -1)
	e.write("p q")
	e.waitCounts(map[string]int64{"p": 1, "q": 1})

	e.applyLayout(ytstore.LayoutChange{PutJobs: []ytstore.Job{{JobID: "split-0", ComputationID: "split", PartitionID: "split-p0",
		WorkerID: "w1", LeaseID: splitLease, SourcePartition: 0, Draining: true}}})
	status := func(jobID string) (ytstore.JobStatus, bool) {
		sts, err := e.store.JobStatuses(e.ctx)
		require.NoError(t, err)
		for _, s := range sts {
			if s.JobID == jobID {
				return s, true
			}
		}
		return ytstore.JobStatus{}, false
	}
	e.eventually("split to echo draining with nothing in flight", func() bool {
		s, ok := status("split-0")
		return ok && s.Draining && s.InFlight == 0
	})
	e.write("p")
	// The draining source reads nothing more: the count stays (checked again below, after
	// the job un-drains and reads it).
	assert.Equal(t, map[string]int64{"p": 1, "q": 1}, e.counts())

	e.applyLayout(ytstore.LayoutChange{PutJobs: []ytstore.Job{{JobID: "count-0", ComputationID: "count", PartitionID: "count-p0",
		WorkerID: "w1", LeaseID: countLease, SourcePartition: -1, Retiring: true, Draining: true}}})
	e.eventually("count to echo retiring", func() bool {
		s, ok := status("count-0")
		return ok && s.Draining
	})
	e.applyLayout(ytstore.LayoutChange{PutJobs: []ytstore.Job{{JobID: "split-0", ComputationID: "split", PartitionID: "split-p0",
		WorkerID: "w1", LeaseID: splitLease, SourcePartition: 0}}})
	e.eventually("split to hold the new word for lack of a reader", func() bool {
		s, ok := status("split-0")
		return ok && !s.Draining && s.InFlight > 0
	})
	assert.Equal(t, map[string]int64{"p": 1, "q": 1}, e.counts(), "the retiring job took no input")

	// The new owner of count's keys gets the held message.
	e.putJob("count-1", "count", "count-p1", -1)
	e.waitCounts(map[string]int64{"p": 2, "q": 1})
}

// TestWorkerSurvivesSessionLoss: when the worker's session ends under it, the worker stops its
// jobs, registers again with a new session and resumes the jobs whose leases are alive.
func TestWorkerSurvivesSessionLoss(t *testing.T) {
	e := startWordCount(t)
	e.putJob("split-0", "split", "split-p0", 0)
	e.putJob("count-0", "count", "count-p0", -1)
	e.write("s t")
	e.waitCounts(map[string]int64{"s": 1, "t": 1})

	session := func() string {
		ws, err := e.store.Workers(e.ctx)
		require.NoError(t, err)
		for _, w := range ws {
			if w.WorkerID == "w1" {
				return w.SessionTx
			}
		}
		return ""
	}
	old := session()
	require.NotEmpty(t, old)
	require.NoError(t, e.store.AbortLease(e.ctx, old)) // any transaction: here the session
	e.eventually("a new session in the workers row", func() bool { s := session(); return s != "" && s != old })
	e.write("s")
	e.waitCounts(map[string]int64{"s": 2, "t": 1})
}

// TestSourceErrorReported: a source that cannot be read keeps the job running and puts the
// located error in job_status.
func TestSourceErrorReported(t *testing.T) {
	e := startWordCount(t)
	e.putJob("split-9", "split", "split-p9", 9) // the queue has one tablet
	e.eventually("the read error in job_status", func() bool {
		sts, err := e.store.JobStatuses(e.ctx)
		require.NoError(t, err)
		for _, s := range sts {
			if s.JobID == "split-9" && s.State == ytstore.JobRunning && s.Error != "" {
				assert.Contains(t, s.Error, "read source lines")
				assert.Contains(t, s.Error, "split-p9")
				return true
			}
		}
		return false
	})
}

// TestOutboxLimitBackPressure: with no reader for its outputs, a source job stops reading
// once its output store is full, and resumes when a reader appears.
func TestOutboxLimitBackPressure(t *testing.T) {
	e := startWordCountOpts(t, nil, func(c *Config) { c.OutboxLimit = 3 })
	e.putJob("split-0", "split", "split-p0", 0)
	offset := func() int64 { return max(e.committedOffset("split-p0"), 0) }
	e.write("a b c d")
	e.eventually("the first line read", func() bool { return offset() == 1 })
	e.write("e", "f")
	// Poll a while: the offset must stay (the output store holds 4 >= 3 messages).
	for i := 0; i < 20; i++ {
		require.Equal(t, int64(1), offset(), "a blocked job read more input")
		time.Sleep(10 * time.Millisecond)
	}
	e.eventually("split's status to hold the undelivered outputs back", func() bool {
		sts, err := e.store.JobStatuses(e.ctx)
		require.NoError(t, err)
		for _, s := range sts {
			if s.JobID == "split-0" {
				return s.InFlight >= 4 && s.SystemWatermark > 0 && s.SystemWatermark <= s.UpdatedAt
			}
		}
		return false
	})
	e.putJob("count-0", "count", "count-p0", -1)
	e.waitCounts(map[string]int64{"a": 1, "b": 1, "c": 1, "d": 1, "e": 1, "f": 1})
	assert.Equal(t, int64(3), offset())
	e.eventually("split's status to hold nothing once its output store is empty", func() bool {
		sts, err := e.store.JobStatuses(e.ctx)
		require.NoError(t, err)
		for _, s := range sts {
			if s.JobID == "split-0" {
				return s.InFlight == 0 && s.SystemWatermark == 0
			}
		}
		return false
	})
}

// TestWorkerWaitsForPipeline: a worker started before its pipeline exists waits for it.
func TestWorkerWaitsForPipeline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	srv, err := ytlocal.Start(ctx, ytlocal.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	w := NewWorker(Config{Proxy: srv.Addr(), Path: "//tmp/later"})
	wctx, wcancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var runErr error
	go func() { defer close(done); runErr = w.Run(wctx) }()
	t.Cleanup(func() { wcancel(); <-done })

	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: srv.Addr(), Path: "//tmp/later"})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	select {
	case <-w.Ready():
		t.Fatal("registered in a pipeline that does not exist")
	case <-done:
		t.Fatalf("worker gave up: %v", runErr)
	default:
	}
	require.NoError(t, st.CreatePipeline(ctx))
	select {
	case <-w.Ready():
	case <-done:
		t.Fatalf("worker gave up: %v", runErr)
	case <-ctx.Done():
		t.Fatal("worker did not register after the pipeline was created")
	}
}

// TestAtLeastOnceConsistent: with processing_mode at_least_once_consistent the reader keeps no
// dedup index, so a retransmitted committed message is processed again (and not counted as a
// duplicate); state stays consistent.
func TestAtLeastOnceConsistent(t *testing.T) {
	specText := strings.Replace(wordCountSpec, `processing_function = "CountWords";`,
		`processing_function = "CountWords"; processing_mode = "at_least_once_consistent";`, 1)
	require.NotEqual(t, wordCountSpec, specText)
	e := startWordCountSpec(t, specText, nil, nil)
	e.putJob("split-0", "split", "split-p0", 0)
	e.putJob("count-0", "count", "count-p0", -1)
	e.write("again")
	e.waitCounts(map[string]int64{"again": 1})
	e.waitInboxEmpty("count-0")

	id := epoch.SourceOutputID(epoch.SourceMessageID("split", epoch.SourcePartition{SourceID: "lines", Partition: 0}, 0), "words", 0)
	key := flow.Key{ytql.FarmHash("again"), "again"}
	e.pushWords("count-0", id, "again", nil, 0)
	e.waitCounts(map[string]int64{"again": 2})
	assert.Zero(t, e.worker.Stats()["count-0"].Duplicates, "no dedup index, no duplicates detected")
	dup, err := e.store.LookupDedup(e.ctx, []ytstore.DedupKey{{ComputationID: "count", Key: epoch.EncodeKey(key), KeyHash: epoch.KeyHash(key), MessageID: id, Compact: true}})
	require.NoError(t, err)
	assert.Equal(t, []bool{false}, dup, "nothing registered in the dedup index")
}

// failOnBad is a source function that fails on a row whose text is "bad".
type failOnBad struct{}

func (failOnBad) Invoke(inv *flow.Invocation) (*flow.Result, error) {
	for _, m := range inv.Messages {
		if m.Payload["text"] == "bad" {
			return nil, fmt.Errorf("text %q is bad", "bad")
		}
	}
	return &flow.Result{}, nil
}

func init() { flow.Register("test.FailOnBad", failOnBad{}) }

// TestSourceRowErrorNamesQueueRow: the error of a source row the function rejects names the
// queue path, the tablet and the row offset in plain numbers.
func TestSourceRowErrorNamesQueueRow(t *testing.T) {
	specText := strings.Replace(wordCountSpec, `processing_function = "SplitWords"`, `processing_function = "test.FailOnBad"`, 1)
	require.NotEqual(t, wordCountSpec, specText)
	e := startWordCountSpec(t, specText, nil, nil)
	e.write("fine", "bad")
	e.putJob("split-0", "split", "split-p0", 0)
	e.eventually("the failing row's error in job_status", func() bool {
		sts, err := e.store.JobStatuses(e.ctx)
		require.NoError(t, err)
		for _, s := range sts {
			if s.JobID == "split-0" && strings.Contains(s.Error, "row offset") {
				assert.Equal(t, ytstore.JobRunning, s.State, "a failing invocation is retried, the job keeps running")
				assert.Contains(t, s.Error, "queue //tmp/wc/input tablet 0 row offset 1")
				assert.Contains(t, s.Error, `text "bad" is bad`)
				return true
			}
		}
		return false
	})
}

// boomFixed makes test.CountOrPanic stop panicking.
var boomFixed atomic.Bool

// countOrPanic is CountWords, except that it panics on the word "boom" until boomFixed.
type countOrPanic struct{}

func (countOrPanic) Invoke(inv *flow.Invocation) (*flow.Result, error) {
	for _, m := range inv.Messages {
		if m.Payload["word"] == "boom" && !boomFixed.Load() {
			panic("cannot count boom")
		}
	}
	f, err := flow.Lookup("CountWords")
	if err != nil {
		return nil, err
	}
	return f.Invoke(inv)
}

func init() { flow.Register("test.CountOrPanic", countOrPanic{}) }

// TestPanickingFunctionReported: a process function that panics on one message fails its
// epoch, not the worker: the job keeps running and retries the epoch with backoff, job_status
// names the computation, partition, key, message id, attempt and the panic, the failures
// counter grows, and once the function accepts the message every word is counted exactly once.
func TestPanickingFunctionReported(t *testing.T) {
	boomFixed.Store(false)
	specText := strings.Replace(wordCountSpec, `processing_function = "CountWords"`, `processing_function = "test.CountOrPanic"`, 1)
	require.NotEqual(t, wordCountSpec, specText)
	e := startWordCountSpec(t, specText, nil, nil)
	e.putJob("split-0", "split", "split-p0", 0)
	e.putJob("count-0", "count", "count-p0", -1)
	e.write("fine boom")
	boomID := epoch.SourceOutputID(epoch.SourceMessageID("split", epoch.SourcePartition{SourceID: "lines", Partition: 0}, 0), "words", 1)
	e.eventually("the panic named in job_status after a few attempts", func() bool {
		sts, err := e.store.JobStatuses(e.ctx)
		require.NoError(t, err)
		for _, s := range sts {
			if s.JobID == "count-0" && strings.Contains(s.Error, "process function failed") && e.worker.Stats()["count-0"].ProcessFailures >= 3 {
				assert.Equal(t, ytstore.JobRunning, s.State)
				for _, want := range []string{"computation count", "partition count-p0", "boom", boomID, "attempt ", flow.ErrUserPanic.Error(), "cannot count boom"} {
					assert.Contains(t, s.Error, want)
				}
				assert.NotContains(t, s.Error, "goroutine", "the stack goes to the log, not job_status")
				return true
			}
		}
		return false
	})
	boomFixed.Store(true)
	e.waitCounts(map[string]int64{"boom": 1, "fine": 1})
	e.eventually("the problem cleared by a commit", func() bool {
		sts, err := e.store.JobStatuses(e.ctx)
		require.NoError(t, err)
		for _, s := range sts {
			if s.JobID == "count-0" {
				return s.Error == ""
			}
		}
		return false
	})
}

// TestCommittedPayloadMismatchReported pushes again a message the reader committed long ago,
// with another payload (what a nondeterministic swift recomputation produces): it is dropped as a
// duplicate, the committed copy stands, and the mismatch is reported on /stats.
func TestCommittedPayloadMismatchReported(t *testing.T) {
	e := startWordCount(t)
	e.putJob("split-0", "split", "split-p0", 0)
	e.putJob("count-0", "count", "count-p0", -1)
	e.write("same")
	e.waitCounts(map[string]int64{"same": 1})
	e.waitInboxEmpty("count-0")

	id := epoch.SourceOutputID(epoch.SourceMessageID("split", epoch.SourcePartition{SourceID: "lines", Partition: 0}, 0), "words", 0)
	push := func(payload flow.Row) pushResponse {
		enc, _, err := marshalPayloads([]flow.Row{payload}) // as the producer encodes it
		require.NoError(t, err)
		return e.pushWords("count-0", id, "same", enc[0], 0)
	}
	assert.Equal(t, []string{id}, push(flow.Row{"word": "same"}).Acked, "an identical copy is a plain duplicate")
	e.eventually("the identical copy to be dropped", func() bool { return e.worker.Stats()["count-0"].Duplicates >= 1 })
	assert.Zero(t, fetchStats(t, e.worker)["count-0"].PayloadMismatches, "an identical copy is no mismatch")

	assert.Equal(t, []string{id}, push(flow.Row{"word": "same", "recomputed": int64(2)}).Acked, "a differing copy is dropped too")
	e.eventually("the differing copy to be reported", func() bool {
		return fetchStats(t, e.worker)["count-0"].PayloadMismatches == 1
	})
	e.write("next")
	e.waitCounts(map[string]int64{"same": 1, "next": 1})
}

// TestInProcessPeersPushInMemory: with Config.InProcessPeers on both workers, a split job's
// pushes to the count job on the other worker of this process are handed over in memory
// (none crosses HTTP) and the counts are exact, also after the count job moved back to the
// split's worker and again away; without the option the same pushes go over HTTP.
func TestInProcessPeersPushInMemory(t *testing.T) {
	for _, inProcess := range []bool{true, false} {
		t.Run(fmt.Sprintf("in_process=%v", inProcess), func(t *testing.T) {
			e := startWordCountOpts(t, nil, func(c *Config) { c.InProcessPeers = inProcess })
			w2 := e.startPeer("w2")
			e.putJob("split-0", "split", "split-p0", 0)
			lease, err := e.store.StartLease(e.ctx, "count-0", time.Minute)
			require.NoError(t, err)
			e.applyLayout(ytstore.LayoutChange{
				PutPartitions: []ytstore.Partition{{PartitionID: "count-p0", ComputationID: "count", SourcePartition: -1, State: ytstore.PartitionActive}},
				PutJobs: []ytstore.Job{{JobID: "count-0", ComputationID: "count", PartitionID: "count-p0", WorkerID: "w2",
					LeaseID: lease, SourcePartition: -1}},
			})
			e.write("a b a", "b c")
			e.waitCounts(map[string]int64{"a": 2, "b": 2, "c": 1})
			// Pushes made once the reader runs are accepted at the first try: they hand the
			// payload maps over (a push refused before the reader started is resent as bytes).
			e.write("z")
			e.waitCounts(map[string]int64{"a": 2, "b": 2, "c": 1, "z": 1})
			st := e.worker.Stats()["split-0"]
			assert.Zero(t, st.PushesLocal, "the reader is on the other worker")
			taken := w2.Stats()["count-0"].PayloadsTaken
			if inProcess {
				assert.Positive(t, st.PushesInProcess, "pushes handed to the other worker of the process")
				assert.Zero(t, st.PushesHTTP, "no push crossed HTTP")
				assert.Positive(t, taken, "the reader took the producer's payload maps")
			} else {
				assert.Zero(t, st.PushesInProcess)
				assert.Positive(t, st.PushesHTTP, "without InProcessPeers pushes go over HTTP")
				assert.Zero(t, taken, "over HTTP payloads travel as bytes")
			}

			// The count job moves to the split's worker, then back to w2: nothing lost or doubled.
			require.NoError(t, e.store.AbortLease(e.ctx, lease))
			e.deleteJob("count-0")
			e.putJob("count-1", "count", "count-p0", -1)
			e.write("c d")
			e.waitCounts(map[string]int64{"a": 2, "b": 2, "c": 2, "d": 1, "z": 1})
			e.write("z")
			e.waitCounts(map[string]int64{"a": 2, "b": 2, "c": 2, "d": 1, "z": 2})
			assert.Positive(t, e.worker.Stats()["count-1"].PayloadsTaken, "a reader on the producer's own worker takes its maps")
			require.NoError(t, e.store.AbortLease(e.ctx, e.jobLease("count-1")))
			e.deleteJob("count-1")
			lease2, err := e.store.StartLease(e.ctx, "count-2", time.Minute)
			require.NoError(t, err)
			e.applyLayout(ytstore.LayoutChange{PutJobs: []ytstore.Job{{JobID: "count-2", ComputationID: "count",
				PartitionID: "count-p0", WorkerID: "w2", LeaseID: lease2, SourcePartition: -1}}})
			e.write("d e")
			e.waitCounts(map[string]int64{"a": 2, "b": 2, "c": 2, "d": 2, "e": 1, "z": 2})
		})
	}
}
