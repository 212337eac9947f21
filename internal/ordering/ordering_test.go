package ordering

import (
	"math"
	"math/rand"
	"slices"
	"testing"
)

func msgs(spec ...any) []Message {
	var out []Message
	for i := 0; i < len(spec); i += 2 {
		out = append(out, Message{Stream: spec[i].(string), EventTS: uint64(spec[i+1].(int))})
	}
	return out
}

// TestReleaseMergesByStabilizedTime: with both streams' watermarks past everything, the merge
// interleaves the two queues by event timestamp plus delay, ties to the stream listed first.
func TestReleaseMergesByStabilizedTime(t *testing.T) {
	c := Config{Streams: []string{"clicks", "views"}}
	buf := msgs("views", 10, "clicks", 5, "views", 20, "clicks", 15, "clicks", 20, "views", 30)
	all := map[string]uint64{"clicks": 100, "views": 100}
	// clicks 5 (1), views 10 (0), clicks 15 (3), clicks 20 (4, tie with views 20: clicks is
	// listed first), views 20 (2), views 30 (5).
	if got, want := c.Release(buf, all, 10, false), []int{1, 0, 3, 4, 2, 5}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	if got, want := c.Release(buf, all, 3, false), []int{1, 0, 3}; !slices.Equal(got, want) {
		t.Errorf("max 3: %v, want %v", got, want)
	}
	// stream_delays: views delayed by 12 µs is treated as 12 µs later: views 10 → 22.
	// clicks 5, 15, 20 (all ≤ 22), then views 22, 32, 42.
	d := Config{Streams: []string{"clicks", "views"}, Delays: map[string]uint64{"views": 12}}
	if got, want := d.Release(buf, all, 10, false), []int{1, 3, 4, 0, 2, 5}; !slices.Equal(got, want) {
		t.Errorf("with a delay: %v, want %v", got, want)
	}
	if got := d.Stabilized(Message{Stream: "views", EventTS: math.MaxUint64 - 1}); got != math.MaxUint64 {
		t.Errorf("stabilized timestamps saturate, got %d", got)
	}
}

// TestReleaseKeepsStreamOrder: within a stream the arrival order stands even where event time
// goes back (the per-key lineage order); the merge only compares heads.
func TestReleaseKeepsStreamOrder(t *testing.T) {
	c := Config{Streams: []string{"a", "b"}}
	buf := msgs("a", 30, "a", 10, "b", 20, "b", 25)
	all := map[string]uint64{"a": math.MaxUint64, "b": math.MaxUint64}
	// Heads a30, b20 → b20; a30, b25 → b25; then a30, a10 in arrival order.
	if got, want := c.Release(buf, all, 10, false), []int{2, 3, 0, 1}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

// TestReleaseWaitsForWatermarks: a head is released only once every stream with nothing
// buffered has a watermark (plus its delay) at or past it; a stream without a published
// watermark holds everything back; completion (all) releases everything in merged order.
func TestReleaseWaitsForWatermarks(t *testing.T) {
	c := Config{Streams: []string{"a", "b"}, Delays: map[string]uint64{"b": 5}}
	buf := msgs("a", 10, "a", 20, "a", 30)
	for _, tc := range []struct {
		name string
		wm   map[string]uint64
		want []int
	}{
		{"b has no watermark yet", map[string]uint64{"a": 10}, []int{}},
		{"b at 4 (+5 = 9) is before a10", map[string]uint64{"a": 10, "b": 4}, []int{}},
		{"b at 5 (+5 = 10) passed a10", map[string]uint64{"a": 10, "b": 5}, []int{0}},
		{"b at 15 (+5 = 20) passed a10 and a20", map[string]uint64{"b": 15}, []int{0, 1}},
		{"b ended", map[string]uint64{"b": math.MaxUint64}, []int{0, 1, 2}},
	} {
		got := c.Release(buf, tc.wm, 10, false)
		if !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
			t.Errorf("%s: released %v, want %v", tc.name, got, tc.want)
		}
	}
	if got, want := c.Release(buf, nil, 10, true), []int{0, 1, 2}; !slices.Equal(got, want) {
		t.Errorf("completing: %v, want %v", got, want)
	}
	// Once a queue empties during a release, its stream's watermark gates what follows:
	// b3 (stabilized 8), a15 (b still buffers b12), then b12 (17) waits for a (watermark 15).
	buf = msgs("b", 3, "a", 15, "b", 12)
	if got, want := c.Release(buf, map[string]uint64{"a": 15, "b": 8}, 10, false), []int{0, 1}; !slices.Equal(got, want) {
		t.Errorf("b's queue: %v, want %v", got, want)
	}
	// A stream that never appears in the buffer is gated by its watermark; an unlisted
	// stream is merged without being waited for.
	three := Config{Streams: []string{"a", "b", "c"}}
	buf = msgs("a", 10, "x", 1)
	if got := three.Release(buf, map[string]uint64{"b": 50}, 10, false); len(got) != 0 {
		t.Errorf("c without a watermark: released %v", got)
	}
	if got, want := three.Release(buf, map[string]uint64{"b": 50, "c": 10}, 10, false), []int{1, 0}; !slices.Equal(got, want) {
		t.Errorf("all passed: %v, want %v", got, want)
	}
}

// TestReleaseSimulation: seeded simulations of streams, each in event-time order, arriving in
// random interleavings and batch sizes, with each stream's watermark the smallest event time it
// has not had released yet (what the runtime's stream watermark bounds: messages in flight and
// held); the merge's output over all takes is in stabilized event-time order, and every
// message comes out exactly once. A failing seed is printed.
func TestReleaseSimulation(t *testing.T) {
	for seed := int64(1); seed <= 300; seed++ {
		rnd := rand.New(rand.NewSource(seed))
		streams := []string{"a", "b", "c"}[:2+rnd.Intn(2)]
		c := Config{Streams: streams, Delays: map[string]uint64{}}
		pending := map[string][]uint64{} // not arrived yet, in order
		released := map[string]int{}     // released so far, by stream
		total := 0
		for _, s := range streams {
			if rnd.Intn(2) == 0 {
				c.Delays[s] = uint64(rnd.Intn(20))
			}
			ts := uint64(rnd.Intn(10))
			for range rnd.Intn(30) {
				ts += uint64(rnd.Intn(8))
				pending[s] = append(pending[s], ts)
				total++
			}
		}
		all := map[string][]uint64{}
		for s, p := range pending {
			all[s] = append([]uint64(nil), p...)
		}
		var buf []Message
		var out []Message
		for step := 0; len(out) < total; step++ {
			if step > 10_000 {
				t.Fatalf("seed %d: no progress: %d of %d released", seed, len(out), total)
			}
			for _, s := range streams { // random arrivals
				n := rnd.Intn(4)
				for ; n > 0 && len(pending[s]) > 0; n-- {
					buf = append(buf, Message{Stream: s, EventTS: pending[s][0]})
					pending[s] = pending[s][1:]
				}
			}
			wm := map[string]uint64{}
			for _, s := range streams {
				if released[s] < len(all[s]) {
					wm[s] = all[s][released[s]]
				} else {
					wm[s] = math.MaxUint64
				}
			}
			got := c.Release(buf, wm, 1+rnd.Intn(5), false)
			taken := map[int]bool{}
			for _, i := range got {
				out = append(out, buf[i])
				released[buf[i].Stream]++
				taken[i] = true
			}
			kept := buf[:0]
			for i, m := range buf {
				if !taken[i] {
					kept = append(kept, m)
				}
			}
			buf = kept
		}
		for i := 1; i < len(out); i++ {
			if c.Stabilized(out[i]) < c.Stabilized(out[i-1]) {
				t.Fatalf("seed %d: released %v (stabilized %d) after %v (stabilized %d); delays %v",
					seed, out[i], c.Stabilized(out[i]), out[i-1], c.Stabilized(out[i-1]), c.Delays)
			}
		}
		for _, s := range streams {
			if released[s] != len(all[s]) {
				t.Fatalf("seed %d: stream %s: %d of %d released", seed, s, released[s], len(all[s]))
			}
		}
	}
}
