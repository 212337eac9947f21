package yson

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ErrBadValue is wrapped by the unit parsers when a value is malformed or out of range.
var ErrBadValue = errors.New("bad value")

// ParseDuration parses a duration string: Go syntax ("100ms", "1s", "1h30m"), a "d" suffix
// for whole days ("2d"), or bare digits meaning milliseconds ("250"). Negative values are rejected.
func ParseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, fmt.Errorf("duration %q: %w: empty", s, ErrBadValue)
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return MillisDuration(n)
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n < 0 || n > math.MaxInt64/int64(24*time.Hour) {
			return 0, fmt.Errorf("duration %q: %w: want a non-negative whole number of days", s, ErrBadValue)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: %w: want milliseconds or a string like \"100ms\", \"1s\", \"5m\"", s, ErrBadValue)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q: %w: negative", s, ErrBadValue)
	}
	return d, nil
}

// MillisDuration converts a non-negative count of milliseconds into a duration.
func MillisDuration(ms int64) (time.Duration, error) {
	if ms < 0 {
		return 0, fmt.Errorf("duration %d: %w: negative", ms, ErrBadValue)
	}
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return 0, fmt.Errorf("duration %d: %w: too large", ms, ErrBadValue)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

var sizeSuffixes = []struct {
	suffix string
	mult   int64
}{
	// Longest first, so that "Ki" is not read as "K" followed by garbage.
	{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40},
	{"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12},
}

// ParseSize parses a byte or count size: bare digits, or digits followed by K, M, G, T
// (powers of 1000) or Ki, Mi, Gi, Ti (powers of 1024). Negative values are rejected.
func ParseSize(s string) (int64, error) {
	num, mult := s, int64(1)
	for _, sf := range sizeSuffixes {
		if rest, ok := strings.CutSuffix(s, sf.suffix); ok {
			num, mult = rest, sf.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || num == "" || num[0] == '+' {
		return 0, fmt.Errorf("size %q: %w: want a non-negative integer with an optional suffix K, M, G, T, Ki, Mi, Gi, Ti", s, ErrBadValue)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %q: %w: too large", s, ErrBadValue)
	}
	return n * mult, nil
}
