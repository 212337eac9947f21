package ytstore

import (
	"fmt"

	"go.ytsaurus.tech/yt/go/yson"
)

// SourceStatePrefix prefixes the partition state of a source stream of a source partition:
// "source/<stream id>" holds its SourcePosition.
const SourceStatePrefix = "source/"

// SourcePosition is the committed read position of one source stream of a source partition,
// written in the epoch transaction: NextSeq is the sequence number (row offset) of the next
// row to read, Position where the connector resumes reading, in bytes only the connector
// reads.
type SourcePosition struct {
	NextSeq  int64  `yson:"next_seq"`
	Position []byte `yson:"position"`
}

// Encode returns the partition state value of p.
func (p SourcePosition) Encode() []byte {
	b, err := yson.Marshal(p)
	if err != nil {
		panic(fmt.Sprintf("ytstore: encode source position: %v", err)) // a struct of an int and bytes always encodes
	}
	return b
}

// DecodeSourcePosition reads a partition state value written by SourcePosition.Encode.
func DecodeSourcePosition(b []byte) (SourcePosition, error) {
	var p SourcePosition
	if err := yson.Unmarshal(b, &p); err != nil {
		return SourcePosition{}, fmt.Errorf("source position: %w", err)
	}
	return p, nil
}
