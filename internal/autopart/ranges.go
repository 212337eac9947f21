package autopart

import (
	"math"
	"math/bits"
	"slices"
	"sort"
)

// Flow's pivot_finder defaults: part_count 16 quantiles over a window of 16384 keys.
const (
	DefaultPivotParts  = 16
	DefaultPivotWindow = 16384
)

// Range is a key range [Lower, Upper) of the uint64 key hash space; Upper 0 stands for 2^64.
type Range struct {
	Lower, Upper uint64
}

// Measured is one current partition as Split sees it: its range, its measured load as one
// weight, and the key quantiles it observed (Pivots: ascending, part_count+1 keys from the
// smallest to the largest seen, each part holding an equal share of the keys; empty when it
// saw none).
type Measured struct {
	Range
	Weight float64
	Pivots []uint64
}

// Pivots returns the part_count+1 quantile keys of keys (sorted in place): the smallest,
// the i/parts quantiles and the largest; nil for no keys.
func Pivots(keys []uint64, parts int) []uint64 {
	if len(keys) == 0 || parts <= 0 {
		return nil
	}
	slices.Sort(keys)
	out := make([]uint64, parts+1)
	for i := range parts {
		out[i] = keys[i*len(keys)/parts]
	}
	out[parts] = keys[len(keys)-1]
	return out
}

// segment is a piece of the key space [lo, hi) (hi as float64 over 2^64 stands for the top)
// whose weight is spread evenly over it; lo == hi is a single key (a point mass).
type segment struct {
	lo, hi float64
	w      float64
	key    uint64 // the key of a point mass
	point  bool
}

const top = 18446744073709551616.0 // 2^64

func upperF(u uint64) float64 {
	if u == 0 {
		return top
	}
	return float64(u)
}

// segments spreads each partition's weight over its pivots: part i holds Weight/parts
// between pivot i and pivot i+1 (the last part includes the largest key), equal pivots hold
// a single key. A partition with weight but no pivots spreads it over its whole range.
func segments(parts []Measured) []segment {
	var out []segment
	for _, m := range parts {
		if m.Weight <= 0 {
			continue
		}
		pv := make([]uint64, 0, len(m.Pivots))
		for _, k := range m.Pivots {
			if k >= m.Lower && (m.Upper == 0 || k < m.Upper) {
				pv = append(pv, k)
			}
		}
		slices.Sort(pv)
		if len(pv) < 2 {
			out = append(out, segment{lo: float64(m.Lower), hi: upperF(m.Upper), w: m.Weight})
			continue
		}
		n := len(pv) - 1
		for i := range n {
			s := segment{lo: float64(pv[i]), hi: float64(pv[i+1]), w: m.Weight / float64(n)}
			if i == n-1 {
				s.hi = math.Min(float64(pv[i+1])+1, upperF(m.Upper))
			}
			if pv[i] == pv[i+1] {
				s = segment{key: pv[i], point: true, w: s.w}
			}
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].start() < out[j].start() })
	return out
}

func (s segment) start() float64 {
	if s.point {
		return float64(s.key)
	}
	return s.lo
}

// Split cuts the key space into n ranges of about equal measured load: the load of each
// current partition is taken as spread evenly between its pivots (Measured), so a range
// where many keys were seen becomes several narrow partitions and a quiet one a wide one. The
// ranges cover [0, 2^64) in order without overlap, each holding at least one key. Without
// any weight the ranges are equal. n is at least 1 and at most 2^32.
//
// A key that alone holds more than 1/n of the load (a heavy hitter) gets a range of its own
// side of a cut, never split; HeavyHitters names such keys.
func Split(parts []Measured, n int) []Range {
	n = max(n, 1)
	segs := segments(parts)
	total := 0.0
	for _, s := range segs {
		total += s.w
	}
	if total <= 0 {
		return Even(n)
	}
	cuts := make([]uint64, 0, n-1) // lower bounds of ranges 1..n-1
	acc, si := 0.0, 0
	for j := 1; j < n; j++ {
		goal := total * float64(j) / float64(n)
		for si < len(segs) && acc+segs[si].w < goal {
			acc += segs[si].w
			si++
		}
		var cut uint64
		switch {
		case si >= len(segs):
			cut = math.MaxUint64
		case segs[si].point:
			cut = segs[si].key
			if goal-acc >= segs[si].w/2 && cut < math.MaxUint64 {
				cut++ // the key goes left
			}
		default:
			s := segs[si]
			cut = toKey(s.lo + (s.hi-s.lo)*(goal-acc)/s.w)
		}
		cuts = append(cuts, cut)
	}
	// Invariant: the ranges cover [0, 2^64) in order without overlap, each holding at least one
	// key (TestSplitByPivots, TestSplitBalancesSkewedKeys).
	for i := range cuts {
		lowest := uint64(i + 1)
		if i > 0 {
			lowest = cuts[i-1] + min(1, math.MaxUint64-cuts[i-1])
		}
		cuts[i] = max(cuts[i], lowest)
	}
	for i := len(cuts) - 1; i >= 0; i-- {
		highest := math.MaxUint64 - uint64(len(cuts)-1-i)
		if i < len(cuts)-1 {
			highest = cuts[i+1] - 1
		}
		cuts[i] = min(cuts[i], highest)
	}
	out := make([]Range, n)
	for i := range out {
		if i > 0 {
			out[i].Lower = cuts[i-1]
		}
		if i < n-1 {
			out[i].Upper = cuts[i]
		}
	}
	return out
}

func toKey(f float64) uint64 {
	switch {
	case f <= 0:
		return 0
	case f >= top:
		return math.MaxUint64
	}
	return uint64(f)
}

// Even returns n equal ranges of the key space: the i-th is [floor(i·2^64/n),
// floor((i+1)·2^64/n)).
func Even(n int) []Range {
	n = max(n, 1)
	out := make([]Range, n)
	at := func(k int) uint64 {
		if k >= n {
			return 0
		}
		q, _ := bits.Div64(uint64(k), 0, uint64(n))
		return q
	}
	for i := range out {
		out[i] = Range{Lower: at(i), Upper: at(i + 1)}
	}
	return out
}

// HeavyHitters returns the keys that alone hold more than 1/n of the measured load (a key
// repeated in a partition's pivots holds the parts between its copies), ascending: no
// partition count spreads them.
func HeavyHitters(parts []Measured, n int) []uint64 {
	segs := segments(parts)
	total := 0.0
	byKey := map[uint64]float64{}
	for _, s := range segs {
		total += s.w
		if s.point {
			byKey[s.key] += s.w
		}
	}
	var out []uint64
	for k, w := range byKey {
		if total > 0 && w > total/float64(max(n, 1)) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// Covers reports whether rs, sorted by Lower, cover [0, 2^64) without gaps or overlaps.
func Covers(rs []Range) bool {
	if len(rs) == 0 || rs[0].Lower != 0 || rs[len(rs)-1].Upper != 0 {
		return false
	}
	for i := 1; i < len(rs); i++ {
		if rs[i].Lower != rs[i-1].Upper || rs[i].Lower == 0 {
			return false
		}
	}
	return true
}
