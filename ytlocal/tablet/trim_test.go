package tablet

import (
	"slices"
	"testing"
)

// TestTrimRowsKeepsOrderAndCompacts trims a long tablet a few rows at a time: the kept rows
// stay in order, appends after trims land at the end, and the array is compacted once the
// trimmed prefix outgrows the kept rows (trimming is O(rows dropped)).
func TestTrimRowsKeepsOrderAndCompacts(t *testing.T) {
	tb := &orderedTablet{}
	next := int64(0)
	appendRows := func(n int) {
		for range n {
			tb.rows = append(tb.rows, orderedRow{ts: Timestamp(next), values: []any{next}})
			next++
		}
	}
	appendRows(10000)
	first := int64(0)
	compactions := 0
	for round := 0; round < 300; round++ {
		tb.trimRows(37)
		first += 37
		if tb.dropped == 0 {
			compactions++
		}
		appendRows(5)
		if got := tb.rows[0].values[0].(int64); got != first {
			t.Fatalf("round %d: first kept row is %d, want %d", round, got, first)
		}
		if got := tb.rows[len(tb.rows)-1].values[0].(int64); got != next-1 {
			t.Fatalf("round %d: last row is %d, want %d", round, got, next-1)
		}
		if int64(len(tb.rows)) != next-first {
			t.Fatalf("round %d: %d rows kept, want %d", round, len(tb.rows), next-first)
		}
	}
	if compactions == 0 {
		t.Fatalf("the array was never compacted (%d trimmed entries kept)", tb.dropped)
	}
	if tb.dropped > 2*len(tb.rows)+1024 {
		t.Fatalf("%d trimmed entries kept for %d rows", tb.dropped, len(tb.rows))
	}
}

// TestPruneKeepsNewestAtHorizon checks prune against its definition: of the versions at or
// before the horizon only the newest stays, and every later one stays.
func TestPruneKeepsNewestAtHorizon(t *testing.T) {
	for n := 0; n <= 6; n++ {
		for horizon := Timestamp(0); horizon <= Timestamp(2*n+2); horizon++ {
			r := &row{}
			for i := range n {
				r.versions = append(r.versions, version{ts: Timestamp(2*i + 1), values: []any{int64(i)}})
			}
			var want []Timestamp
			for i, v := range r.versions {
				if v.ts > horizon || i+1 == n || r.versions[i+1].ts > horizon {
					want = append(want, v.ts)
				}
			}
			prune(r, horizon)
			var got []Timestamp
			for _, v := range r.versions {
				got = append(got, v.ts)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%d versions, horizon %d: kept %v, want %v", n, horizon, got, want)
			}
		}
	}
}
