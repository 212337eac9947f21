package ytql

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	farm "github.com/dgryski/go-farm"
)

// TestFarmFingerprintVectors pins the FarmHash primitives to the vectors of
// YTsaurus' TFarmHashTest/TFarmFingerprintTest
// (library/cpp/yt/farmhash/unittests/farm_fingerprint_stability_ut.cpp).
func TestFarmFingerprintVectors(t *testing.T) {
	if got, want := fingerprintUint64(42), uint64(17355217915646310598); got != want {
		t.Errorf("Fingerprint(42) = %d, want %d", got, want)
	}
	if got, want := farm.Fingerprint64([]byte("MDwhat?")), uint64(10997514911242581312); got != want {
		t.Errorf("Fingerprint64(\"MDwhat?\") = %d, want %d", got, want)
	}
	if got, want := fingerprintPair(1234, 5678), uint64(16769064555670434975); got != want {
		t.Errorf("Fingerprint(Uint128(1234, 5678)) = %d, want %d", got, want)
	}
}

func TestValueFingerprint(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   any
		want uint64
	}{
		{"string is Fingerprint64", "MDwhat?", 10997514911242581312},
		{"bytes like string", []byte("MDwhat?"), 10997514911242581312},
		{"empty string", "", 0x9ae16a3b2f90404f},
		{"int64 42", int64(42), 17355217915646310598},
		{"go int widened", 42, 17355217915646310598},
		{"uint64 aliases int64", uint64(42), 17355217915646310598},
		{"uint32 widened", uint32(42), 17355217915646310598},
		{"double hashes its bits", 1.5, fingerprintUint64(math.Float64bits(1.5))},
		{"true is 1", true, fingerprintUint64(1)},
		{"false is 0", false, fingerprintUint64(0)},
		{"null is 0", nil, fingerprintUint64(0)},
		{"negative int64", int64(-1), fingerprintUint64(math.MaxUint64)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ValueFingerprint(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("ValueFingerprint(%#v) = %d, want %d", tc.in, got, tc.want)
			}
		})
	}
	if _, err := ValueFingerprint(map[string]any{"a": 1}); !errors.Is(err, ErrType) {
		t.Errorf("composite: err = %v, want ErrType", err)
	}
}

// TestFarmHashRowFold checks farm_hash(args…) = GetFarmFingerprint(begin, end):
// seed 0xdeadc0de, fold with Fingerprint(Uint128(acc, value)), xor the count.
func TestFarmHashRowFold(t *testing.T) {
	fold := func(vals ...uint64) uint64 {
		acc := uint64(0xdeadc0de)
		for _, v := range vals {
			acc = fingerprintPair(acc, v)
		}
		return acc ^ uint64(len(vals))
	}
	abc := farm.Fingerprint64([]byte("abc"))
	for _, tc := range []struct {
		name string
		args []any
		want uint64
	}{
		{"no args", nil, 0xdeadc0de},
		{"one string", []any{"abc"}, fold(abc)},
		{"one int", []any{int64(42)}, fold(17355217915646310598)},
		{"string and int", []any{"abc", int64(42)}, fold(abc, 17355217915646310598)},
		{"null and bool", []any{nil, true}, fold(fingerprintUint64(0), fingerprintUint64(1))},
		// Pinned regression values computed with the fold above.
		{"pinned abc", []any{"abc"}, 0x7b15151e28709746},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FarmHash(tc.args...); got != tc.want {
				t.Errorf("FarmHash(%v) = %#x, want %#x", tc.args, got, tc.want)
			}
		})
	}
	if FarmHash("abc") == abc {
		t.Error("farm_hash of one string must go through the row fold, not equal Fingerprint64")
	}
	if FarmHash("a", "b") == FarmHash("b", "a") {
		t.Error("farm_hash must depend on argument order")
	}
}

func TestFarmHashPanicsOnComposite(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("FarmHash of a list did not panic")
		}
	}()
	FarmHash([]any{1})
}

// TestFarmHashCrossCheck compares with farm_hash values published in the
// ytsaurus-spyt bucketing tests (FarmHashTest), an independent
// implementation of YTsaurus' farm_hash: single int64 and string arguments,
// every Fingerprint64 length branch, non-ASCII bytes and argument lists.
func TestFarmHashCrossCheck(t *testing.T) {
	pattern := func(n int) string {
		const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
		return strings.Repeat(alphabet, n/len(alphabet)+1)[:n]
	}
	nonASCII := string([]byte{
		0xc3, 0x90, 0xc2, 0xbf, 0xc3, 0x91, 0xc2, 0x80, 0xc3, 0x90, 0xc2, 0xb8,
		0xc3, 0x90, 0xc2, 0xb2, 0xc3, 0x90, 0xc2, 0xb5, 0xc3, 0x91, 0xc2, 0x82,
		0x5f, 0xc3, 0x90, 0xc2, 0xbc, 0xc3, 0x90, 0xc2, 0xb8, 0xc3, 0x91, 0xc2, 0x80,
	})
	for _, tc := range []struct {
		args []any
		want uint64
	}{
		{[]any{int64(0)}, 3315701238936582721},
		{[]any{int64(1)}, 933529381690826619},
		{[]any{int64(2)}, 3427386618069609762},
		{[]any{int64(4)}, 15016036017421091022},
		{[]any{int64(42)}, 8164349598829955404},
		{[]any{int64(1000000007)}, 10215119506177658240},
		{[]any{int64(-1)}, 7129902556246829656},
		{[]any{int64(-42)}, 16397089221717914258},
		{[]any{"abc"}, 8869018260447729478},
		{[]any{strings.Repeat("x", 16)}, 1018863032141701326},
		{[]any{strings.Repeat("y", 17)}, 10873447293606436884},
		{[]any{pattern(32)}, 15718724012517393646},
		{[]any{pattern(33)}, 8396789985032708545},
		{[]any{pattern(64)}, 18377402886266701550},
		{[]any{pattern(65)}, 12792382431158111648},
		{[]any{pattern(200)}, 16806011184363067985},
		{[]any{pattern(1024)}, 18015370968023235982},
		{[]any{pattern(4096)}, 5786369983920396358},
		{[]any{nonASCII}, 10566156234387381815},
		{[]any{int64(1), int64(2)}, 3849326666456637875},
		{[]any{int64(42), int64(-1)}, 15606905225410890809},
		{[]any{int64(0), int64(0)}, 10793565175019682757},
		{[]any{int64(1), "abc"}, 12535759425065966635},
		{[]any{int64(-42), "hello_world"}, 534301023022786},
		{[]any{int64(1), int64(2), int64(3)}, 9356478348297141860},
		{[]any{int64(0), int64(0), int64(0)}, 11786296186984197942},
		{[]any{"abc", "hello_world"}, 14072603354312202161},
		{nil, 3735929054},
	} {
		if got := FarmHash(tc.args...); got != tc.want {
			t.Errorf("farm_hash(%.20v) = %d, want %d", tc.args, got, tc.want)
		}
	}
	// Bucket vectors: farm_hash(x) % n with unsigned modulo.
	for _, tc := range []struct {
		arg      int64
		buckets  uint64
		expected uint64
	}{
		{0, 64, 1}, {1, 64, 59}, {42, 64, 12}, {-1, 64, 24}, {-42, 64, 18}, {1000000007, 64, 0},
		{0, 100, 21}, {42, 100, 4}, {4, 100, 22}, {-1, 100, 56}, {-42, 100, 58},
	} {
		e, err := ParseExpression("farm_hash(x) % " + strconv.FormatUint(tc.buckets, 10) + "u")
		if err != nil {
			t.Fatal(err)
		}
		v, err := e.Eval(map[string]any{"x": tc.arg})
		if err != nil {
			t.Fatal(err)
		}
		if v != tc.expected {
			t.Errorf("farm_hash(%d) %% %d = %v, want %d", tc.arg, tc.buckets, v, tc.expected)
		}
	}
}
