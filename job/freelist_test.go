package job

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFreeListKeepsBuffers: a buffer put back is handed out again, cleared, even after a
// garbage collection; one too large is dropped, and a full list drops the rest.
func TestFreeListKeepsBuffers(t *testing.T) {
	f := newFreeList[*int]()
	b := f.get()
	one := 1
	*b = append(*b, &one, &one)
	f.put(b)
	runtime.GC()
	again := f.get()
	require.Same(t, b, again, "the buffer put back survives a collection")
	require.Empty(t, *again)
	require.Nil(t, (*again)[:2][0], "a kept buffer holds no pointers")

	big := f.get()
	*big = make([]*int, 0, freeListMaxLen+1)
	f.put(big)
	require.NotSame(t, big, f.get(), "a too large buffer is not kept")

	mine := map[*[]*int]bool{}
	for range freeListSize + 2 {
		b := new([]*int)
		mine[b] = true
		f.put(b)
	}
	kept := 0
	for range freeListSize + 2 {
		if mine[f.get()] {
			kept++
		}
	}
	require.Equal(t, freeListSize, kept, "a full list keeps no more")
}
