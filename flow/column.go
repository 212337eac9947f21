package flow

import (
	"fmt"
	"math"
)

// Column returns the column name of row as a T. Integer values convert between int64, uint64
// and int when the value fits, string and []byte convert into each other; any other type must
// match exactly. A missing or null column, a value of another type or one that does not fit is
// an error wrapping ErrColumn that names the column.
func Column[T any](row Row, name string) (T, error) {
	var v T
	raw, ok := row[name]
	if !ok || raw == nil {
		return v, fmt.Errorf("column %q: %w: missing or null", name, ErrColumn)
	}
	if t, ok := raw.(T); ok {
		return t, nil
	}
	fits := false
	switch p := any(&v).(type) {
	case *int64:
		*p, fits = toInt64(raw)
	case *int:
		var i int64
		i, fits = toInt64(raw)
		*p = int(i)
	case *uint64:
		*p, fits = toUint64(raw)
	case *float64:
		switch x := raw.(type) {
		case int64:
			*p, fits = float64(x), true
		case uint64:
			*p, fits = float64(x), true
		}
	case *string:
		if b, ok := raw.([]byte); ok {
			*p, fits = string(b), true
		}
	case *[]byte:
		if s, ok := raw.(string); ok {
			*p, fits = []byte(s), true
		}
	}
	if !fits {
		var zero T
		return zero, fmt.Errorf("column %q: %w: want %T, got %T (%v)", name, ErrColumn, zero, raw, raw)
	}
	return v, nil
}

func toInt64(raw any) (int64, bool) {
	switch x := raw.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case uint64:
		return int64(x), x <= math.MaxInt64
	}
	return 0, false
}

func toUint64(raw any) (uint64, bool) {
	switch x := raw.(type) {
	case uint64:
		return x, true
	case int64:
		return uint64(x), x >= 0
	case int:
		return uint64(x), x >= 0
	}
	return 0, false
}
