package nexmark

import (
	"testing"
	"time"
)

// TestWatermarkPath: the window ends of q5 and q7 rows, and the medians of each step matched
// from samples: the first report and publication at or past a window's end, and its first
// output read.
func TestWatermarkPath(t *testing.T) {
	if end, ok := windowEnd(Q5, Row{"window_start": int64(4000)}); !ok || end != (4000+q5Size)*1000 {
		t.Fatalf("q5 window end = %d, %v", end, ok)
	}
	if end, ok := windowEnd(Q7, Row{"date_time": int64(q7Size + 1234)}); !ok || end != 2*q7Size*1000 {
		t.Fatalf("q7 window end = %d, %v", end, ok)
	}
	if _, ok := windowEnd(Q0, Row{}); ok {
		t.Fatal("q0 has no windows")
	}
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	row := Row{"window_start": int64(0)}
	end := uint64(q5Size * 1000)
	want := []Want{{Row: row, Dep: 0}}
	written := []time.Time{at(0)}
	samples := []traceSample{
		{at: at(50), reported: end - 1, reportedAt: at(40)},
		{at: at(150), reported: end, reportedAt: at(100)},
		{at: at(300), reported: end + 5, reportedAt: at(250), published: end - 1},
		{at: at(400), reported: end + 5, reportedAt: at(350), published: end},
	}
	got := watermarkPath(Q5, samples, []Row{row}, []time.Time{at(700)}, want, written)
	if got.Windows != 1 || got.Report != 100*time.Millisecond || got.Publish != 300*time.Millisecond ||
		got.Fire != 300*time.Millisecond || got.Total != 700*time.Millisecond {
		t.Fatalf("path = %+v; want 1 window, report 100ms, publish 300ms, fire 300ms, total 700ms", got)
	}
	if got := watermarkPath(Q5, samples[:3], []Row{row}, []time.Time{at(700)}, want, written); got.Windows != 0 {
		t.Fatalf("a window never published is not traced: %+v", got)
	}
}
