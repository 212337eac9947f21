package fingerprint

import (
	"strings"
	"testing"

	farm "github.com/dgryski/go-farm"
)

// TestMatchesFarm: the fingerprints are farm's of the string's bytes, for the empty string
// and for ids shorter and longer than 32 bytes, and they allocate nothing.
func TestMatchesFarm(t *testing.T) {
	for _, s := range []string{"", "m1", "split/src/lines/0/123456/0", strings.Repeat("x", 200)} {
		if got, want := String64(s), farm.Fingerprint64([]byte(s)); got != want {
			t.Errorf("String64(%q) = %x, want %x", s, got, want)
		}
		lo, hi := String128(s)
		wlo, whi := farm.Fingerprint128([]byte(s))
		if lo != wlo || hi != whi {
			t.Errorf("String128(%q) = %x %x, want %x %x", s, lo, hi, wlo, whi)
		}
	}
	id := strings.Repeat("y", 64)
	if n := testing.AllocsPerRun(100, func() { String64(id); String128(id) }); n != 0 {
		t.Errorf("%v allocations per call, want 0", n)
	}
}
