package queue

import (
	"slices"
	"testing"
)

func TestTabletIndexes(t *testing.T) {
	if got := TabletIndexes(3, nil); !slices.Equal(got, []int64{0, 1, 2}) {
		t.Errorf("all tablets: %v", got)
	}
	if got := TabletIndexes(6, [][2]int64{{1, 3}, {5, 9}}); !slices.Equal(got, []int64{1, 2, 5}) {
		t.Errorf("filtered: %v", got)
	}
	if got := TabletIndexes(0, nil); len(got) != 0 {
		t.Errorf("no tablets: %v", got)
	}
}
