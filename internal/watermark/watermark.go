// Package watermark holds the arithmetic the EventWatermark rules share: the job's
// watermark_percentile over its in-flight outputs and the controller's late_data_partitions
// over its jobs' bounds are the same bound over different sets of timestamps.
package watermark

import (
	"math"
	"slices"
)

// PercentileBound is max(the smallest of ts, their pct-th percentile (nearest rank, pct in
// (0, 100]) − delay): the bound lies between the smallest timestamp and the percentile, so
// values more than delay behind the percentile stop holding it back. It sorts ts in place and
// returns 0 when ts is empty.
func PercentileBound(ts []uint64, pct float64, delay uint64) uint64 {
	if len(ts) == 0 {
		return 0
	}
	slices.Sort(ts)
	rank := int(math.Ceil(pct / 100 * float64(len(ts))))
	p := ts[min(max(rank, 1), len(ts))-1]
	if p > delay {
		return max(ts[0], p-delay)
	}
	return ts[0]
}
