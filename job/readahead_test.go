// Tests of source reads: read-ahead during the commit, its top-up, the idle wait and the
// throttled consumer advance.

package job

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/connectors/queue"
	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytstore"
)

// TestSourceReadAhead: a source job reads its next rows while it commits, and uses them only
// from the offset that commit made durable. Behind a proxy that cuts a share of the replies
// of row writes and commits (epochs then fail or resolve an unknown outcome), small batches
// still number every input row exactly once, in order, and some batches were read ahead.
func TestSourceReadAhead(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	srv, err := ytlocal.Start(ctx, ytlocal.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	const path = "//tmp/n/pipeline"
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: srv.Addr(), Path: path})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	require.NoError(t, st.CreatePipeline(ctx))
	require.NoError(t, st.SetSpecs(ctx, ytstore.SpecUpdate{Spec: yson.RawValue(numberSpec), SpecVersion: 1,
		DynamicSpec: yson.RawValue(`{computations = {number = {max_rows_per_batch = 7}}}`), DynamicSpecVersion: 1,
		TargetState: ytstore.TargetWorking}))
	data := schema.Schema{Columns: []schema.Column{{Name: "data", Type: schema.TypeString}}}
	out := schema.Schema{Columns: []schema.Column{{Name: "data", Type: schema.TypeString}, {Name: "seq", Type: schema.TypeInt64}}}
	for _, ut := range []ytstore.UserTable{
		{Path: "//tmp/n/input", Kind: ytstore.UserQueue, Schema: data},
		{Path: "//tmp/n/consumer", Kind: ytstore.UserConsumer, Queue: "//tmp/n/input"},
		{Path: "//tmp/n/out", Kind: ytstore.UserQueue, Schema: out},
	} {
		require.NoError(t, st.EnsureUserTable(ctx, ut))
	}
	const n = 300
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprintf("r%03d", i)
	}
	for i := 0; i < n; i += 50 {
		rows := make([]map[string]any, 0, 50)
		for _, d := range want[i : i+50] {
			rows = append(rows, map[string]any{"data": d})
		}
		require.NoError(t, st.InsertRows(ctx, "//tmp/n/input", rows))
	}
	leader, err := st.StartSession(ctx, "test leader", time.Minute)
	require.NoError(t, err)
	t.Cleanup(func() { _ = leader.Close() })
	proxy := startFlakyProxy(t, srv.Addr(), 11, 0.2)
	w := NewWorker(Config{Proxy: proxy.addr, Path: path, WorkerID: "w1", LeaseCheckPeriod: time.Second,
		EmptyBatchBackoff: 20 * time.Millisecond, PollPeriod: 50 * time.Millisecond})
	wctx, wcancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var runErr error
	go func() { defer close(done); runErr = w.Run(wctx) }()
	t.Cleanup(func() { wcancel(); <-done })
	select {
	case <-w.Ready():
	case <-done:
		t.Fatalf("worker stopped: %v", runErr)
	case <-ctx.Done():
		t.Fatal("worker not ready")
	}
	e := &wcEnv{t: t, ctx: ctx, store: st, leader: leader, worker: w}
	proxy.on.Store(true)
	e.putJob("number-0", "number", "number-p0", 0)

	// numbered returns the output rows by seq; a seq seen twice fails the test.
	numbered := func() map[int64]string {
		rows, err := st.SelectRows(ctx, "data, seq from [//tmp/n/out]")
		require.NoError(t, err)
		got := map[int64]string{}
		for _, r := range rows {
			seq, d := r["seq"].(int64), r["data"].(string)
			if prev, dup := got[seq]; dup {
				t.Fatalf("seq %d numbers both %s and %s", seq, prev, d)
			}
			got[seq] = d
		}
		return got
	}
	e.eventually("every row numbered", func() bool { return len(numbered()) >= n })
	got := numbered()
	require.Len(t, got, n, "no row is numbered twice")
	for i, d := range want {
		require.Equal(t, d, got[int64(i+1)], "row %d is numbered %d: offsets advanced with the commits only", i, i+1)
	}
	r := w.runner("number-0")
	require.NotNil(t, r)
	require.Positive(t, r.stats.readAheads.Load(), "some batches were read during the previous commit")
	require.Positive(t, proxy.cut.Load(), "the proxy cut some replies")

	// The YT consumer follows the committed offset (for lag reporting), at most once per
	// consumerAdvancePeriod (TestConsumerAdvanceThrottled), and gets there in the end even when
	// the proxy cut the last advance: failed advances are retried.
	e.eventually("the consumer reaches the last committed offset", func() bool {
		rows, err := st.SelectRows(ctx, "* from [//tmp/n/consumer]")
		return err == nil && len(rows) == 1 && fmt.Sprint(rows[0]["offset"]) == fmt.Sprint(n)
	})
	epochs, advances := r.stats.epochs.Load(), proxy.advances.Load()
	t.Logf("replies cut: %d; batches read ahead: %d; epochs: %d; consumer advances: %d", proxy.cut.Load(), r.stats.readAheads.Load(), epochs, advances)
}

// TestIdleWait: an idle job waits empty_batch_backoff, a source job whose last epoch read rows
// at most half of batch_duration (at least 10ms); the worker's override caps both.
func TestIdleWait(t *testing.T) {
	w := NewWorker(Config{})
	src := []*sourceState{{id: "s"}}
	for _, tc := range []struct {
		name     string
		sources  []*sourceState
		busy     bool
		batch    time.Duration
		override time.Duration
		want     time.Duration
	}{
		{"idle source", src, false, 100 * time.Millisecond, 0, 250 * time.Millisecond},
		{"busy source", src, true, 100 * time.Millisecond, 0, 50 * time.Millisecond},
		{"busy source, long batches", src, true, 2 * time.Second, 0, 250 * time.Millisecond},
		{"busy source, tiny batches", src, true, 4 * time.Millisecond, 0, 10 * time.Millisecond},
		{"busy transform", nil, true, 100 * time.Millisecond, 0, 250 * time.Millisecond},
		{"override", src, true, 100 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond},
	} {
		w.cfg.EmptyBatchBackoff = tc.override
		r := &runner{w: w, sources: tc.sources}
		r.dyn.EmptyBatchBackoff, r.dyn.BatchDuration = 250*time.Millisecond, tc.batch
		require.Equal(t, tc.want, r.idleWait(tc.busy), tc.name)
	}

	// A swift source job: busy like a source; idle but holding rows not committed past, it
	// comes back soon to commit its offset once their outputs are delivered.
	w.cfg.EmptyBatchBackoff = 0
	sw := &swiftSource{}
	r := &runner{w: w, swiftSrc: []*swiftSource{sw}}
	r.dyn.EmptyBatchBackoff, r.dyn.BatchDuration = 250*time.Millisecond, 100*time.Millisecond
	require.Equal(t, 50*time.Millisecond, r.idleWait(true), "busy swift source")
	require.Equal(t, 250*time.Millisecond, r.idleWait(false), "idle swift source holding nothing")
	sw.appendRows([]swiftRow{{offset: 0, id: "r0", ts: 1}}, 1, connector.OffsetPosition(1))
	require.Equal(t, 50*time.Millisecond, r.idleWait(false), "idle swift source holding a row")

	// A job stays busy for empty_batch_backoff after it last found work: a source whose input
	// pauses briefly is polled soon, one that stays idle backs off.
	now := time.Now()
	require.False(t, r.recentlyBusy(time.Time{}, now), "never found work")
	require.True(t, r.recentlyBusy(now.Add(-200*time.Millisecond), now), "found work 200ms ago")
	require.False(t, r.recentlyBusy(now.Add(-250*time.Millisecond), now), "idle for the whole backoff")
	w.cfg.EmptyBatchBackoff = 20 * time.Millisecond
	require.False(t, r.recentlyBusy(now.Add(-30*time.Millisecond), now), "the worker's override")
}

// TestReadAheadTopsUp: rows written to the queue after a read ahead ran (during the commit)
// join the rows read ahead in the next epoch's batch, in offset order, instead of waiting
// for one more epoch; a full read ahead is used as it is. A top-up that does not answer in
// time is not waited for: the rows in hand are the batch, and the top-up, still running, is
// the next epoch's read ahead, whose rows follow them (no row lost, none twice).
func TestReadAheadTopsUp(t *testing.T) {
	e := startWordCount(t) // its queue and consumer; no job runs, so nothing else reads them
	ctx := e.ctx
	write := func(from, to int) {
		rows := make([]map[string]any, 0, to-from)
		for i := from; i < to; i++ {
			rows = append(rows, map[string]any{"text": fmt.Sprintf("r%d", i)})
		}
		require.NoError(t, e.store.InsertRows(ctx, "//tmp/wc/input", rows))
	}
	offsets := func(rows []connector.Row) []int64 {
		out := make([]int64, len(rows))
		for i, r := range rows {
			out[i] = r.Offset
			require.Equal(t, fmt.Sprintf("r%d", r.Offset), r.Columns["text"], "row at offset %d", r.Offset)
		}
		return out
	}
	// A loaded machine may take longer than topUpWait for a read: this part is about rows that
	// come back.
	s := &sourceState{id: "lines", src: queue.NewSource(e.store, "//tmp/wc/input", "//tmp/wc/consumer", 0, false), topUpWait: time.Minute}
	write(0, 3)
	s.readAhead(ctx, 0, nil, 10)
	<-s.ahead.done
	write(3, 5) // during the commit
	rows, ahead, err := s.read(ctx, 10)
	require.NoError(t, err)
	require.True(t, ahead)
	require.Equal(t, []int64{0, 1, 2, 3, 4}, offsets(rows))

	s.offset, s.pos = 5, connector.OffsetPosition(5)
	write(5, 9)
	s.readAhead(ctx, 5, connector.OffsetPosition(5), 4)
	<-s.ahead.done
	write(9, 10)
	rows, ahead, err = s.read(ctx, 4)
	require.NoError(t, err)
	require.True(t, ahead)
	require.Equal(t, []int64{5, 6, 7, 8}, offsets(rows), "a full read ahead is the batch")

	// A top-up that does not answer within topUpWait (its source is held back here) leaves
	// the batch to the rows read ahead and becomes the next read ahead.
	gated := &gatedSource{Source: s.src, gate: make(chan struct{})}
	s = &sourceState{id: "lines", src: gated, offset: 9, pos: connector.OffsetPosition(9), topUpWait: time.Millisecond}
	s.readAhead(ctx, 9, connector.OffsetPosition(9), 10)
	gated.gate <- struct{}{} // the read ahead goes through: row 9
	<-s.ahead.done
	write(10, 12)
	rows, ahead, err = s.read(ctx, 10) // its top-up waits at the gate
	require.NoError(t, err)
	require.True(t, ahead)
	require.Equal(t, []int64{9}, offsets(rows), "the rows in hand, without the top-up")
	require.NotNil(t, s.ahead, "the top-up is the next read ahead")
	s.offset, s.pos = 10, rows[0].Next     // the epoch committed row 9
	s.readAhead(ctx, 10, rows[0].Next, 10) // no second read while the top-up runs
	close(gated.gate)
	rows, ahead, err = s.read(ctx, 10)
	require.NoError(t, err)
	require.True(t, ahead)
	require.Equal(t, []int64{10, 11}, offsets(rows), "the top-up's rows follow")
}

// gatedSource holds each Read of a real source until gate yields (or is closed) and counts
// the reads.
type gatedSource struct {
	connector.Source
	gate  chan struct{}
	reads atomic.Int32
}

func (g *gatedSource) Read(ctx context.Context, from connector.Position, max int64) ([]connector.Row, error) {
	g.reads.Add(1)
	select {
	case <-g.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.Source.Read(ctx, from, max)
}

// TestConsumerAdvanceThrottled: commits move the YT consumer at most once per
// consumerAdvancePeriod (of the clock passed in), always to the latest committed offset, and
// a forced advance (a finite source at its end) goes at once.
func TestConsumerAdvanceThrottled(t *testing.T) {
	st, ctx := commitEnv(t)
	data := schema.Schema{Columns: []schema.Column{{Name: "data", Type: schema.TypeString}}}
	require.NoError(t, st.EnsureUserTable(ctx, ytstore.UserTable{Path: "//tmp/a/input", Kind: ytstore.UserQueue, Schema: data}))
	require.NoError(t, st.EnsureUserTable(ctx, ytstore.UserTable{Path: "//tmp/a/consumer", Kind: ytstore.UserConsumer, Queue: "//tmp/a/input"}))
	consumerOffset := func() string {
		rows, err := st.SelectRows(ctx, "* from [//tmp/a/consumer]")
		require.NoError(t, err)
		if len(rows) == 0 {
			return "none"
		}
		return fmt.Sprint(rows[0]["offset"])
	}

	s := &sourceState{id: "s", src: queue.NewSource(st, "//tmp/a/input", "//tmp/a/consumer", 0, false)}
	lg := NewWorker(Config{}).log
	t0 := time.Unix(1000, 0)
	var started []int64
	for i := range 25 { // a commit every 100ms for 2.5s
		s.committed(int64(10*(i+1)), connector.OffsetPosition(int64(10*(i+1))))
		before := s.advancing
		s.advanceCommitted(ctx, lg, t0.Add(time.Duration(i)*100*time.Millisecond), false)
		if s.advancing != before {
			off, err := connector.PositionOffset(s.advancing.pos)
			require.NoError(t, err)
			started = append(started, off)
		}
		s.waitAdvance()
	}
	require.Equal(t, []int64{10, 110, 210}, started, "one advance per period, to the offset committed last")
	require.Equal(t, "210", consumerOffset())

	s.committed(260, connector.OffsetPosition(260))
	s.advanceCommitted(ctx, lg, t0.Add(2500*time.Millisecond), false)
	require.Nil(t, s.advancing, "within the period nothing starts")
	s.advanceCommitted(ctx, lg, t0.Add(2600*time.Millisecond), true)
	require.NotNil(t, s.advancing, "a forced advance starts at once")
	s.waitAdvance()
	require.Equal(t, "260", consumerOffset())
}
