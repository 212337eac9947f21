package servicelog

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"time"

	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/connectors/connector"
)

// MaxPartitions bounds desired_partition_count.
const MaxPartitions = 1024

// ErrKeySchema: a table's key columns do not allow the service log (its first key column is
// not a uint64, or joined tables have different keys).
var ErrKeySchema = errors.New("bad key schema for a service log")

// PartitionIndex is the index of hash range i of count: count<<32 | i. A change of the
// partition count makes new indexes, so a position is never read against other ranges.
func PartitionIndex(count, i int64) int64 { return count<<32 | i }

// HashRange is the range [lo, hi) of the first key column that partition index reads; hi 0
// means up to 2^64 − 1 inclusive.
func HashRange(index int64) (lo, hi uint64, err error) {
	count, i := index>>32, index&math.MaxUint32
	if count < 1 || count > MaxPartitions || i >= count {
		return 0, 0, fmt.Errorf("partition %d: not a service log partition index", index)
	}
	width := math.MaxUint64/uint64(count) + 1
	if count == 1 {
		return 0, 0, nil
	}
	lo = uint64(i) * width
	if i < count-1 {
		hi = lo + width
	}
	return lo, hi, nil
}

// position is where a partition's reader is: in cycle Cycle, started at Started (µs), past
// key After (nil: at the cycle's start) after Count rows of the cycle.
type position struct {
	Cycle   int64 `yson:"cycle"`
	Started int64 `yson:"started"`
	After   []any `yson:"after"`
	Count   int64 `yson:"count"`
}

// maxCycleRows is the most rows one partition emits in a cycle: a row's offset is
// cycle<<32 | ordinal.
const maxCycleRows = 1 << 32

func (p position) offset() int64 { return p.Cycle<<32 | p.Count }

func (p position) encode() connector.Position {
	b, err := yson.Marshal(p)
	if err != nil {
		panic(err) // a position holds only YSON-encodable key values
	}
	return b
}

func decodePosition(b connector.Position) (position, bool, error) {
	if len(b) == 0 {
		return position{}, false, nil
	}
	var p position
	if err := yson.Unmarshal(b, &p); err != nil {
		return p, false, fmt.Errorf("position %q does not decode: %w", b, err)
	}
	return p, true, nil
}

// next decides where a read from committed position cur (ok false: none) goes at now:
// on in cur's cycle, or — cur's cycle being over (done) — the next cycle once
// cycleTime has passed since cur's started. read is false when nothing may be read yet; a
// finite source reads one cycle.
func next(cur position, ok, done bool, now time.Time, cycleTime time.Duration, finite bool) (p position, read bool) {
	switch {
	case !ok:
		return position{Started: now.UnixMicro()}, true
	case !done:
		return cur, true
	case finite:
		return cur, false
	case now.Before(time.UnixMicro(cur.Started).Add(cycleTime)):
		return cur, false
	}
	return position{Cycle: cur.Cycle + 1, Started: now.UnixMicro()}, true
}

// page is the rows of one fetcher after a key, in key order; full tells whether it holds
// as many rows as were asked for (more may follow).
type page struct {
	rows []map[string]any
	full bool
}

// join merges the fetchers' pages by key and returns the joined rows that are final — no
// fetcher whose page is full may still have a key at or below them — and whether the scan
// is at its end (no page full). A joined row holds the key columns, each fetcher's value
// columns (values: nil for all) under its prefix, and, with several fetchers, the list
// "ispresent" of which fetchers had the key.
func join(keys []string, fetchers []Fetcher, pages []page) (out []map[string]any, lastKey []any, end bool) {
	var horizon []any // the smallest last key of a full page
	end = true
	for _, pg := range pages {
		if pg.full && len(pg.rows) > 0 {
			end = false
			k := keyOf(pg.rows[len(pg.rows)-1], keys)
			if horizon == nil || compareKeys(k, horizon) < 0 {
				horizon = k
			}
		}
	}
	idx := make([]int, len(pages))
	for {
		var least []any
		for f, pg := range pages {
			if idx[f] < len(pg.rows) {
				k := keyOf(pg.rows[idx[f]], keys)
				if least == nil || compareKeys(k, least) < 0 {
					least = k
				}
			}
		}
		if least == nil || (horizon != nil && compareKeys(least, horizon) > 0) {
			return out, lastKey, end
		}
		row := make(map[string]any, len(keys)+4)
		for i, k := range keys {
			row[k] = least[i]
		}
		present := make([]any, len(pages))
		for f, pg := range pages {
			present[f] = false
			if idx[f] >= len(pg.rows) || compareKeys(keyOf(pg.rows[idx[f]], keys), least) != 0 {
				continue
			}
			present[f] = true
			src := pg.rows[idx[f]]
			idx[f]++
			if fetchers[f].ValueColumns != nil {
				for _, c := range fetchers[f].ValueColumns {
					row[fetchers[f].Prefix+c] = src[c]
				}
				continue
			}
			for c, v := range src {
				if !isKey(keys, c) {
					row[fetchers[f].Prefix+c] = v
				}
			}
		}
		if len(pages) > 1 {
			row["ispresent"] = present
		}
		out = append(out, row)
		lastKey = least
	}
}

func isKey(keys []string, c string) bool {
	for _, k := range keys {
		if k == c {
			return true
		}
	}
	return false
}

func keyOf(row map[string]any, keys []string) []any {
	k := make([]any, len(keys))
	for i, c := range keys {
		k[i] = row[c]
	}
	return k
}

// compareKeys orders keys as YTsaurus does: column by column, null first, then by type
// (int64, uint64, double, boolean, string), then by value.
func compareKeys(a, b []any) int {
	for i := range min(len(a), len(b)) {
		if c := compareValues(a[i], b[i]); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

func rank(v any) int {
	switch v.(type) {
	case nil:
		return 0
	case int64:
		return 1
	case uint64:
		return 2
	case float64:
		return 3
	case bool:
		return 4
	case string, []byte:
		return 5
	}
	return 6
}

func compareValues(a, b any) int {
	ra, rb := rank(a), rank(b)
	if ra != rb {
		return ra - rb
	}
	switch x := a.(type) {
	case int64:
		return cmp3(x < b.(int64), x > b.(int64))
	case uint64:
		return cmp3(x < b.(uint64), x > b.(uint64))
	case float64:
		return cmp3(x < b.(float64), x > b.(float64))
	case bool:
		return cmp3(!x && b.(bool), x && !b.(bool))
	case string:
		return bytes.Compare([]byte(x), asBytes(b))
	case []byte:
		return bytes.Compare(x, asBytes(b))
	}
	return 0
}

func asBytes(v any) []byte {
	if s, ok := v.(string); ok {
		return []byte(s)
	}
	b, _ := v.([]byte)
	return b
}

func cmp3(less, greater bool) int {
	switch {
	case less:
		return -1
	case greater:
		return 1
	}
	return 0
}
