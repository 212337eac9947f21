package job

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFreeListKeepsBuffers: a buffer put back is handed out again, zero over its whole
// capacity, even after a garbage collection; one too large is dropped, and a full list drops
// the rest.
func TestFreeListKeepsBuffers(t *testing.T) {
	f := newFreeList[*int]()
	require.Nil(t, f.get(), "an empty list hands out nothing")
	one := 1
	b := append(make([]*int, 0, 8), &one, &one, &one)
	f.put(b[:2]) // the caller's length may be shorter than what it wrote
	runtime.GC()
	again := f.get()
	require.Same(t, &b[:1][0], &again[:1][0], "the buffer put back survives a collection")
	require.Empty(t, again)
	for i, p := range again[:cap(again)] {
		require.Nil(t, p, "element %d: a kept buffer holds no pointers", i)
	}

	f.put(make([]*int, 0, freeListMaxLen+1))
	require.Nil(t, f.get(), "a too large buffer is not kept")

	mine := map[**int]bool{}
	for range freeListSize + 2 {
		b := make([]*int, 1)
		mine[&b[0]] = true
		f.put(b)
	}
	kept := 0
	for range freeListSize + 2 {
		if b := f.get(); b != nil && mine[&b[:1][0]] {
			kept++
		}
	}
	require.Equal(t, freeListSize, kept, "a full list keeps no more")
}
