// Message ids: transform, source and swift output ids, deterministic and ordered.

package epoch

import (
	"fmt"
	"strconv"
	"strings"

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
	b = strconv.AppendUint(b, uint64(digits-1), 16)
	return strconv.AppendUint(b, v, 16)
}

// TransformMessageID is the id of the index-th output of the epoch with sequence number
// seqNo. Ids of one producer sort in production order because SeqNo grows across epochs.
func TransformMessageID(seqNo, index uint64) string {
	var b [40]byte
	id := strconv.AppendUint(b[:0], seqNo, 16)
	if pad := 16 - len(id); pad > 0 { // %016x
		id = append(b[:0], "0000000000000000"[:pad]...)
		id = strconv.AppendUint(id, seqNo, 16)
	}
	id = append(id, '-')
	return string(appendLexUint(id, index))
}

// idBuffer is the stack buffer ids are built in; a longer id grows onto the heap.
const idBuffer = 128

// SourceMessageID is the id of the source row at offset of sp read by computation; it depends
// on nothing else, and the computation id keeps rows of equally named sources of different
// computations apart.
func SourceMessageID(computation string, sp SourcePartition, offset int64) string {
	var buf [idBuffer]byte // on the stack: the id allocates once, as the string
	b := buf[:0]
	b = append(b, computation...)
	b = append(b, '/')
	b = append(b, sp.SourceID...)
	b = append(b, ':')
	b = appendLexUint(b, uint64(sp.Partition))
	b = append(b, ':')
	return string(appendLexUint(b, uint64(offset)))
}

// SourceOutputID is the id of the index-th output on stream of the source message parent.
func SourceOutputID(parent, stream string, index uint64) string {
	var buf [idBuffer]byte
	b := buf[:0]
	b = append(b, parent...)
	b = append(b, '-')
	b = append(b, stream...)
	b = append(b, ':')
	return string(appendLexUint(b, index))
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
