// Package ytvalue is the one implementation of YTsaurus' order of unversioned
// values (CompareRowValues in yt/yt/client/table_client/unversioned_row.cpp),
// shared by ytlocal's Cypress tables, its tablet engine and the ytql query
// evaluator. It is a leaf: it imports only the SDK's yson package.
//
// Values are the normalized Go forms of the YTsaurus value types: nil (null),
// int64, uint64, float64 (double), bool (boolean) and string (string, compared
// as bytes). Anything else is a composite (any/composite column values).
//
// The order:
//
//   - values of different types order by type, as YTsaurus' value type tags
//     do: null < int64 < uint64 < double < boolean < string < composite; so
//     int64(-1) < uint64(0) and uint64(MaxUint64) < -Inf;
//   - int64 and uint64 compare by value;
//   - doubles compare numerically, with -0 equal to +0, and NaN after every
//     other double and equal to NaN, which keeps the order total;
//   - false < true;
//   - strings compare bytewise (memcmp, then length), never by Unicode rules;
//   - two composites compare by their binary YSON encoding (map keys sorted):
//     YTsaurus refuses to compare any-typed values at all, so this is only a
//     deterministic tie-break that keeps sorting total.
package ytvalue

import (
	"bytes"
	"cmp"
	"math"

	"go.ytsaurus.tech/yt/go/yson"
)

// Type ranks, in YTsaurus' order of value type tags.
const (
	RankNull = iota
	RankInt64
	RankUint64
	RankDouble
	RankBoolean
	RankString
	RankComposite
)

// Rank returns the type rank of the normalized value v (see the Rank
// constants); every non-scalar is RankComposite.
func Rank(v any) int {
	switch v.(type) {
	case nil:
		return RankNull
	case int64:
		return RankInt64
	case uint64:
		return RankUint64
	case float64:
		return RankDouble
	case bool:
		return RankBoolean
	case string:
		return RankString
	}
	return RankComposite
}

// Compare orders two normalized values like YTsaurus (see the package
// comment) and returns -1, 0 or +1. It is a total order.
func Compare(a, b any) int {
	switch x := a.(type) {
	case int64:
		if y, ok := b.(int64); ok {
			return cmp.Compare(x, y)
		}
	case uint64:
		if y, ok := b.(uint64); ok {
			return cmp.Compare(x, y)
		}
	case float64:
		if y, ok := b.(float64); ok {
			return CompareDouble(x, y)
		}
	case string:
		if y, ok := b.(string); ok {
			return cmp.Compare(x, y)
		}
	case bool:
		if y, ok := b.(bool); ok {
			return compareBool(x, y)
		}
	}
	ra, rb := Rank(a), Rank(b)
	if ra != rb {
		return cmp.Compare(ra, rb)
	}
	if ra == RankNull {
		return 0
	}
	// Both composite.
	ab, _ := yson.Marshal(a)
	bb, _ := yson.Marshal(b)
	return bytes.Compare(ab, bb)
}

// CompareDouble orders doubles like YTsaurus: numerically, -0 equal to +0,
// NaN after every other value and equal to NaN.
func CompareDouble(x, y float64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	case x == y:
		return 0
	}
	// At least one is NaN.
	xNaN, yNaN := math.IsNaN(x), math.IsNaN(y)
	switch {
	case xNaN && yNaN:
		return 0
	case xNaN:
		return 1
	}
	return -1
}

func compareBool(x, y bool) int {
	switch {
	case x == y:
		return 0
	case !x:
		return -1
	}
	return 1
}

// CompareKeys orders two keys value by value with Compare; when one key is a
// prefix of the other, the shorter one sorts first.
func CompareKeys(a, b []any) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}
