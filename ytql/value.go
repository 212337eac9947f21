package ytql

import (
	"fmt"
	"math"

	"github.com/ytflow/yt-flow/internal/ytvalue"
)

// normalize maps Go scalar kinds onto the query value types: every signed
// integer becomes int64, every unsigned one uint64, float32 float64 and
// []byte string. Other values (nil, bool, string, float64, composites) are
// returned unchanged.
func normalize(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case uint:
		return uint64(x)
	case uint8:
		return uint64(x)
	case uint16:
		return uint64(x)
	case uint32:
		return uint64(x)
	case float32:
		return float64(x)
	case []byte:
		return string(x)
	}
	return v
}

// tuple is the value of a parenthesised list "(a, b)" or of a list-valued
// placeholder; consts marks the elements whose type may adapt (literals).
type tuple struct {
	vals   []any
	consts []bool
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case int64:
		return "int64"
	case uint64:
		return "uint64"
	case float64:
		return "double"
	case bool:
		return "boolean"
	case string:
		return "string"
	case tuple:
		return "tuple"
	}
	return fmt.Sprintf("any (%T)", v)
}

// unify brings two scalar operands to one type. A constant integer adapts to
// the other operand's numeric type when its value fits (as a YTsaurus literal
// does); any other mix of types is a type error. NULLs pass through.
func unify(pos int, l any, lc bool, r any, rc bool, what string) (any, any, error) {
	if l == nil || r == nil || sameType(l, r) {
		return l, r, nil
	}
	if lc {
		if v, ok := convertConst(l, r); ok {
			return v, r, nil
		}
	}
	if rc {
		if v, ok := convertConst(r, l); ok {
			return l, v, nil
		}
	}
	return nil, nil, typeErrorf(pos, "type mismatch in %s: %s vs %s", what, typeName(l), typeName(r))
}

func sameType(a, b any) bool {
	switch a.(type) {
	case int64:
		_, ok := b.(int64)
		return ok
	case uint64:
		_, ok := b.(uint64)
		return ok
	case float64:
		_, ok := b.(float64)
		return ok
	case bool:
		_, ok := b.(bool)
		return ok
	case string:
		_, ok := b.(string)
		return ok
	}
	return false
}

// convertConst converts the constant c to the type of like, if exact.
func convertConst(c, like any) (any, bool) {
	switch like.(type) {
	case uint64:
		if i, ok := c.(int64); ok && i >= 0 {
			return uint64(i), true
		}
	case int64:
		if u, ok := c.(uint64); ok && u <= math.MaxInt64 {
			return int64(u), true
		}
	case float64:
		// Only exact conversions, like YTsaurus' CastValueWithCheck.
		switch x := c.(type) {
		case int64:
			if f := float64(x); f >= -(1<<63) && f < 1<<63 && int64(f) == x {
				return f, true
			}
		case uint64:
			if f := float64(x); f < 1<<64 && uint64(f) == x {
				return f, true
			}
		}
	}
	return nil, false
}

// compareScalars orders two values of the same type (after unify) with
// YTsaurus' value order (internal/ytvalue): NULL is smaller than any value and
// equal to NULL. Unlike sorting, comparing a NaN in an expression is an
// error, and composites do not compare at all.
func compareScalars(pos int, a, b any) (int, error) {
	if a != nil && b != nil {
		switch x := a.(type) {
		case int64, uint64, bool, string:
		case float64:
			if y, ok := b.(float64); ok && (math.IsNaN(x) || math.IsNaN(y)) {
				return 0, evalErrorf(pos, "NaN value in comparison")
			}
		default:
			return 0, typeErrorf(pos, "values of type %s are not comparable", typeName(a))
		}
	}
	return ytvalue.Compare(a, b), nil
}
