package ytql

import (
	"fmt"
	"math"
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

// compareScalars orders two values of the same type (after unify); NULL is
// smaller than any value and equal to NULL, as in YTsaurus.
func compareScalars(pos int, a, b any) (int, error) {
	switch {
	case a == nil && b == nil:
		return 0, nil
	case a == nil:
		return -1, nil
	case b == nil:
		return 1, nil
	}
	switch x := a.(type) {
	case int64:
		y := b.(int64)
		return cmp3(x < y, x > y), nil
	case uint64:
		y := b.(uint64)
		return cmp3(x < y, x > y), nil
	case float64:
		y := b.(float64)
		if math.IsNaN(x) || math.IsNaN(y) {
			return 0, evalErrorf(pos, "NaN value in comparison")
		}
		return cmp3(x < y, x > y), nil
	case bool:
		y := b.(bool)
		return cmp3(!x && y, x && !y), nil
	case string:
		y := b.(string)
		return cmp3(x < y, x > y), nil
	}
	return 0, typeErrorf(pos, "values of type %s are not comparable", typeName(a))
}

func cmp3(less, greater bool) int {
	switch {
	case less:
		return -1
	case greater:
		return 1
	}
	return 0
}

// typeRank orders types like YTsaurus' value type tags (Null < Int64 <
// Uint64 < Double < Boolean < String < Any); used to sort rows whose ORDER BY
// values differ in type.
func typeRank(v any) int {
	switch v.(type) {
	case nil:
		return 0
	case int64:
		return 1
	case uint64:
		return 2
	case float64:
		return 3
	case bool:
		return 4
	case string:
		return 5
	}
	return 6
}

// orderValues is a total order for sorting result rows.
func orderValues(a, b any) int {
	ra, rb := typeRank(a), typeRank(b)
	if ra != rb || ra == 6 {
		return cmp3(ra < rb, ra > rb)
	}
	if x, ok := a.(float64); ok {
		y := b.(float64)
		// NaN sorts after every number so that sorting stays total.
		switch {
		case math.IsNaN(x) && math.IsNaN(y):
			return 0
		case math.IsNaN(x):
			return 1
		case math.IsNaN(y):
			return -1
		}
	}
	c, _ := compareScalars(-1, a, b)
	return c
}
