package flow

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/yson"
)

// TestScalarMatchesSDK: the fast state encoding writes the SDK's bytes and reads them back.
func TestScalarMatchesSDK(t *testing.T) {
	for _, v := range []any{int64(0), int64(-1), int64(42), int64(math.MinInt64), int64(math.MaxInt64),
		0, -7, math.MaxInt, int32(-5), uint64(0), uint64(math.MaxUint64), uint32(9), true, false} {
		b, ok := marshalScalar(v)
		require.True(t, ok, "%T", v)
		want, err := yson.Marshal(v)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(b), "%T %v", v, v)
	}
	_, ok := marshalScalar("s")
	assert.False(t, ok, "strings go through the SDK")

	var i int64
	assert.True(t, unmarshalScalar([]byte("-12"), &i))
	assert.Equal(t, int64(-12), i)
	var u uint64
	assert.True(t, unmarshalScalar([]byte("18446744073709551615u"), &u))
	assert.Equal(t, uint64(math.MaxUint64), u)
	var n int
	assert.True(t, unmarshalScalar([]byte("5"), &n))
	assert.Equal(t, 5, n)
	var f bool
	assert.True(t, unmarshalScalar([]byte("%true"), &f))
	assert.True(t, f)
	for _, bad := range []string{"", "12u", "1.5", "\x02\x04", " 1", "%yes", "u", "+3"} {
		assert.False(t, unmarshalScalar([]byte(bad), &i), "%q as int64", bad)
		assert.False(t, unmarshalScalar([]byte(bad), &f), "%q as bool", bad)
	}
	assert.False(t, unmarshalScalar([]byte("12"), &u), "an int64 is not a uint64")
	var s string
	assert.False(t, unmarshalScalar([]byte("x"), &s))
}
