package ytstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ytflow/yt-flow/ytlocal/ytlocaltest"
)

// TestCollectDedup fills both dedup indexes with rows of known system
// timestamps and checks that CollectDedup deletes exactly the rows below the
// bound, in batches of the requested size, and keeps the others.
func TestCollectDedup(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t, "//home/p/gc")
	if err := st.CreatePipeline(ctx); err != nil {
		t.Fatal(err)
	}
	var full, compact []any
	for i := range 50 {
		ts := uint64(1000 + i*10) // 1000 .. 1490
		full = append(full, inputMessageRow{ComputationID: "c", Key: []byte{byte(i)}, MessageID: fmt.Sprintf("m%03d", i), SystemTimestamp: ts})
		compact = append(compact, compactInputMessageRow{DedupKey: []byte(fmt.Sprintf("k%03d", i)), SystemTimestamp: ts})
	}
	if err := st.yc.InsertRows(ctx, st.child(TableInputMessages), full, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.yc.InsertRows(ctx, st.child(TableCompactInputMessages), compact, nil); err != nil {
		t.Fatal(err)
	}
	if n, m, err := st.DedupRowCounts(ctx); err != nil || n != 50 || m != 50 {
		t.Fatalf("DedupRowCounts = %d, %d, %v; want 50, 50", n, m, err)
	}
	// 30 rows of each table are below 1300; batches of 12 take three calls.
	var total DedupGCResult
	calls := 0
	for {
		res, err := st.CollectDedup(ctx, 1300, 12)
		if err != nil {
			t.Fatal(err)
		}
		calls++
		total.InputMessages += res.InputMessages
		total.CompactInputMessages += res.CompactInputMessages
		if res.InputMessages > 12 || res.CompactInputMessages > 12 {
			t.Fatalf("a call deleted more than the batch: %+v", res)
		}
		if !res.More {
			break
		}
		if calls > 10 {
			t.Fatal("CollectDedup keeps reporting more rows")
		}
	}
	if total.InputMessages != 30 || total.CompactInputMessages != 30 {
		t.Fatalf("deleted %+v, want 30 rows of each table", total)
	}
	if n, m, err := st.DedupRowCounts(ctx); err != nil || n != 20 || m != 20 {
		t.Fatalf("after gc DedupRowCounts = %d, %d, %v; want 20, 20", n, m, err)
	}
	rows, err := selectAll[inputMessageRow](ctx, st, TableInputMessages, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.SystemTimestamp < 1300 {
			t.Fatalf("row %s with system_timestamp %d survived gc below 1300", r.MessageID, r.SystemTimestamp)
		}
	}
	if res, err := st.CollectDedup(ctx, 0, 0); err != nil || res != (DedupGCResult{}) {
		t.Fatalf("CollectDedup below 0 = %+v, %v; want nothing deleted", res, err)
	}
}

// BenchmarkCollectDedup measures deleting dedup rows on ytlocal in batches of
// 10000 (the controller's default): rows/s of one CollectDedup call over a
// compact index of 10000 expired rows.
func BenchmarkCollectDedup(b *testing.B) {
	ctx := context.Background()
	st, err := Open(ctx, Config{Proxy: ytlocaltest.New(b), Path: "//home/p/gcbench"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(st.Close)
	if err := st.CreatePipeline(ctx); err != nil {
		b.Fatal(err)
	}
	const n = 10000
	rows := make([]any, n)
	for i := range b.N {
		b.StopTimer()
		for j := range rows {
			rows[j] = compactInputMessageRow{DedupKey: []byte(fmt.Sprintf("k%06d-%08d", i, j)), SystemTimestamp: uint64(1000 + j)}
		}
		if err := st.yc.InsertRows(ctx, st.child(TableCompactInputMessages), rows, nil); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res, err := st.CollectDedup(ctx, 1000+n, n)
		if err != nil {
			b.Fatal(err)
		}
		if res.CompactInputMessages != n {
			b.Fatalf("deleted %d rows, want %d", res.CompactInputMessages, n)
		}
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "rows/s")
}

// TestSystemWatermarkAttribute: the leader publishes @system_watermark under
// its session; readers see it through SystemWatermark and Attributes; a
// deposed leader (session ended) gets ErrLeaseLost and changes nothing.
func TestSystemWatermarkAttribute(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t, "//home/p/wm")
	if _, err := st.SystemWatermark(ctx); !errors.Is(err, ErrNotFound) {
		t.Fatalf("SystemWatermark of a missing pipeline: %v, want ErrNotFound", err)
	}
	if err := st.CreatePipeline(ctx); err != nil {
		t.Fatal(err)
	}
	if w, err := st.SystemWatermark(ctx); err != nil || w != 0 {
		t.Fatalf("SystemWatermark before publication = %d, %v; want 0", w, err)
	}
	sess, err := st.StartSession(ctx, "leader", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetSystemWatermark(ctx, sess, 12345); err != nil {
		t.Fatal(err)
	}
	if w, err := st.SystemWatermark(ctx); err != nil || w != 12345 {
		t.Fatalf("SystemWatermark = %d, %v; want 12345", w, err)
	}
	if a, err := st.Attributes(ctx); err != nil || a.SystemWatermark != 12345 {
		t.Fatalf("Attributes().SystemWatermark = %+v, %v; want 12345", a, err)
	}
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.SetSystemWatermark(ctx, sess, 99999); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("SetSystemWatermark by a deposed leader: %v, want ErrLeaseLost", err)
	}
	if w, _ := st.SystemWatermark(ctx); w != 12345 {
		t.Fatalf("a deposed leader changed @system_watermark to %d", w)
	}
}
