package ytlocal

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/ytlocal/tablet"
	"github.com/ytflow/yt-flow/ytql"
)

// parsedKeyRanges is keyRanges of query text; text that does not parse gives
// nil, as select_rows rejects it before any scan.
func parsedKeyRanges(query string, keyColumns []string, placeholders map[string]any) []tablet.KeyRange {
	q, err := ytql.ParseQuery(query)
	if err != nil {
		return nil
	}
	return keyRanges(q, keyColumns, placeholders)
}

func TestKeyRanges(t *testing.T) {
	keys := []string{"c", "h", "s"}
	incl := func(v any) *tablet.Bound { return &tablet.Bound{Value: v, Inclusive: true} }
	excl := func(v any) *tablet.Bound { return &tablet.Bound{Value: v} }
	for _, tc := range []struct {
		query string
		want  []tablet.KeyRange
	}{
		{"* from [//t] where c = 'x' and h in (1u, 2u)", []tablet.KeyRange{{Prefix: []any{"x", uint64(1)}}, {Prefix: []any{"x", uint64(2)}}}},
		{"* from [//t] where h = 1 and c = \"a\\\"b\"", []tablet.KeyRange{{Prefix: []any{"a\"b", int64(1)}}}},
		{"* from [//t] where c = 'x' and h >= 5u and h < 9u limit 3", []tablet.KeyRange{{Prefix: []any{"x"}, Lower: incl(uint64(5)), Upper: excl(uint64(9))}}},
		{"* from [//t] where 5 < c", []tablet.KeyRange{{Lower: excl(int64(5))}}},
		{"* from [//t] where ([c] = {p} and v != 3) order by c limit 1", []tablet.KeyRange{{Prefix: []any{"ph"}}}},
		{"* from [//t] where c = -7 and not h = 1", []tablet.KeyRange{{Prefix: []any{int64(-7)}}}},
		{"* from [//t] where c = 'x' and s = 'y'", []tablet.KeyRange{{Prefix: []any{"x"}}}},
		// No pruning.
		{"* from [//t]", nil},
		{"* from [//t] where h = 1", nil},
		{"* from [//t] where c = 'x' or c = 'y'", nil},
		{"* from [//t] where c between 'a' and 'b'", nil},
		{"* from [//t] where c + 1 = 2", nil},
		{"* from [//t] where (c, h) in (('a', 1u))", nil},
		{"* from [//t] where c = {list}", nil},
		{"* from [//t] where c = 'unterminated", nil},
	} {
		t.Run(tc.query, func(t *testing.T) {
			got := parsedKeyRanges(tc.query, keys, map[string]any{"p": "ph", "list": []any{int64(1)}})
			assert.Equal(t, tc.want, got)
		})
	}
}

// FuzzKeyRanges: any query text gives ranges or nil, never a panic, and every
// range has a prefix over leading key columns only.
func FuzzKeyRanges(f *testing.F) {
	for _, s := range []string{
		"* from [//t] where c = 'x' and h in (1u, 2u)",
		"a, b from [//t] where (c = %true and h >= -3) and s < 'z' order by a limit 5",
		"* from [//t] where c = '\\x41' and h in ({p}, 3u) group by c",
		"* from `//t` where [c] = 1 and `h` in ()",
		"* from [//t] where c in (1, 2",
		"where where and and in (",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		ranges := parsedKeyRanges(q, []string{"c", "h"}, map[string]any{"p": uint64(1)})
		for _, r := range ranges {
			require.LessOrEqual(t, len(r.Prefix), 2)
			if len(r.Prefix) == 2 {
				require.Nil(t, r.Lower)
				require.Nil(t, r.Upper)
			}
		}
	})
}
