package ytvalue

import (
	"math"
	"slices"
	"testing"
)

func TestCompare(t *testing.T) {
	nan := math.NaN()
	negZero := math.Copysign(0, -1)
	for _, tc := range []struct {
		name string
		a, b any
		want int
	}{
		// Cross-type: the type tag decides, whatever the values.
		{"null < int64", nil, int64(math.MinInt64), -1},
		{"null = null", nil, nil, 0},
		{"int64 < uint64 by type", int64(math.MaxInt64), uint64(0), -1},
		{"uint64 > int64 by type", uint64(0), int64(-1), 1},
		{"uint64 < double by type", uint64(math.MaxUint64), math.Inf(-1), -1},
		{"int64 < double by type", int64(5), 1.5, -1},
		{"double < boolean by type", math.Inf(1), false, -1},
		{"NaN < boolean by type", nan, false, -1},
		{"boolean < string by type", true, "", -1},
		{"string < composite by type", "\xff", []any{}, -1},
		{"composite > null", map[string]any{}, nil, 1},

		// Signed and unsigned within their type.
		{"int64 negative", int64(-2), int64(-1), -1},
		{"int64 extremes", int64(math.MinInt64), int64(math.MaxInt64), -1},
		{"int64 equal", int64(7), int64(7), 0},
		{"uint64 high bit is large", uint64(1 << 63), uint64(1), 1},
		{"uint64 extremes", uint64(0), uint64(math.MaxUint64), -1},

		// Doubles: numeric, -0 = +0, NaN last and equal to itself.
		{"double order", -1.5, 2.0, -1},
		{"-Inf < finite", math.Inf(-1), -math.MaxFloat64, -1},
		{"-0 = +0", negZero, 0.0, 0},
		{"+0 = -0", 0.0, negZero, 0},
		{"NaN = NaN", nan, nan, 0},
		{"NaN > +Inf", nan, math.Inf(1), 1},
		{"+Inf < NaN", math.Inf(1), nan, -1},
		{"-Inf < NaN", math.Inf(-1), nan, -1},
		{"NaN > -0", nan, negZero, 1},

		// Booleans.
		{"false < true", false, true, -1},
		{"true = true", true, true, 0},

		// Strings as bytes, not as Unicode or case-folded text.
		{"string bytes", "a", "b", -1},
		{"string prefix first", "ab", "abc", -1},
		{"string empty first", "", "\x00", -1},
		{"string upper < lower", "Z", "a", -1},
		{"string high byte last", "\x7f", "\x80", -1},
		{"string UTF-8 by bytes", "\u00e9", "\uff21", -1},
		{"string invalid UTF-8", "\xff", "\xc3\xa9", 1},

		// Composites: deterministic by binary YSON.
		{"composite equal", []any{int64(1), "a"}, []any{int64(1), "a"}, 0},
		{"composite map keys sorted", map[string]any{"a": int64(1), "b": int64(2)}, map[string]any{"b": int64(2), "a": int64(1)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Compare(tc.a, tc.b); got != tc.want {
				t.Errorf("Compare(%#v, %#v) = %d, want %d", tc.a, tc.b, got, tc.want)
			}
			if got := Compare(tc.b, tc.a); got != -tc.want {
				t.Errorf("Compare(%#v, %#v) = %d, want %d (antisymmetry)", tc.b, tc.a, got, -tc.want)
			}
		})
	}
}

// TestCompareSortsTotally sorts one value of every kind, shuffled, and expects
// YTsaurus' order of types and NaN after every other double.
func TestCompareSortsTotally(t *testing.T) {
	want := []any{
		nil,
		int64(math.MinInt64), int64(-1), int64(0), int64(math.MaxInt64),
		uint64(0), uint64(1 << 63), uint64(math.MaxUint64),
		math.Inf(-1), -1.0, 0.0, 0.5, math.Inf(1), math.NaN(),
		false, true,
		"", "A", "a", "ab", "\xff",
		[]any{int64(1)},
	}
	for seed := range 20 {
		got := slices.Clone(want)
		// A deterministic shuffle per seed.
		for i := len(got) - 1; i > 0; i-- {
			j := (i*7919 + seed*104729) % (i + 1)
			got[i], got[j] = got[j], got[i]
		}
		slices.SortStableFunc(got, Compare)
		for i := range want {
			if Compare(got[i], want[i]) != 0 || Rank(got[i]) != Rank(want[i]) {
				t.Fatalf("seed %d: position %d is %#v, want %#v (sorted %#v)", seed, i, got[i], want[i], got)
			}
		}
	}
}

func TestCompareKeys(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b []any
		want int
	}{
		{"empty", nil, nil, 0},
		{"prefix first", []any{int64(1)}, []any{int64(1), nil}, -1},
		{"first column decides", []any{int64(2), "a"}, []any{int64(1), "z"}, 1},
		{"second column decides", []any{int64(1), "a"}, []any{int64(1), "b"}, -1},
		{"null in key", []any{nil, int64(5)}, []any{int64(0)}, -1},
		{"NaN in key", []any{math.NaN()}, []any{math.NaN()}, 0},
	} {
		if got := CompareKeys(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: CompareKeys(%#v, %#v) = %d, want %d", tc.name, tc.a, tc.b, got, tc.want)
		}
	}
}
