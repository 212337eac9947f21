package ytstore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSourcePositionRoundTrip(t *testing.T) {
	for _, p := range []SourcePosition{{}, {NextSeq: 42, Position: []byte{0, 0, 0, 0, 0, 0, 0, 42}}, {NextSeq: 7, Position: []byte("any bytes\x00\xff")}} {
		got, err := DecodeSourcePosition(p.Encode())
		require.NoError(t, err)
		assert.Equal(t, p.NextSeq, got.NextSeq)
		assert.Equal(t, string(p.Position), string(got.Position))
	}
	_, err := DecodeSourcePosition([]byte("{next_seq = oops}"))
	assert.Error(t, err)
}
