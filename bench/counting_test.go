package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/ytstore"
)

// TestCountingProxy checks that rows written through the SDK via the proxy — compressed
// heavy requests included, which the SDK sends to the host /hosts names — are counted
// exactly, and that the proxy forwards them (they land in ytlocal).
func TestCountingProxy(t *testing.T) {
	srv := startServer(t, false)
	cp, err := StartCountingProxy(srv.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = cp.Close() })
	ctx := context.Background()
	p := newPipeline(t, cp.Addr(), "counting", Options{})

	before := cp.Tally()
	require.NoError(t, p.Write(ctx, []string{"a", "b", "c"}, 0))
	require.NoError(t, WriteRaw(ctx, p, []string{"x", "y", "x", "z", "x"}, 2))
	d := cp.Tally().Sub(before)

	// 3 input rows + 5 counts rows in 3 calls; 5 rows pushed in 3 calls.
	assert.Equal(t, int64(8), d.Rows["insert_rows"], d.String())
	assert.Equal(t, int64(4), d.Commands["insert_rows"], d.String())
	assert.Equal(t, int64(5), d.Rows["push_queue_producer"], d.String())
	assert.Equal(t, int64(3), d.Commands["push_queue_producer"], d.String())
	assert.Equal(t, int64(13), d.WrittenRows())
	assert.Zero(t, d.BadBodies)

	got, err := p.Totals(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"x": 3, "y": 1, "z": 1}, got)
	out, err := p.ReadOutput(ctx, 0, 100)
	require.NoError(t, err)
	assert.Len(t, out, 5)
}

func TestCountRows(t *testing.T) {
	for _, tc := range []struct {
		body string
		want int
		bad  bool
	}{
		{"", 0, false},
		{"{a=1;};", 1, false},
		{"{a=1};{b=<x=1>[2;3]};{}", 3, false},
		{"{a=1;};{b=", 1, true},
	} {
		n, err := CountRows([]byte(tc.body))
		assert.Equal(t, tc.want, n, tc.body)
		assert.Equal(t, tc.bad, err != nil, "%q: %v", tc.body, err)
	}
	bin, err := yson.MarshalFormat(map[string]any{"k": int64(1), "s": "x"}, yson.FormatBinary)
	require.NoError(t, err)
	n, err := CountRows(append(append(append([]byte{}, bin...), ';'), bin...))
	require.NoError(t, err)
	assert.Equal(t, 2, n)
}

func FuzzCountRows(f *testing.F) {
	for _, s := range []string{"", "{a=1;};", "{a=1};{b=<x=1>[2;3]};{}", "{a=1;};{b=", "1;2;3", "[;"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		n, err := CountRows(body)
		if err == nil {
			// A fragment that parses re-encodes to a fragment with as many items.
			var items []any
			r := yson.NewReaderKindFromBytes(body, yson.StreamListFragment)
			for {
				ok, err := r.NextListItem()
				if err != nil || !ok {
					break
				}
				raw, err := r.NextRawValue()
				if err != nil {
					break
				}
				items = append(items, raw)
			}
			if len(items) != n {
				t.Fatalf("CountRows = %d, reader sees %d items", n, len(items))
			}
		}
	})
}

// TestPipelineSmoke runs a tiny finite exactly-once pipeline through the benchmark helpers
// (in-process ytlocal, controller and workers) and checks both sinks are exact.
func TestPipelineSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a pipeline")
	}
	srv := startServer(t, false)
	words, want := inputWords(300, 20, 3)
	p := newPipeline(t, srv.Addr(), "smoke", Options{Tablets: 2, CountPartitions: 2, Finite: true})
	elapsed, startup, counted, extra := finiteRun(t, p, srv.Addr(), 2, words, want, false, nil)
	assert.Zero(t, extra)
	assert.Positive(t, startup, "the pipeline was seen working or completed")
	assert.LessOrEqual(t, startup, elapsed)
	assert.LessOrEqual(t, counted, elapsed, "the table counted everything before the sinks were checked")
	n, err := p.Counted(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(len(words)), n, "the table's counts add up to the input")
	require.NoError(t, p.CheckExact(context.Background(), want))
	assert.Equal(t, ytstore.StateCompleted, p.State(context.Background()))
}

// TestSpecsEmptyBatchBackoff: the EmptyBatchBackoff option reaches both computations of the
// dynamic spec, and the spec parser accepts it.
func TestSpecsEmptyBatchBackoff(t *testing.T) {
	p := &Pipeline{Root: "//home/x", Path: "//home/x/pipeline", opts: Options{EmptyBatchBackoff: 100 * time.Millisecond}}
	_, dynamic, err := p.Specs()
	require.NoError(t, err)
	var doc struct {
		Computations map[string]struct {
			EmptyBatchBackoff int64 `yson:"empty_batch_backoff"`
			BatchDuration     int64 `yson:"batch_duration"`
		} `yson:"computations"`
	}
	require.NoError(t, yson.Unmarshal(dynamic, &doc))
	for _, id := range []string{"split", "count"} {
		assert.Equal(t, int64(100), doc.Computations[id].EmptyBatchBackoff, id)
		assert.Equal(t, int64(100), doc.Computations[id].BatchDuration, id)
	}
}

// TestLoadSmoke feeds an infinite pipeline for a second through Load and checks that every
// message becomes visible in both sinks exactly as counted (no count above what was written).
func TestLoadSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a pipeline")
	}
	srv := startServer(t, false)
	ctx := context.Background()
	p := newPipeline(t, srv.Addr(), "load", Options{Tablets: 2, CountPartitions: 2})
	require.NoError(t, p.Start(ctx))
	rt := StartRuntime(srv.Addr(), p.Path, 2)
	t.Cleanup(rt.Stop)
	lctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	load, stop := StartLoad(lctx, p, 200, 7)
	t.Cleanup(load.Close)
	start := time.Now()
	wctx, cancelW := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelW()
	require.NoError(t, rt.WaitUntil(wctx, func() (bool, error) {
		sent, _ := load.Progress()
		return sent >= 200, load.Err()
	}))
	stop()
	end := time.Now()
	require.NoError(t, rt.WaitUntil(wctx, func() (bool, error) {
		ok, _ := load.AllBeforeVisible(end)
		_, missing := load.TableLatencies(start, end)
		return ok && missing == 0 || load.Err() != nil, nil
	}))
	require.NoError(t, load.Err())
	sent, arrived := load.Progress()
	assert.Equal(t, sent, arrived)
	lat, missing := load.Latencies(start, end)
	assert.Zero(t, missing)
	assert.Len(t, lat, sent)
	want := map[string]int64{}
	for i := range sent {
		want[fmt.Sprintf("w%04d", i%7)]++
	}
	// The load's reader trims the output queue behind it (as production readers do), so the
	// queue is checked by what the reader saw (every message arrived, above) and the result
	// table by its content.
	got, err := p.Totals(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	consumed, err := p.Store.PullQueue(ctx, p.Output(), p.OutputConsumer(), 0, 0, 1)
	require.NoError(t, err)
	assert.Empty(t, consumed, "the output queue is trimmed up to what the reader has read")
}
