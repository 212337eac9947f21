package epoch

import (
	"fmt"
	"strconv"
	"strings"
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

// TestIDArenaMatchesIDs: the ids a Planner builds in its arena are the ids of
// TransformMessageID, SourceMessageID and SourceOutputID, byte for byte, names longer than a
// block included, and an id keeps its bytes while later ones are built; the first block is
// small.
func TestIDArenaMatchesIDs(t *testing.T) {
	var a idArena
	long := strings.Repeat("c", idBlock+10)
	type pair struct{ got, want string }
	var all []pair
	for i := range 3000 {
		v := uint64(i) * 0x9e3779b97f4a7c15
		comp, src := "split", "kafka"
		if i%500 == 7 {
			comp = long // longer than a block: a block of its own
		}
		if i%300 == 11 {
			src = ""
		}
		sp := SourcePartition{SourceID: src, Partition: int64(i % 3)}
		parent := a.source(comp, sp, int64(v>>1))
		all = append(all,
			pair{parent, SourceMessageID(comp, sp, int64(v>>1))},
			pair{a.sourceOutput(parent, "words", uint64(i%4)), SourceOutputID(parent, "words", uint64(i%4))},
			pair{a.transform(v, uint64(i)), TransformMessageID(v, uint64(i))})
	}
	for i, p := range all {
		if p.got != p.want {
			t.Fatalf("id %d: arena %q, want %q", i, p.got, p.want)
		}
	}
	var small idArena // a one-shot plan of one row: a small block
	if id := small.source("split", SourcePartition{SourceID: "kafka"}, 7); id != SourceMessageID("split", SourcePartition{SourceID: "kafka"}, 7) || cap(small.block) != idFirstBlock {
		t.Fatalf("one id: %q in a block of %d bytes, want a block of %d", id, cap(small.block), idFirstBlock)
	}
}
