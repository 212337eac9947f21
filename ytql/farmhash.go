package ytql

import (
	"math"
	"unsafe"

	farm "github.com/dgryski/go-farm"
)

// This file follows YTsaurus' forever-fixed fingerprints:
//   - per value: GetFarmFingerprint(const TUnversionedValue&) in
//     yt/yt/client/table_client/unversioned_value.cpp — a string hashes to
//     FarmHash Fingerprint64 of its bytes; int64, uint64 and double share the
//     64-bit payload and hash to Fingerprint(uint64); a boolean hashes to
//     Fingerprint(0 or 1); NULL hashes to Fingerprint(0);
//   - per row: GetFarmFingerprint(begin, end) in the same file — start from
//     0xdeadc0de, fold each value's fingerprint in with Fingerprint(uint128),
//     and xor the value count at the end;
//   - the query function farm_hash(args…) is that row fingerprint over its
//     arguments (yt/yt/library/query/engine/udf/farm_hash.cpp calls
//     GetFarmFingerprint(args, args+n)), so even a one-argument call goes
//     through the row fold;
//   - Fingerprint(uint64) and Fingerprint(uint128) are Google FarmHash's
//     (library/cpp/yt/farmhash/farm_hash.h delegates to them); their values are
//     pinned by YTsaurus' TFarmFingerprintTest (TestFarmFingerprintVectors).
//
// The results agree with the farm_hash values in the ytsaurus-spyt
// bucketing tests, an independent implementation (TestFarmHashCrossCheck).

const fingerprintMul = 0x9ddfea08eb382d69

// fingerprintUint64 is FarmHash Fingerprint(uint64_t).
func fingerprintUint64(x uint64) uint64 {
	b := x * fingerprintMul
	b ^= b >> 44
	b *= fingerprintMul
	b ^= b >> 41
	b *= fingerprintMul
	return b
}

// fingerprintPair is FarmHash Fingerprint(Uint128(lo, hi)).
func fingerprintPair(lo, hi uint64) uint64 {
	a := (lo ^ hi) * fingerprintMul
	a ^= a >> 47
	b := (hi ^ a) * fingerprintMul
	b ^= b >> 44
	b *= fingerprintMul
	b ^= b >> 41
	b *= fingerprintMul
	return b
}

// ValueFingerprint returns YTsaurus' fingerprint of one unversioned value
// (GetFarmFingerprint of a TUnversionedValue): FarmHash Fingerprint64 for a
// string or []byte, Fingerprint(uint64) of the 64-bit payload for integers and
// doubles (a double hashes its IEEE bits), Fingerprint(0|1) for a boolean and
// Fingerprint(0) for nil. Go integer kinds are widened to int64/uint64 first.
// It returns an error wrapping ErrType for any other Go type (YTsaurus refuses
// to hash composite values).
func ValueFingerprint(v any) (uint64, error) {
	switch x := normalize(v).(type) {
	case nil:
		return fingerprintUint64(0), nil
	case string:
		// Fingerprint64 only reads its argument, so the string's bytes are
		// passed without a copy.
		return farm.Fingerprint64(unsafe.Slice(unsafe.StringData(x), len(x))), nil
	case int64:
		return fingerprintUint64(uint64(x)), nil
	case uint64:
		return fingerprintUint64(x), nil
	case float64:
		return fingerprintUint64(math.Float64bits(x)), nil
	case bool:
		if x {
			return fingerprintUint64(1), nil
		}
		return fingerprintUint64(0), nil
	default:
		return 0, typeErrorf(-1, "farm_hash: cannot hash a value of Go type %T; only scalar values are hashable", v)
	}
}

// RowFingerprint returns YTsaurus' fingerprint of a row of unversioned values
// (GetFarmFingerprint(begin, end)); it is what the query function
// farm_hash(v1, …, vn) returns.
func RowFingerprint(values ...any) (uint64, error) {
	result := uint64(0xdeadc0de)
	for _, v := range values {
		h, err := ValueFingerprint(v)
		if err != nil {
			return 0, err
		}
		result = fingerprintPair(result, h)
	}
	return result ^ uint64(len(values)), nil
}

// FarmHash returns the value of the YTsaurus query function farm_hash(args…):
// the row fingerprint of its arguments (see RowFingerprint). Arguments may be
// string, []byte, any Go integer kind, float64/float32, bool or nil. It panics
// on a value that YTsaurus cannot hash (a composite value), which is a
// programming error for callers that pass key columns; use RowFingerprint to
// get an error instead.
//
// Note: for a single string s, FarmHash(s) is not Fingerprint64(s); it is the
// row fold over that one value, exactly as YTsaurus computes farm_hash(s).
// ValueFingerprint(s) is Fingerprint64(s).
func FarmHash(args ...any) uint64 {
	h, err := RowFingerprint(args...)
	if err != nil {
		panic(err)
	}
	return h
}
