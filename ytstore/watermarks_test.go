package ytstore

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestWatermarksRead: Watermarks reads the three published watermarks (none before they are
// published, ErrNotFound for a missing pipeline) and nothing else of the attributes.
func TestWatermarksRead(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t, "//home/p/wms")
	if _, err := st.Watermarks(ctx); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Watermarks of a missing pipeline: %v, want ErrNotFound", err)
	}
	if err := st.CreatePipeline(ctx); err != nil {
		t.Fatal(err)
	}
	a, err := st.Watermarks(ctx)
	if err != nil || a.SystemWatermark != 0 || a.EventWatermarks != nil {
		t.Fatalf("Watermarks before publication = %+v, %v; want none", a, err)
	}
	if err := st.SetTargetState(ctx, TargetWorking); err != nil {
		t.Fatal(err)
	}
	sess, err := st.StartSession(ctx, "leader", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if err := st.SetSystemWatermark(ctx, sess, 111); err != nil {
		t.Fatal(err)
	}
	if err := st.SetEventWatermark(ctx, sess, 222); err != nil {
		t.Fatal(err)
	}
	if err := st.SetEventWatermarks(ctx, sess, EventWatermarks{Streams: map[string]uint64{"bids": 333}, Groups: map[string]uint64{"g": 444}}); err != nil {
		t.Fatal(err)
	}
	a, err = st.Watermarks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a.SystemWatermark != 111 || a.EventWatermark == nil || *a.EventWatermark != 222 || a.EventWatermarks == nil ||
		a.EventWatermarks.Streams["bids"] != 333 || a.EventWatermarks.Groups["g"] != 444 {
		t.Fatalf("Watermarks = %+v (event_watermarks %+v); want 111, 222, bids 333, g 444", a, a.EventWatermarks)
	}
	if a.TargetState != "" || len(a.Spec) != 0 || a.PipelineState != "" {
		t.Fatalf("Watermarks read more than the watermarks: %+v", a)
	}
	if full, err := st.Attributes(ctx); err != nil || full.TargetState != TargetWorking {
		t.Fatalf("Attributes().TargetState = %+v, %v; want %s", full, err, TargetWorking)
	}
}
