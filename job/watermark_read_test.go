package job

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ytflow/yt-flow/ytstore"
)

// TestStoreWatermarksWakesWaitingJobs: a read of the published watermarks is kept, and when
// one grew the jobs that may wait for it (stored timers, held by watermark_alignment) are woken
// for an epoch now; the others, and everyone after a read in which nothing grew, are not.
func TestStoreWatermarksWakesWaitingJobs(t *testing.T) {
	w := NewWorker(Config{})
	mk := func(id string) *runner {
		r := testRunner(nil, nil, "p-"+id, "l-"+id)
		r.w, r.inbox, r.outbox = w, newInbox(10), newOutbox()
		w.runners[id] = &runnerHandle{r: r, done: make(chan struct{})}
		return r
	}
	timers, idle, held := mk("timers"), mk("idle"), mk("held")
	timers.pendingTimers.Store(3)
	held.alignmentHeld.Store(true)
	woken := func(r *runner) bool {
		select {
		case <-r.inbox.notify:
			return true
		default:
			return false
		}
	}
	ew := func(streams map[string]uint64) *ytstore.Attributes {
		return &ytstore.Attributes{SystemWatermark: 10, EventWatermarks: &ytstore.EventWatermarks{Streams: streams, Groups: map[string]uint64{}}}
	}

	w.storeWatermarks(ew(map[string]uint64{"x": 5}))
	assert.Equal(t, uint64(10), w.systemWatermark.Load())
	assert.Equal(t, uint64(5), w.eventWatermarks.Load().Streams["x"])
	assert.True(t, woken(timers), "a job with timers is woken when a watermark grew")
	assert.True(t, woken(held), "a source held by alignment is woken")
	assert.False(t, woken(idle), "a job waiting for nothing is not")

	w.storeWatermarks(ew(map[string]uint64{"x": 5}))
	assert.False(t, woken(timers), "nothing grew: nobody is woken")
	assert.False(t, woken(held))

	w.storeWatermarks(ew(map[string]uint64{"x": 6}))
	assert.True(t, woken(timers), "stream x grew")
	assert.Equal(t, uint64(6), w.eventWatermarks.Load().Streams["x"])

	ev := uint64(7)
	w.storeWatermarks(&ytstore.Attributes{SystemWatermark: 10, EventWatermark: &ev})
	assert.True(t, woken(timers), "the pipeline EventWatermark grew")
	assert.Equal(t, uint64(7), w.eventWatermark.Load())
	assert.Equal(t, uint64(6), w.eventWatermarks.Load().Streams["x"], "a read without per-stream watermarks keeps the last ones")
}

// TestWatermarksGrew: a stream or group above its last value, or new, is growth; equal or
// lower values are not.
func TestWatermarksGrew(t *testing.T) {
	of := func(s, g map[string]uint64) *ytstore.EventWatermarks {
		return &ytstore.EventWatermarks{Streams: s, Groups: g}
	}
	for _, tc := range []struct {
		name        string
		before, now *ytstore.EventWatermarks
		want        bool
	}{
		{"first, empty", nil, of(nil, nil), false},
		{"first", nil, of(map[string]uint64{"x": 1}, nil), true},
		{"same", of(map[string]uint64{"x": 1}, nil), of(map[string]uint64{"x": 1}, nil), false},
		{"lower", of(map[string]uint64{"x": 2}, nil), of(map[string]uint64{"x": 1}, nil), false},
		{"stream grew", of(map[string]uint64{"x": 1, "y": 1}, nil), of(map[string]uint64{"x": 1, "y": 2}, nil), true},
		{"new group", of(map[string]uint64{"x": 1}, nil), of(map[string]uint64{"x": 1}, map[string]uint64{"g": 1}), true},
		{"group grew", of(nil, map[string]uint64{"g": 1}), of(nil, map[string]uint64{"g": 3}), true},
	} {
		assert.Equal(t, tc.want, watermarksGrew(tc.before, tc.now), tc.name)
	}
}
