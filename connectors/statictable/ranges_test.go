package statictable

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func hour(h int) time.Time { return time.Date(2026, 12, 6, h, 0, 0, 0, time.UTC) }

// TestPartitionMapping: a table of n rows is cut into ranges of RangeRows rows, each range
// is the partition index system_µs×Slots+k, and Locate maps every index back to its table
// and row range.
func TestPartitionMapping(t *testing.T) {
	base := hour(0).UnixMicro() * Slots
	for _, c := range []struct {
		name    string
		rows    []int64 // row counts of tables at hours 0, 1, …
		minRows int64
		want    []int64 // indexes, relative to hour 0's base
		ranges  [][2]int64
	}{
		{"one range per small table", []int64{10, 5}, 100, []int64{0, 3600e6 * Slots}, [][2]int64{{0, 10}, {0, 5}}},
		{"cut by min rows", []int64{250}, 100, []int64{0, 1, 2}, [][2]int64{{0, 100}, {100, 200}, {200, 250}}},
		{"exact multiple", []int64{200}, 100, []int64{0, 1}, [][2]int64{{0, 100}, {100, 200}}},
		{"empty table has none", []int64{0, 3}, 2, []int64{3600e6 * Slots, 3600e6*Slots + 1}, [][2]int64{{0, 2}, {2, 3}}},
		{"at most Slots ranges", []int64{Slots * 4}, 1, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var tables []Table
			for i, n := range c.rows {
				tables = append(tables, Table{Path: "//t/" + hour(i).Format(time.RFC3339), Rows: n, Event: hour(i), System: hour(i)})
			}
			got, err := Partitions(tables, c.minRows)
			if err != nil {
				t.Fatal(err)
			}
			if c.want == nil { // only the bound: Slots ranges of 4 rows
				if len(got) != Slots || RangeRows(c.rows[0], c.minRows) != 4 {
					t.Fatalf("%d partitions of %d rows", len(got), RangeRows(c.rows[0], c.minRows))
				}
				return
			}
			var rel []int64
			for _, ix := range got {
				rel = append(rel, ix-base)
			}
			if !slices.Equal(rel, c.want) {
				t.Fatalf("indexes %v, want %v", rel, c.want)
			}
			for i, ix := range got {
				_, lo, hi, err := Locate(tables, ix, c.minRows)
				if err != nil || lo != c.ranges[i][0] || hi != c.ranges[i][1] {
					t.Errorf("index %d: [%d, %d) %v, want %v", ix, lo, hi, err, c.ranges[i])
				}
			}
		})
	}
}

// TestPartitionsStableAsTablesAppear: a new table — even one whose name sorts first — adds
// partitions and leaves the indexes and ranges of the tables already listed as they were.
func TestPartitionsStableAsTablesAppear(t *testing.T) {
	a := Table{Path: "//t/a", Rows: 30, Event: hour(1), System: hour(1)}
	b := Table{Path: "//t/b", Rows: 15, Event: hour(2), System: hour(2)}
	c := Table{Path: "//t/c", Rows: 7, Event: hour(3), System: hour(3)}
	before, err := Partitions([]Table{a, b}, 10)
	if err != nil {
		t.Fatal(err)
	}
	after, err := Partitions([]Table{a, b, c}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(after[:len(before)], before) || len(after) != len(before)+1 {
		t.Fatalf("before %v, after %v", before, after)
	}
	// Only [b, c] listed (a removed): b's partitions keep their indexes.
	rest, err := Partitions([]Table{b, c}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rest, after[3:]) {
		t.Fatalf("without a: %v, want %v", rest, after[3:])
	}
	for _, ix := range before {
		t1, lo1, hi1, err1 := Locate([]Table{a, b}, ix, 10)
		t2, lo2, hi2, err2 := Locate([]Table{a, b, c}, ix, 10)
		if err1 != nil || err2 != nil || t1.Path != t2.Path || lo1 != lo2 || hi1 != hi2 {
			t.Errorf("index %d moved: %s [%d,%d) %v → %s [%d,%d) %v", ix, t1.Path, lo1, hi1, err1, t2.Path, lo2, hi2, err2)
		}
	}
	if _, _, _, err := Locate([]Table{b, c}, before[0], 10); err == nil || !strings.Contains(err.Error(), "no table with system timestamp") {
		t.Errorf("index of a removed table: %v", err)
	}
}

// TestTablesMustIncrease: equal or decreasing timestamps are an error naming both tables.
func TestTablesMustIncrease(t *testing.T) {
	for _, c := range []struct {
		name   string
		tables []Table
		want   string
	}{
		{"equal system", []Table{{Path: "//t/a", Event: hour(1), System: hour(1)}, {Path: "//t/b", Event: hour(2), System: hour(1)}},
			"system timestamps do not increase strictly: table //t/b (2026-12-06T01:00:00Z) follows table //t/a (2026-12-06T01:00:00Z)"},
		{"decreasing event", []Table{{Path: "//t/a", Event: hour(3), System: hour(1)}, {Path: "//t/b", Event: hour(2), System: hour(2)}},
			"event timestamps do not increase strictly: table //t/b (2026-12-06T02:00:00Z) follows table //t/a (2026-12-06T03:00:00Z)"},
		{"before 1970", []Table{{Path: "//t/a", Event: hour(1), System: time.Unix(-1, 0)}}, "table //t/a: system timestamp"},
	} {
		_, err := Partitions(c.tables, 10)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// TestParseTimestamp: iso8601 in its usual forms, strftime formats, integer seconds.
func TestParseTimestamp(t *testing.T) {
	for _, c := range []struct {
		v      any
		format string
		want   time.Time
	}{
		{"2026-12-06T05:00:00Z", "iso8601", hour(5)},
		{"2026-12-06T05:00:00", "iso8601", hour(5)},
		{"2026-12-06T07:00:00+02:00", "iso8601", hour(5)},
		{"2026-12-06T05:00", "", hour(5)},
		{"2026-12-06T05", "", hour(5)},
		{"2026-12-06", "", hour(0)},
		{"2026-12-06T05:00:00.250000Z", "iso8601", hour(5).Add(250 * time.Millisecond)},
		{"20261206-05", "%Y%m%d-%H", hour(5)},
		{int64(hour(5).Unix()), "iso8601", hour(5)},
	} {
		got, err := parseTimestamp(c.v, c.format)
		if err != nil || !got.Equal(c.want) {
			t.Errorf("%v by %q: %v %v, want %v", c.v, c.format, got, err, c.want)
		}
	}
	for _, c := range []struct {
		v      any
		format string
	}{{"yesterday", "iso8601"}, {"2026-12-06", "%Y%m%d"}, {nil, ""}, {1.5, ""}, {"x", "%Q"}} {
		if got, err := parseTimestamp(c.v, c.format); err == nil {
			t.Errorf("%v by %q: %v, want an error", c.v, c.format, got)
		}
	}
}
