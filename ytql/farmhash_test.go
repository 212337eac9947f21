package ytql

import (
	"errors"
	"math"
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
