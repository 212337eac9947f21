package ytstore

import "testing"

// TestBuffersKeepLargest: a buffer put back is handed out again for a use it fits; one too
// small for a use is dropped, and one past max or beyond the free list's size is not kept.
func TestBuffersKeepLargest(t *testing.T) {
	p := newBuffers(2, 1000)
	small := p.get(10)
	if cap(*small) < 10 || len(*small) != 0 {
		t.Fatalf("get(10): len %d cap %d", len(*small), cap(*small))
	}
	*small = append(*small, 'x')
	p.put(small)
	if b := p.get(5); b != small || len(*b) != 0 {
		t.Fatalf("get(5) after put: %p len %d, want the buffer put back (%p), empty", b, len(*b), small)
	}
	p.put(small)
	big := p.get(100)
	if big == small || cap(*big) < 100 {
		t.Fatalf("get(100): the small buffer (cap %d) or too small (cap %d)", cap(*small), cap(*big))
	}
	if len(p.free) != 0 {
		t.Fatalf("the small buffer was kept: %d free", len(p.free))
	}
	p.put(big)
	if b := p.get(50); b != big {
		t.Fatal("the larger buffer is not handed out again")
	}
	huge := p.get(2000)
	p.put(huge)
	if len(p.free) != 0 {
		t.Fatal("a buffer past max was kept")
	}
	for range 3 {
		b := make([]byte, 0, 10)
		p.put(&b)
	}
	if len(p.free) != 2 {
		t.Fatalf("%d buffers kept, want at most 2", len(p.free))
	}
}
