package statictable

import (
	"fmt"
	"time"
)

// Slots is the number of read ranges a table may have: the factor of its system timestamp in
// a partition index (package doc).
const Slots = 1024

// Table is one table of the source as its listing found it.
type Table struct {
	// Path reads the table; Name is its key (the link's, for a followed link).
	Path, Name string
	Rows       int64
	// Event and System are its located timestamps.
	Event, System time.Time
}

// RangeRows is the read range size of a table of rows rows: at least min, and large
// enough that the table has at most Slots ranges.
func RangeRows(rows, min int64) int64 {
	return max(min, (rows+Slots-1)/Slots)
}

// PartitionIndex is the index of range k of the table with system timestamp system.
// Invariant: a range's index depends only on its own table, so tables that appear later
// add partitions and move none (TestPartitionsStableAsTablesAppear,
// TestStaticTableSourceConformance).
func PartitionIndex(system time.Time, k int64) int64 {
	return system.UnixMicro()*Slots + k
}

// SplitIndex is PartitionIndex's inverse: the system timestamp and the range number.
func SplitIndex(index int64) (system time.Time, k int64) {
	return time.UnixMicro(index / Slots).UTC(), index % Slots
}

// checkTables checks that both timestamps of tables increase strictly along the table order
// and lie in the range a partition index holds; the error names both tables of a violation.
func checkTables(tables []Table) error {
	limit := time.UnixMicro((1<<63 - 1) / Slots)
	for i, t := range tables {
		if t.System.Before(time.Unix(0, 0)) || !t.System.Before(limit) {
			return fmt.Errorf("table %s: system timestamp %s is outside [1970, %d]", t.Path, t.System.Format(time.RFC3339Nano), limit.Year())
		}
		if t.Event.Before(time.Unix(0, 0)) {
			return fmt.Errorf("table %s: event timestamp %s is before 1970", t.Path, t.Event.Format(time.RFC3339Nano))
		}
		if i == 0 {
			continue
		}
		p := tables[i-1]
		if !t.System.After(p.System) {
			return fmt.Errorf("system timestamps do not increase strictly: table %s (%s) follows table %s (%s)",
				t.Path, t.System.Format(time.RFC3339Nano), p.Path, p.System.Format(time.RFC3339Nano))
		}
		if !t.Event.After(p.Event) {
			return fmt.Errorf("event timestamps do not increase strictly: table %s (%s) follows table %s (%s)",
				t.Path, t.Event.Format(time.RFC3339Nano), p.Path, p.Event.Format(time.RFC3339Nano))
		}
	}
	return nil
}

// Partitions lists the partition indexes of tables cut into ranges of at least minRows rows.
// An empty table has no partitions.
func Partitions(tables []Table, minRows int64) ([]int64, error) {
	if err := checkTables(tables); err != nil {
		return nil, err
	}
	out := []int64{}
	for _, t := range tables {
		r := RangeRows(t.Rows, minRows)
		for k := int64(0); k*r < t.Rows; k++ {
			out = append(out, PartitionIndex(t.System, k))
		}
	}
	return out, nil
}

// Locate finds the table and the row range [lo, hi) of partition index among tables.
func Locate(tables []Table, index, minRows int64) (t Table, lo, hi int64, err error) {
	if index < 0 {
		return Table{}, 0, 0, fmt.Errorf("partition %d: negative index", index)
	}
	system, k := SplitIndex(index)
	for _, t := range tables {
		if t.System.Equal(system) {
			r := RangeRows(t.Rows, minRows)
			lo, hi = k*r, min((k+1)*r, t.Rows)
			if lo >= t.Rows {
				return Table{}, 0, 0, fmt.Errorf("partition %d: table %s has %d rows, no range %d of %d rows", index, t.Path, t.Rows, k, r)
			}
			return t, lo, hi, nil
		}
	}
	return Table{}, 0, 0, fmt.Errorf("partition %d: no table with system timestamp %s", index, system.Format(time.RFC3339Nano))
}
