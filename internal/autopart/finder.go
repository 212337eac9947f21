package autopart

import "sync"

// Finder is a partition's pivot_finder: it keeps the key hashes of the last Window messages
// the partition received and reports their quantiles (Pivots). Safe for concurrent use.
type Finder struct {
	mu    sync.Mutex
	parts int
	ring  []uint64
	next  int
	full  bool
	// cached are the last pivots computed, and added counts the keys added since.
	cached []uint64
	added  int
}

// NewFinder returns a finder of parts quantiles over a window of keys (pivot_finder
// part_count and window_size; <= 0: 16 and 16384).
func NewFinder(parts, window int) *Finder {
	if parts <= 0 {
		parts = DefaultPivotParts
	}
	if window <= 0 {
		window = DefaultPivotWindow
	}
	return &Finder{parts: parts, ring: make([]uint64, window)}
}

// Add records the key hash of one received message.
func (f *Finder) Add(key uint64) {
	f.mu.Lock()
	f.ring[f.next] = key
	f.added++
	f.next++
	if f.next == len(f.ring) {
		f.next, f.full = 0, true
	}
	f.mu.Unlock()
}

// Pivots returns the quantiles of the window (Pivots); nil before the first key. They are
// computed again once a sixteenth of the window is new since the last computation.
func (f *Finder) Pivots() []uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.next
	if f.full {
		n = len(f.ring)
	}
	if f.added == 0 || f.cached != nil && f.added < max(1, n/16) {
		return f.cached
	}
	f.cached, f.added = Pivots(append([]uint64(nil), f.ring[:n]...), f.parts), 0
	return f.cached
}
