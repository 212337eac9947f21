package tablet

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"
)

// TestWatermarkMergeMatchesModel: random writes (rising, falling and null values), deletes
// and watermark merges leave exactly the rows a full scan of the table would keep: every
// row whose latest value is below a merged watermark is gone, every other row stays, and
// key-order reads see the same (the merge's index of rows by value and the lazily updated
// key-order index agree with the model). Tracking starts at a random point: at the table's
// first merge, which may find rows already there.
func TestWatermarkMergeMatchesModel(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			e := New(Config{})
			newMounted(t, e, "t", schema.Schema{Columns: []schema.Column{
				{Name: "k", Type: schema.TypeString, SortOrder: schema.SortAscending},
				{Name: "ts", Type: schema.TypeUint64},
				{Name: "v", Type: schema.TypeInt64},
			}})
			type state struct {
				ts  any // uint64 or nil
				set bool
			}
			model := map[string]state{}
			var watermark uint64
			const span = uint64(1) << 22 // four index buckets
			for step := 0; step < 600; step++ {
				switch op := rng.Intn(10); {
				case op < 6:
					var rows []map[string]any
					for range 1 + rng.Intn(5) {
						k := fmt.Sprintf("k%03d", rng.Intn(150))
						var ts any
						if rng.Intn(8) > 0 {
							ts = watermark/2 + uint64(rng.Int63n(int64(span)))
						}
						rows = append(rows, map[string]any{"k": k, "ts": ts, "v": int64(step)})
						model[k] = state{ts: ts, set: true}
					}
					insert(t, e, "t", InsertOptions{}, rows...)
				case op < 7:
					k := fmt.Sprintf("k%03d", rng.Intn(150))
					_, err := e.Run(func(tx string) error { return e.Delete(tx, "t", []map[string]any{{"k": k}}) })
					require.NoError(t, err)
					delete(model, k)
				default:
					watermark += uint64(rng.Int63n(int64(span / 4)))
					_, err := e.MergeWatermark("t", "ts", watermark)
					require.NoError(t, err)
					for k, s := range model {
						if ts, ok := s.ts.(uint64); ok && ts < watermark {
							delete(model, k)
						}
					}
				}
				if step%7 == 0 || step == 599 {
					var want, got []string
					for k, s := range model {
						want = append(want, fmt.Sprintf("%s=%v", k, s.ts))
					}
					slices.Sort(want)
					require.NoError(t, e.Scan("t", ReadOptions{}, func(r map[string]any) bool {
						got = append(got, fmt.Sprintf("%s=%v", r["k"], r["ts"]))
						return true
					}))
					require.Equal(t, want, got, "step %d, watermark %d", step, watermark)
				}
			}
		})
	}
}

// TestWatermarkMergeReleasesRows: rows dropped by merges of a table that is never scanned
// (only looked up, as the dedup indexes are) do not stay referenced by the key-order index.
func TestWatermarkMergeReleasesRows(t *testing.T) {
	e := New(Config{})
	newMounted(t, e, "t", schema.Schema{Columns: []schema.Column{
		{Name: "k", Type: schema.TypeString, SortOrder: schema.SortAscending},
		{Name: "ts", Type: schema.TypeUint64},
	}})
	_, err := e.MergeWatermark("t", "ts", 0)
	require.NoError(t, err)
	for round := uint64(1); round <= 50; round++ {
		rows := make([]map[string]any, 100)
		for i := range rows {
			rows[i] = map[string]any{"k": fmt.Sprintf("%03d-%03d", round, i), "ts": round << 20}
		}
		insert(t, e, "t", InsertOptions{}, rows...)
		_, err := e.MergeWatermark("t", "ts", (round-1)<<20)
		require.NoError(t, err)
	}
	tb := e.tables["t"]
	require.Len(t, tb.rows, 200)
	require.LessOrEqual(t, len(tb.index)+len(tb.fresh), 2*len(tb.rows)+1, "the index holds what is in the table, give or take the removed half")
}

// TestWatermarkIndexAcrossBlocks: a bucket of the watermark index spans several blocks; a
// merge reports exactly the entries below its watermark, in every block, keeps the others
// in order, and a later merge finds those.
func TestWatermarkIndexAcrossBlocks(t *testing.T) {
	var x wmIndex
	n := 3*wmBlockLen + 17
	base := uint64(5) << wmBucketShift
	for i := range n {
		// Values interleave within one bucket: every third entry is high.
		v := base + uint64(i%3)*1000
		x.add(v, fmt.Sprint(i))
	}
	x.add(base+(1<<wmBucketShift), "next-bucket")
	var got []string
	x.below(base+1, func(enc string) { got = append(got, enc) })
	var want []string
	for i := 0; i < n; i += 3 {
		want = append(want, fmt.Sprint(i))
	}
	require.Equal(t, want, got)
	got = nil
	x.below(base+(1<<wmBucketShift)+1, func(enc string) { got = append(got, enc) })
	want = nil
	for i := range n {
		if i%3 != 0 {
			want = append(want, fmt.Sprint(i))
		}
	}
	want = append(want, "next-bucket")
	require.Equal(t, want, got)
	require.Empty(t, x.ids)
	require.Empty(t, x.buckets)
}
