// Tests of swift source jobs: the committed offset waits for acknowledgements, restarts
// recompute, and the watermark covers the read window.

package job

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/ytql"
	"github.com/ytflow/yt-flow/ytstore"
)

// swiftSourceSpec is the job tests' word count with split as a swift source.
var swiftSourceSpec = strings.Replace(wordCountSpec, `"NYT::NFlow::TProcessFunctionSourceComputation"`, `"NYT::NFlow::TSwiftOrderedSourceComputation"`, 1)

// committedOffset reads the split partition's committed source offset (-1: none).
func (e *wcEnv) committedOffset(partition string) int64 {
	e.t.Helper()
	ps, err := e.store.LoadPartitionStates(e.ctx, partition)
	require.NoError(e.t, err)
	b, ok := ps[ytstore.SourceStatePrefix+"lines"]
	if !ok {
		return -1
	}
	p, err := ytstore.DecodeSourcePosition(b)
	require.NoError(e.t, err)
	off, err := connector.PositionOffset(p.Position)
	require.NoError(e.t, err)
	require.Equal(e.t, p.NextSeq, off, "a queue source's position is its next offset")
	return off
}

// wordDedupKey is the dedup key of the index-th output of the split row at offset, as the count
// computation's dedup index holds it.
func wordDedupKey(word string, offset int64, index uint64) ytstore.DedupKey {
	row := epoch.SourceMessageID("split", epoch.SourcePartition{SourceID: "lines", Partition: 0}, offset)
	key := flow.Key{ytql.FarmHash(word), word}
	return ytstore.DedupKey{ComputationID: "count", Key: epoch.EncodeKey(key), KeyHash: epoch.KeyHash(key),
		MessageID: epoch.SwiftOutputID(row, index), Compact: true}
}

// TestSwiftSourceOffsetWaitsForAcks: a swift source delivers its outputs from memory (no
// output store rows), commits its offset only past rows whose outputs are all delivered, stops
// reading when its window is full, and its outputs carry ids derived from their row.
func TestSwiftSourceOffsetWaitsForAcks(t *testing.T) {
	e := startWordCountSpec(t, swiftSourceSpec, nil, func(c *Config) { c.OutboxLimit = 4 })
	e.write("", "a b", "c", "d", "e", "f")
	e.putJob("split-0", "split", "split-p0", 0)

	// No reader yet: the empty first row is committed past, the rest is held.
	e.eventually("the split to hold four words and commit past the empty row", func() bool {
		st := e.worker.Stats()["split-0"]
		return st.OutboxLen == 4 && e.committedOffset("split-p0") == 1
	})
	r := e.worker.runner("split-0")
	require.NotNil(t, r)
	seen := r.stats.lastCommitTS.Load()
	e.eventually("another (lease check) commit of the split", func() bool { return r.stats.lastCommitTS.Load() != seen })
	assert.Equal(t, int64(1), e.committedOffset("split-p0"), "the offset does not pass rows with undelivered outputs")
	assert.Equal(t, 4, e.worker.Stats()["split-0"].OutboxLen, "a full window reads nothing more")
	assert.Equal(t, int64(7), r.inFlight(0), "in flight: four undelivered outputs and three rows not committed past")
	assert.NotZero(t, r.systemWatermark(), "the held outputs bound the job's system watermark")
	outs, err := e.store.LoadOutputs(e.ctx, "split-p0")
	require.NoError(t, err)
	assert.Empty(t, outs, "a swift source writes no output store rows")

	e.putJob("count-0", "count", "count-p0", -1)
	e.waitCounts(map[string]int64{"a": 1, "b": 1, "c": 1, "d": 1, "e": 1, "f": 1})
	e.eventually("the offset to pass every row", func() bool { return e.committedOffset("split-p0") == 6 })
	e.eventually("the split to hold nothing", func() bool { return r.inFlight(0) == 0 })
	outs, err = e.store.LoadOutputs(e.ctx, "split-p0")
	require.NoError(t, err)
	assert.Empty(t, outs, "a swift source writes no output store rows")

	found, err := e.store.LookupDedup(e.ctx, []ytstore.DedupKey{
		wordDedupKey("a", 1, 0), wordDedupKey("b", 1, 1), wordDedupKey("f", 5, 0), wordDedupKey("b", 1, 0),
	})
	require.NoError(t, err)
	assert.Equal(t, []bool{true, true, true, false}, found, "the reader registered the outputs under ids from (row offset, index in the row)")
}

// TestSwiftSourceRestartRecomputes: a swift source job whose outputs were delivered but whose
// offset was not committed (its lease died first) is replaced; the new job re-reads from the
// committed offset, recomputes the same ids, and the reader drops them as duplicates: the
// counts stay exact.
func TestSwiftSourceRestartRecomputes(t *testing.T) {
	// No lease check commits: the split commits only when its offset advances.
	e := startWordCountSpec(t, swiftSourceSpec, nil, func(c *Config) { c.LeaseCheckPeriod = time.Hour })
	lease := e.putJob("split-0", "split", "split-p0", 0)
	e.write("x y", "x")
	// Its first epoch commits once (the lease check) whatever it read.
	e.eventually("the split to hold three words after its first commit", func() bool {
		r := e.worker.runner("split-0")
		return r != nil && r.stats.lastCommitTS.Load() != 0 && e.worker.Stats()["split-0"].OutboxLen == 3
	})

	// The lease dies; the reader then gets and commits the outputs, and the split's offset
	// commit is refused.
	require.NoError(t, e.store.AbortLease(e.ctx, lease))
	e.putJob("count-0", "count", "count-p0", -1)
	e.waitCounts(map[string]int64{"x": 2, "y": 1})
	e.eventually("the split job to stop on its refused commit", func() bool { return e.worker.runner("split-0") == nil })
	assert.Equal(t, int64(-1), e.committedOffset("split-p0"), "the refused commit left no offset")
	assert.Zero(t, e.worker.Stats()["count-0"].Duplicates)

	e.deleteJob("split-0")
	e.putJob("split-1", "split", "split-p0", 0)
	e.eventually("the re-read outputs to be dropped as duplicates", func() bool { return e.worker.Stats()["count-0"].Duplicates == 3 })
	e.eventually("the new job to commit past both rows", func() bool { return e.committedOffset("split-p0") == 2 })
	assert.Equal(t, map[string]int64{"x": 2, "y": 1}, e.counts(), "recomputed outputs are not counted twice")
	e.write("y")
	e.waitCounts(map[string]int64{"x": 2, "y": 2})
	outs, err := e.store.LoadOutputs(e.ctx, "split-p0")
	require.NoError(t, err)
	assert.Empty(t, outs)
}

// TestSwiftSourceWatermarkCoversWindow: the window's rows bound the watermark until they are
// committed past (delivered is not enough); after a start the published watermark bounds it
// until the job committed past every row a previous job could have read, or caught up with
// the source.
func TestSwiftSourceWatermarkCoversWindow(t *testing.T) {
	s := &swiftSource{src: &sourceState{id: "lines"}}
	s.start(0, nil, 500, 4)
	assert.Equal(t, uint64(500), s.minSystemTS(), "held at the published watermark")
	s.appendRows([]swiftRow{{offset: 0, pos: pos(0), id: "r0", ts: 1000}, {offset: 1, pos: pos(1), id: "r1", ts: 1000}, {offset: 2, pos: pos(2), id: "r2", ts: 1000}}, 3, pos(3))
	assert.Equal(t, uint64(500), s.minSystemTS())
	off, at, ok := s.deliverable(func(string) bool { return false })
	require.True(t, ok)
	assert.Equal(t, int64(3), off)
	assert.Equal(t, pos(3), at)
	assert.Equal(t, 3, s.held(), "delivered rows stay until committed past")
	s.commit(off, at, false)
	assert.Equal(t, uint64(500), s.minSystemTS(), "a previous job may have read up to offset 4")
	s.commit(off, at, true)
	assert.Zero(t, s.minSystemTS(), "caught up with the source and committed: nothing held")

	s.appendRows([]swiftRow{{offset: 3, pos: pos(3), id: "r3", ts: 2000}, {offset: 4, pos: pos(4), id: "r4", ts: 2100}}, 5, pos(5))
	off, at, ok = s.deliverable(func(id string) bool { return id == "r4" })
	require.True(t, ok)
	assert.Equal(t, int64(4), off, "the offset stops at the first row with an undelivered output")
	assert.Equal(t, pos(4), at, "at that row's position")
	assert.Equal(t, uint64(2000), s.minSystemTS())
	s.commit(off, at, false)
	assert.Equal(t, uint64(2100), s.minSystemTS())
	_, _, ok = s.deliverable(func(id string) bool { return id == "r4" })
	assert.False(t, ok, "nothing more to commit")

	s.start(10, pos(10), 0, 4)
	assert.Equal(t, uint64(1), s.minSystemTS(), "an unpublished watermark holds at the lowest timestamp")
	s.appendRows([]swiftRow{{offset: 10, pos: pos(10), id: "a", ts: 5}, {offset: 11, pos: pos(11), id: "b", ts: 5}, {offset: 12, pos: pos(12), id: "c", ts: 5}, {offset: 13, pos: pos(13), id: "d", ts: 5}}, 14, pos(14))
	s.commit(14, pos(14), false)
	assert.Zero(t, s.minSystemTS(), "committed past the window limit: the hold ends")
}

// stateTouch emits its row and writes a state: not allowed in a swift source.
type stateTouch struct{}

func (stateTouch) Invoke(inv *flow.Invocation) (*flow.Result, error) {
	res := &flow.Result{StateWrites: map[string][]byte{"seen": []byte("%true")}}
	for _, m := range inv.Messages {
		res.Outputs = append(res.Outputs, flow.Output{StreamID: "words", Payload: flow.Row{"word": m.Payload["text"]}})
	}
	return res, nil
}

func init() { flow.Register("test.StateTouch", stateTouch{}) }

// TestSwiftSourceRejectsState: a swift source is stateless; a process function that writes
// state fails the job with an error saying so, and nothing is delivered or committed.
func TestSwiftSourceRejectsState(t *testing.T) {
	specText := strings.Replace(swiftSourceSpec, `processing_function = "SplitWords"`, `processing_function = "test.StateTouch"`, 1)
	require.NotEqual(t, swiftSourceSpec, specText)
	e := startWordCountSpec(t, specText, nil, nil)
	e.write("a")
	e.putJob("count-0", "count", "count-p0", -1)
	e.putJob("split-0", "split", "split-p0", 0)
	e.eventually("the failed job's error in job_status", func() bool {
		sts, err := e.store.JobStatuses(e.ctx)
		require.NoError(t, err)
		for _, s := range sts {
			if s.JobID == "split-0" && s.State == ytstore.JobFailed {
				assert.Contains(t, s.Error, "swift source computation split: the process function wrote state or timers")
				return true
			}
		}
		return false
	})
	assert.Empty(t, e.counts(), "nothing was delivered")
	assert.Equal(t, int64(-1), e.committedOffset("split-p0"), "nothing was committed past")
}

// jobWatermark reads the system_watermark of jobID's status (ok false: no status yet).
func (e *wcEnv) jobWatermark(jobID string) (uint64, bool) {
	e.t.Helper()
	sts, err := e.store.JobStatuses(e.ctx)
	require.NoError(e.t, err)
	for _, s := range sts {
		if s.JobID == jobID {
			return s.SystemWatermark, true
		}
	}
	return 0, false
}

// TestSwiftSourceHoldsPublishedWatermark: a swift source job reports at most the pipeline's
// watermark published when it started until it caught up with its source and committed past
// everything it read: a previous job of the partition may have delivered outputs beyond the
// committed offset whose dedup rows must outlive their recomputation.
func TestSwiftSourceHoldsPublishedWatermark(t *testing.T) {
	e := startWordCountSpec(t, swiftSourceSpec, nil, nil)
	published := uint64(time.Now().Add(-time.Hour).UnixMicro())
	require.NoError(t, e.store.SetSystemWatermark(e.ctx, e.leader, published))
	e.write("a b")
	e.putJob("split-0", "split", "split-p0", 0)
	e.eventually("the split to hold two words", func() bool { return e.worker.Stats()["split-0"].OutboxLen == 2 })
	e.eventually("a status of the split holding them", func() bool {
		_, ok := e.jobWatermark("split-0")
		return ok && e.worker.runner("split-0").stats.epochs.Load() > 0
	})
	wm, _ := e.jobWatermark("split-0")
	assert.Equal(t, published, wm, "held at the watermark published at start (below the held outputs' time)")

	e.putJob("count-0", "count", "count-p0", -1)
	e.waitCounts(map[string]int64{"a": 1, "b": 1})
	e.eventually("the hold to end once caught up and committed", func() bool {
		wm, ok := e.jobWatermark("split-0")
		return ok && wm == 0 && e.committedOffset("split-p0") == 1
	})
}

// pos is the position of a queue source at offset off.
func pos(off int64) connector.Position { return connector.OffsetPosition(off) }
