package servicelog

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHashRanges: the ranges of a partition count cover [0, 2^64) without gaps or overlaps;
// indexes of other counts differ.
func TestHashRanges(t *testing.T) {
	for _, n := range []int64{1, 2, 3, 5, 7, 1024} {
		var prevHi uint64
		for i := range n {
			lo, hi, err := HashRange(PartitionIndex(n, i))
			require.NoError(t, err)
			assert.Equal(t, prevHi, lo, "count %d range %d starts where %d ends", n, i, i-1)
			if i == n-1 {
				assert.Zero(t, hi, "the last range is open")
			} else {
				assert.Greater(t, hi, lo)
			}
			prevHi = hi
		}
	}
	_, _, err := HashRange(PartitionIndex(3, 3))
	assert.Error(t, err)
	_, _, err = HashRange(7)
	assert.Error(t, err, "count 0")
	assert.NotEqual(t, PartitionIndex(2, 1), PartitionIndex(3, 1))
	lo, _, _ := HashRange(PartitionIndex(2, 1))
	assert.Equal(t, uint64(1)<<63, lo)
	assert.Equal(t, uint64(math.MaxUint64/3+1), func() uint64 { _, hi, _ := HashRange(PartitionIndex(3, 0)); return hi }())
}

// TestJoin: rows merge by key; a key is final only up to the smallest last key of a full
// page; ispresent marks the fetchers that had the key; value_columns and prefixes apply.
func TestJoin(t *testing.T) {
	keys := []string{"h", "k"}
	fs := []Fetcher{{Prefix: ""}, {Prefix: "b_", ValueColumns: []string{"x"}}}
	r := func(h uint64, k string, cols ...any) map[string]any {
		m := map[string]any{"h": h, "k": k}
		for i := 0; i+1 < len(cols); i += 2 {
			m[cols[i].(string)] = cols[i+1]
		}
		return m
	}
	pages := []page{
		{rows: []map[string]any{r(1, "a", "v", "1"), r(2, "a", "v", "2"), r(5, "a", "v", "5")}, full: true},
		{rows: []map[string]any{r(2, "a", "x", "X2", "y", "dropped"), r(3, "b", "x", "X3")}, full: false},
	}
	out, last, end := join(keys, fs, pages)
	assert.False(t, end)
	assert.Equal(t, []any{uint64(5), "a"}, last)
	require.Len(t, out, 4)
	assert.Equal(t, map[string]any{"h": uint64(1), "k": "a", "v": "1", "ispresent": []any{true, false}}, out[0])
	assert.Equal(t, map[string]any{"h": uint64(2), "k": "a", "v": "2", "b_x": "X2", "ispresent": []any{true, true}}, out[1])
	assert.Equal(t, map[string]any{"h": uint64(3), "k": "b", "b_x": "X3", "ispresent": []any{false, true}}, out[2])
	assert.Equal(t, uint64(5), out[3]["h"])

	// The second page full, ending at key (3, b): nothing past it is final.
	pages[1].full = true
	out, last, end = join(keys, fs, pages)
	assert.False(t, end)
	assert.Len(t, out, 3)
	assert.Equal(t, []any{uint64(3), "b"}, last)

	// One fetcher: no ispresent; at the end when its page is not full.
	out, _, end = join(keys, fs[:1], []page{{rows: pages[0].rows}})
	assert.True(t, end)
	assert.Len(t, out, 3)
	assert.NotContains(t, out[0], "ispresent")
}

// TestCompareKeys: YTsaurus's order: null first, then by type, then by value.
func TestCompareKeys(t *testing.T) {
	ordered := [][]any{{nil}, {int64(-1)}, {int64(3)}, {uint64(0)}, {uint64(math.MaxUint64)}, {1.5}, {false}, {true}, {""}, {"a"}, {"b"}, {"b", nil}, {"b", uint64(1)}}
	for i := range ordered {
		for j := range ordered {
			got := compareKeys(ordered[i], ordered[j])
			switch {
			case i < j:
				assert.Negative(t, got, "%v < %v", ordered[i], ordered[j])
			case i > j:
				assert.Positive(t, got, "%v > %v", ordered[i], ordered[j])
			default:
				assert.Zero(t, got)
			}
		}
	}
}

// TestNextCycle: a read goes on in its cycle; a finished cycle is followed by the next one
// once desired_cycle_time has passed since it started, never for a finite source.
func TestNextCycle(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	p, read := next(position{}, false, false, t0, time.Minute, false)
	assert.True(t, read)
	assert.Equal(t, position{Started: t0.UnixMicro()}, p)
	cur := position{Cycle: 3, Started: t0.UnixMicro(), After: []any{uint64(9)}, Count: 10}
	p, read = next(cur, true, false, t0.Add(time.Hour), time.Minute, false)
	assert.True(t, read)
	assert.Equal(t, cur, p, "on in the cycle")
	_, read = next(cur, true, true, t0.Add(59*time.Second), time.Minute, false)
	assert.False(t, read, "too early for the next cycle")
	p, read = next(cur, true, true, t0.Add(time.Minute), time.Minute, false)
	assert.True(t, read)
	assert.Equal(t, position{Cycle: 4, Started: t0.Add(time.Minute).UnixMicro()}, p)
	assert.Equal(t, int64(4)<<32, p.offset(), "offsets of a later cycle are above the earlier ones")
	_, read = next(cur, true, true, t0.Add(time.Hour), time.Minute, true)
	assert.False(t, read, "a finite source reads one cycle")

	enc := cur.encode()
	back, ok, err := decodePosition(enc)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, cur, back)
	_, _, err = decodePosition([]byte("{bad"))
	assert.Error(t, err)
}
