package autopart

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

func ranges(bounds ...uint64) []Range {
	out := make([]Range, len(bounds)+1)
	for i, b := range bounds {
		out[i].Upper, out[i+1].Lower = b, b
	}
	return out
}

// TestSplitByPivots cuts ranges from pivots against hand-computed values: a partition's load
// is spread evenly between its pivots, so the busy, narrow part of the key space gets narrow
// ranges and the quiet part a wide one; a key repeated in the pivots is never split.
func TestSplitByPivots(t *testing.T) {
	// [0,100) carries 3 between keys 10..40 (1 each in [10,20), [20,30), [30,41));
	// [100, 2^64) carries 1 in [200, 301).
	skewed := []Measured{
		{Range: Range{0, 100}, Weight: 3, Pivots: []uint64{10, 20, 30, 40}},
		{Range: Range{100, 0}, Weight: 1, Pivots: []uint64{200, 300}},
	}
	hot := []Measured{{Range: Range{0, 0}, Weight: 4, Pivots: []uint64{5, 50, 50, 50, 60}}} // key 50 holds 2 of 4
	for _, tc := range []struct {
		name  string
		parts []Measured
		n     int
		want  []Range
	}{
		{"quarters", skewed, 4, ranges(20, 30, 41)},
		{"halves", skewed, 2, ranges(30)},
		{"eighths", skewed, 8, ranges(15, 20, 25, 30, 35, 41, 250)},
		{"one", skewed, 1, ranges()},
		{"hot key goes left", hot, 2, ranges(51)},
		{"hot key alone; the next cut collides and moves up", hot, 4, ranges(50, 51, 52)},
		{"single key", []Measured{{Range: Range{0, 0}, Weight: 1, Pivots: []uint64{7, 7}}}, 3, ranges(7, 8)},
		{"top key", []Measured{{Range: Range{0, 0}, Weight: 1, Pivots: []uint64{math.MaxUint64, math.MaxUint64}}}, 3, ranges(math.MaxUint64-1, math.MaxUint64)},
		{"no pivots: even within the range", []Measured{{Range: Range{0, 1000}, Weight: 2}}, 4, ranges(250, 500, 750)},
		{"no load: even", []Measured{{Range: Range{0, 0}}}, 4, Even(4)},
	} {
		got := Split(tc.parts, tc.n)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: Split = %v, want %v", tc.name, got, tc.want)
		}
		if !Covers(got) {
			t.Errorf("%s: %v does not cover the key space", tc.name, got)
		}
	}
	if hh := HeavyHitters(hot, 4); !reflect.DeepEqual(hh, []uint64{50}) {
		t.Errorf("HeavyHitters(hot, 4) = %v, want [50]", hh)
	}
	if hh := HeavyHitters(hot, 2); len(hh) != 0 {
		t.Errorf("HeavyHitters(hot, 2) = %v: 2 of 4 is not more than half", hh)
	}
}

// TestSplitBalancesSkewedKeys: 80% of the keys fall in the lowest eighth of the hash space;
// pivots observed by three even partitions yield six ranges that each hold about a sixth of
// the keys (even ranges would give the first one 80%).
func TestSplitBalancesSkewedKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([]uint64, 30000)
	for i := range keys {
		if i%5 == 0 {
			keys[i] = rng.Uint64()
		} else {
			keys[i] = rng.Uint64() >> 3
		}
	}
	var parts []Measured
	for _, r := range Even(3) {
		var in []uint64
		for _, k := range keys {
			if k >= r.Lower && (r.Upper == 0 || k < r.Upper) {
				in = append(in, k)
			}
		}
		parts = append(parts, Measured{Range: r, Weight: float64(len(in)), Pivots: Pivots(in, DefaultPivotParts)})
	}
	got := Split(parts, 6)
	if !Covers(got) {
		t.Fatalf("%v does not cover the key space", got)
	}
	for i, r := range got {
		n := 0
		for _, k := range keys {
			if k >= r.Lower && (r.Upper == 0 || k < r.Upper) {
				n++
			}
		}
		if n < len(keys)/6*8/10 || n > len(keys)/6*12/10 {
			t.Errorf("range %d %v holds %d of %d keys, want about %d", i, r, n, len(keys), len(keys)/6)
		}
	}
	if got[3].Upper > 1<<61 || got[5].Upper-got[5].Lower < 1<<62 {
		t.Errorf("ranges are not uneven as the keys are: %v", got)
	}
}

// TestPivots: the smallest key, the i/parts quantiles and the largest.
func TestPivots(t *testing.T) {
	keys := make([]uint64, 100)
	for i := range keys {
		keys[i] = uint64(99 - i)
	}
	if got := Pivots(keys, 4); !reflect.DeepEqual(got, []uint64{0, 25, 50, 75, 99}) {
		t.Errorf("Pivots = %v", got)
	}
	if got := Pivots(nil, 16); got != nil {
		t.Errorf("Pivots(nil) = %v", got)
	}
}

// TestFinderWindow: the finder forgets keys older than its window.
func TestFinderWindow(t *testing.T) {
	f := NewFinder(2, 4)
	if f.Pivots() != nil {
		t.Fatal("pivots before any key")
	}
	for _, k := range []uint64{1000, 1001, 1002, 1003, 1, 2, 3} {
		f.Add(k)
	}
	// window: 1003, 1, 2, 3 → sorted 1 2 3 1003: smallest, median (index 2), largest
	if got := f.Pivots(); !reflect.DeepEqual(got, []uint64{1, 3, 1003}) {
		t.Errorf("Pivots = %v, want [1 3 1003]", got)
	}
}

// TestFinderRecomputes: pivots are computed again once a sixteenth of the window is new.
func TestFinderRecomputes(t *testing.T) {
	f := NewFinder(1, 32)
	for k := range uint64(32) {
		f.Add(k)
	}
	if got := f.Pivots(); !reflect.DeepEqual(got, []uint64{0, 31}) {
		t.Fatalf("Pivots = %v", got)
	}
	f.Add(100) // 1 of 32: kept
	if got := f.Pivots(); !reflect.DeepEqual(got, []uint64{0, 31}) {
		t.Errorf("after one key Pivots = %v, want the cached [0 31]", got)
	}
	f.Add(101) // 2 of 32: a sixteenth
	if got := f.Pivots(); !reflect.DeepEqual(got, []uint64{2, 101}) {
		t.Errorf("after two keys Pivots = %v, want [2 101]", got)
	}
}

// FuzzSplit: whatever the measured partitions say (weights, pivots in or out of their ranges,
// repeated, unsorted), Split returns n ranges covering the key space in order.
func FuzzSplit(f *testing.F) {
	f.Add(uint64(1<<63), 3.0, 1.0, []byte{1, 2, 3, 4, 200, 255}, uint16(4))
	f.Add(uint64(0), 0.0, 0.0, []byte{}, uint16(1))
	f.Add(uint64(1<<64-1), 1.0, 5.0, []byte{255, 255, 255, 255}, uint16(7))
	f.Fuzz(func(t *testing.T, cut uint64, w1, w2 float64, pivots []byte, n uint16) {
		if math.IsNaN(w1) || math.IsNaN(w2) || math.IsInf(w1, 0) || math.IsInf(w2, 0) || n == 0 {
			return
		}
		var pv []uint64
		for i := 0; i+1 < len(pivots); i += 2 {
			pv = append(pv, uint64(pivots[i])<<56|uint64(pivots[i+1])<<48|uint64(i))
		}
		parts := []Measured{{Range: Range{0, cut}, Weight: w1, Pivots: pv}, {Range: Range{cut, 0}, Weight: w2, Pivots: slices.Clone(pv)}}
		if cut == 0 {
			parts = parts[:1]
		}
		rs := Split(parts, int(n))
		if len(rs) != int(n) || !Covers(rs) {
			t.Fatalf("Split(%v, %d) = %v", parts, n, rs)
		}
		HeavyHitters(parts, int(n))
	})
}
