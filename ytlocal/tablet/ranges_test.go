package tablet

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/internal/ytvalue"
)

// TestScanRangesMatchesFilteredScan compares ScanRanges with a full scan
// filtered by the same ranges, for random tables and ranges.
func TestScanRangesMatchesFilteredScan(t *testing.T) {
	for seed := int64(1); seed <= 30; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			e := New(Config{})
			newMounted(t, e, "t", schema.Schema{Columns: []schema.Column{
				{Name: "a", Type: schema.TypeInt64, SortOrder: schema.SortAscending},
				{Name: "b", Type: schema.TypeUint64, SortOrder: schema.SortAscending},
				{Name: "c", Type: schema.TypeString, SortOrder: schema.SortAscending},
				{Name: "v", Type: schema.TypeInt64},
			}})
			var rows []map[string]any
			for i := 0; i < 200; i++ {
				rows = append(rows, map[string]any{"a": int64(rng.Intn(5)), "b": uint64(rng.Intn(8)), "c": fmt.Sprint(rng.Intn(4)), "v": int64(i)})
			}
			insert(t, e, "t", InsertOptions{}, rows...)
			cols := []string{"a", "b", "c"}
			lit := func(col string) any {
				switch col {
				case "a":
					return int64(rng.Intn(6) - 1)
				case "b":
					return int64(rng.Intn(9)) // int64 literal for a uint64 column converts
				}
				return fmt.Sprint(rng.Intn(5))
			}
			for q := 0; q < 20; q++ {
				p := rng.Intn(3)
				sets := make([][]any, p)
				for i := range sets {
					for n := 1 + rng.Intn(3); n > 0; n-- {
						sets[i] = append(sets[i], lit(cols[i]))
					}
				}
				var lower, upper *Bound
				if rng.Intn(2) == 0 || p == 0 {
					lower = &Bound{Value: lit(cols[p]), Inclusive: rng.Intn(2) == 0}
				}
				if rng.Intn(2) == 0 {
					upper = &Bound{Value: lit(cols[p]), Inclusive: rng.Intn(2) == 0}
				}
				ranges := []KeyRange{{}}
				for _, set := range sets {
					var next []KeyRange
					for _, r := range ranges {
						for _, v := range set {
							next = append(next, KeyRange{Prefix: append(append([]any{}, r.Prefix...), v)})
						}
					}
					ranges = next
				}
				for i := range ranges {
					ranges[i].Lower, ranges[i].Upper = lower, upper
				}
				inside := func(r map[string]any) bool {
					for _, kr := range ranges {
						ok := true
						for i, v := range kr.Prefix {
							n, _ := e.tables["t"].cols[i].normalize(v)
							ok = ok && ytvalue.Compare(r[cols[i]], n) == 0
						}
						if !ok {
							continue
						}
						x := r[cols[len(kr.Prefix)]]
						for _, b := range []struct {
							b    *Bound
							sign int
						}{{kr.Lower, 1}, {kr.Upper, -1}} {
							if b.b == nil {
								continue
							}
							n, _ := e.tables["t"].cols[len(kr.Prefix)].normalize(b.b.Value)
							c := ytvalue.Compare(x, n) * b.sign
							ok = ok && (c > 0 || (c == 0 && b.b.Inclusive))
						}
						if ok {
							return true
						}
					}
					return false
				}
				var want, got []any
				require.NoError(t, e.Scan("t", ReadOptions{}, func(r map[string]any) bool {
					if inside(r) {
						want = append(want, r["v"])
					}
					return true
				}))
				require.NoError(t, e.ScanRanges("t", ReadOptions{}, ranges, func(r map[string]any) bool {
					got = append(got, r["v"])
					return true
				}))
				require.Equal(t, want, got, "ranges %+v", ranges)
			}
		})
	}
}
