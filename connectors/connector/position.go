package connector

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrBadPosition is a position a connector cannot read: written by another class, or
// corrupted.
var ErrBadPosition = errors.New("bad source position")

// OffsetPosition encodes a plain offset as a position (8 bytes big-endian), for the many
// sources whose position is the offset of the next row (queues, Kafka partitions, row
// indexes).
func OffsetPosition(off int64) Position {
	return binary.BigEndian.AppendUint64(nil, uint64(off))
}

// PositionOffset decodes a position made by OffsetPosition; nil is offset 0.
func PositionOffset(pos Position) (int64, error) {
	switch len(pos) {
	case 0:
		return 0, nil
	case 8:
		return int64(binary.BigEndian.Uint64(pos)), nil
	}
	return 0, fmt.Errorf("%w: %d bytes, want an 8-byte offset", ErrBadPosition, len(pos))
}

// OffsetRows gives rows[i] the position after it, Offset+1, in one allocation; for sources
// whose position is an offset.
func OffsetRows(rows []Row) {
	block := make([]byte, 8*len(rows))
	for i := range rows {
		pos := block[8*i : 8*i+8 : 8*i+8]
		binary.BigEndian.PutUint64(pos, uint64(rows[i].Offset+1))
		rows[i].Next = pos
	}
}
