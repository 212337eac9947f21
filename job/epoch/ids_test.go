package epoch

import (
	"fmt"
	"strconv"
	"testing"
)

// TestMessageIDFormsAreStable pins the forms of message ids: they are persisted (dedup index,
// output store, partition states) and recomputed after restarts, so a change of form would
// let a recomputed message pass the dedup index as new. The references are the formats the
// ids were defined with.
func TestMessageIDFormsAreStable(t *testing.T) {
	lex := func(v uint64) string {
		h := strconv.FormatUint(v, 16)
		return strconv.FormatUint(uint64(len(h)-1), 16) + h
	}
	if got := LexUint(0x17b); got != "217b" {
		t.Fatalf("LexUint(0x17b) = %q, want 217b", got)
	}
	for _, v := range []uint64{0, 1, 15, 16, 255, 256, 123, 1 << 32, 1 << 63, ^uint64(0)} {
		if got, want := LexUint(v), lex(v); got != want {
			t.Fatalf("LexUint(%d) = %q, want %q", v, got, want)
		}
		for _, i := range []uint64{0, 5, 300} {
			if got, want := TransformMessageID(v, i), fmt.Sprintf("%016x-%s", v, lex(i)); got != want {
				t.Fatalf("TransformMessageID(%d, %d) = %q, want %q", v, i, got, want)
			}
			sp := SourcePartition{SourceID: "src", Partition: int64(i)}
			if got, want := SourceMessageID("c", sp, int64(v>>1)), fmt.Sprintf("c/src:%s:%s", lex(i), lex(v>>1)); got != want {
				t.Fatalf("SourceMessageID = %q, want %q", got, want)
			}
			if got, want := SourceOutputID("p", "s", v), fmt.Sprintf("p-s:%s", lex(v)); got != want {
				t.Fatalf("SourceOutputID = %q, want %q", got, want)
			}
		}
	}
}
