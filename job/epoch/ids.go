// Message ids: transform, source and swift output ids, deterministic and ordered.

package epoch

import (
	"fmt"
	"strings"
	"unsafe"

	farm "github.com/dgryski/go-farm"
)

// LexUint encodes v so that string order equals numeric order: one hex digit holding the
// number of hex digits minus one, then the hex digits (0 → "00", 123 → "17b").
func LexUint(v uint64) string {
	var b [17]byte
	return string(appendLexUint(b[:0], v))
}

// appendLexUint appends the LexUint form of v to b.
func appendLexUint(b []byte, v uint64) []byte {
	digits := 1
	for x := v >> 4; x != 0; x >>= 4 {
		digits++
	}
	b = append(b, hexDigits[digits-1])
	for shift := 4 * (digits - 1); shift >= 0; shift -= 4 {
		b = append(b, hexDigits[v>>uint(shift)&0xf])
	}
	return b
}

const hexDigits = "0123456789abcdef"

// lexUintMax is the longest LexUint form (of a 64-bit number): 1 + 16 digits.
const lexUintMax = 17

// TransformMessageID is the id of the index-th output of the epoch with sequence number
// seqNo. Ids of one producer sort in production order because SeqNo grows across epochs.
func TransformMessageID(seqNo, index uint64) string {
	var b [idBuffer]byte
	return string(appendTransformMessageID(b[:0], seqNo, index))
}

// appendTransformMessageID appends TransformMessageID(seqNo, index) to b: seqNo as 16 hex
// digits (%016x), "-", index in LexUint form.
func appendTransformMessageID(b []byte, seqNo, index uint64) []byte {
	for shift := 60; shift >= 0; shift -= 4 {
		b = append(b, hexDigits[seqNo>>uint(shift)&0xf])
	}
	b = append(b, '-')
	return appendLexUint(b, index)
}

// idBuffer is the stack buffer ids are built in; a longer id grows onto the heap.
const idBuffer = 128

// SourceMessageID is the id of the source row at offset of sp read by computation; it depends
// on nothing else, and the computation id keeps rows of equally named sources of different
// computations apart.
func SourceMessageID(computation string, sp SourcePartition, offset int64) string {
	var buf [idBuffer]byte // on the stack: the id allocates once, as the string
	return string(appendSourceMessageID(buf[:0], computation, sp, offset))
}

// appendSourceMessageID appends SourceMessageID(computation, sp, offset) to b.
func appendSourceMessageID(b []byte, computation string, sp SourcePartition, offset int64) []byte {
	b = append(b, computation...)
	b = append(b, '/')
	b = append(b, sp.SourceID...)
	b = append(b, ':')
	b = appendLexUint(b, uint64(sp.Partition))
	b = append(b, ':')
	return appendLexUint(b, uint64(offset))
}

// SourceOutputID is the id of the index-th output on stream of the source message parent.
func SourceOutputID(parent, stream string, index uint64) string {
	var buf [idBuffer]byte
	return string(appendSourceOutputID(buf[:0], parent, stream, index))
}

// appendSourceOutputID appends SourceOutputID(parent, stream, index) to b.
func appendSourceOutputID(b []byte, parent, stream string, index uint64) []byte {
	b = append(b, parent...)
	b = append(b, '-')
	b = append(b, stream...)
	b = append(b, ':')
	return appendLexUint(b, index)
}

// idArena builds the ids of a Planner's epochs into shared blocks of memory instead of one
// allocation per id: an id is a string over a part of a block that is written once, before
// the string is made, and never again (a block is only appended to, and a full one is left
// to the ids that point into it and the garbage collector). An id keeps its whole block
// alive: blocks are small (idBlock), so a long-held id holds little. The zero idArena is
// ready; it is not safe for concurrent use.
//
// Invariant: ids built in an idArena are the bytes of TransformMessageID, SourceMessageID
// and SourceOutputID, whose forms never change (TestIDArenaMatchesIDs,
// TestMessageIDFormsAreStable).
type idArena struct{ block []byte }

// idBlock is the size of an idArena block, about a hundred ids; the first blocks are smaller
// (from idFirstBlock, doubling), so that a one-shot plan of a few ids allocates little.
const (
	idBlock      = 4096
	idFirstBlock = 256
)

// room returns the free part of the current block, with room for n bytes at least (a new
// block when the current one has less).
func (a *idArena) room(n int) []byte {
	if cap(a.block)-len(a.block) < n {
		a.block = make([]byte, 0, max(n, min(idBlock, max(idFirstBlock, 2*cap(a.block)))))
	}
	return a.block[len(a.block):]
}

// seal makes the string of id, which was appended to the free part room returned (and fits
// it, so it lies in the block), and marks its bytes used.
func (a *idArena) seal(id []byte) string {
	free := a.block[len(a.block):cap(a.block)]
	if len(id) == 0 || len(id) > len(free) || &id[0] != &free[0] {
		return string(id) // not in the block (room's bound covers every id: never the case)
	}
	a.block = a.block[:len(a.block)+len(id)]
	return unsafe.String(&id[0], len(id))
}

// transform is TransformMessageID in the arena.
func (a *idArena) transform(seqNo, index uint64) string {
	return a.seal(appendTransformMessageID(a.room(17+lexUintMax), seqNo, index))
}

// source is SourceMessageID in the arena.
func (a *idArena) source(computation string, sp SourcePartition, offset int64) string {
	n := len(computation) + len(sp.SourceID) + 3 + 2*lexUintMax
	return a.seal(appendSourceMessageID(a.room(n), computation, sp, offset))
}

// sourceOutput is SourceOutputID in the arena.
func (a *idArena) sourceOutput(parent, stream string, index uint64) string {
	n := len(parent) + len(stream) + 2 + lexUintMax
	return a.seal(appendSourceOutputID(a.room(n), parent, stream, index))
}

// SwiftOutputID is the id of the index-th output (all streams counted) of a swift
// computation's parent message: the parent id, "/" and the index in LexUint form, so the ids of
// one parent sort in production order and a recomputation reproduces them.
func SwiftOutputID(parent string, index uint64) string {
	return parent + "/" + LexUint(index)
}

// SwiftBatchOutputID is the base id of an output of several parents (sorted, distinct): the
// first parent, "+" and the FarmHash fingerprint of all of them, so it depends on the set of
// parents only.
func SwiftBatchOutputID(sortedParents []string) string {
	return fmt.Sprintf("%s+%016x", sortedParents[0], farm.Fingerprint64([]byte(strings.Join(sortedParents, "\x00"))))
}
