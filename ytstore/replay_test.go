package ytstore

import (
	"strings"
	"testing"
)

// TestReplayMessageID: the first replay appends "~r1", later ones count the generation up;
// a suffix that is not a generation is kept and "~r1" appended.
func TestReplayMessageID(t *testing.T) {
	for in, want := range map[string]string{
		"0000000000000abc-00": "0000000000000abc-00~r1",
		"m~r1":                "m~r2",
		"m~r9":                "m~r10",
		"m~r1~r41":            "m~r1~r42",
		"m~r":                 "m~r~r1",
		"m~r0":                "m~r0~r1",
		"m~r01":               "m~r01~r1",
		"m~rx":                "m~rx~r1",
		"":                    "~r1",
	} {
		if got := ReplayMessageID(in); got != want {
			t.Errorf("ReplayMessageID(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzReplayMessageID: a replayed id differs from the letter's id, keeps it as a prefix up
// to its generation, and the next replay's id differs again.
func FuzzReplayMessageID(f *testing.F) {
	for _, s := range []string{"", "m", "m~r1", "m~r99", "m~r0", "~r", "a~r1~r", "m~r4294967295", "m~r+1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		next := ReplayMessageID(id)
		if next == id {
			t.Fatalf("ReplayMessageID(%q) returned the same id", id)
		}
		i := strings.LastIndex(next, "~r")
		if i < 0 || !strings.HasPrefix(id, next[:i]) {
			t.Fatalf("ReplayMessageID(%q) = %q does not keep the base", id, next)
		}
		if again := ReplayMessageID(next); again == next || again == id {
			t.Fatalf("second replay of %q: %q after %q", id, again, next)
		}
	})
}
