// A job reports its status at once on a transition the controller waits for.

package job

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/ytstore"
)

// TestStatusReportedOnTransition: with a status period far beyond the test, a job's status
// still shows draining applied with nothing in flight soon after the flag is set, and keeps
// getting newer while the job is drained (the controller's drain rule waits for a second,
// newer observation).
func TestStatusReportedOnTransition(t *testing.T) {
	e := startWordCountOpts(t, nil, func(c *Config) { c.StatusPeriod = time.Hour })
	lease := e.putJob("count-0", "count", "count-p0", -1)
	status := func() (ytstore.JobStatus, bool) {
		sts, err := e.store.JobStatuses(e.ctx)
		require.NoError(t, err)
		for _, st := range sts {
			if st.JobID == "count-0" {
				return st, true
			}
		}
		return ytstore.JobStatus{}, false
	}
	e.eventually("the first status", func() bool { _, ok := status(); return ok })
	first, _ := status()
	require.False(t, first.Draining)

	e.applyLayout(ytstore.LayoutChange{PutJobs: []ytstore.Job{{JobID: "count-0", ComputationID: "count", PartitionID: "count-p0",
		WorkerID: "w1", LeaseID: lease, SourcePartition: -1, Draining: true}}})
	var drained ytstore.JobStatus
	e.eventually("a status with draining applied and nothing in flight", func() bool {
		st, _ := status()
		drained = st
		return st.Draining && st.InFlight == 0
	})
	e.eventually("a newer status of the drained job", func() bool {
		st, _ := status()
		return st.Draining && st.UpdatedAt > drained.UpdatedAt
	})
}

// TestStatusReportsLoad: a keyed job reports in job_status the messages it processed, the
// bytes it received, its busy time and the key quantiles of its inputs (pivot_finder), which
// partitioning by load reads; a source job reports no pivots.
func TestStatusReportsLoad(t *testing.T) {
	e := startWordCount(t)
	e.putJob("split-0", "split", "split-p0", 0)
	e.putJob("count-0", "count", "count-p0", -1)
	e.write("a b a", "b c")
	e.waitCounts(map[string]int64{"a": 2, "b": 2, "c": 1})
	var count, split ytstore.JobStatus
	e.eventually("count-0 to report its five messages", func() bool {
		sts, err := e.store.JobStatuses(e.ctx)
		require.NoError(t, err)
		for _, st := range sts {
			switch st.JobID {
			case "count-0":
				count = st
			case "split-0":
				split = st
			}
		}
		return count.Messages == 5 && split.Messages == 2
	})
	assert.Positive(t, int64(count.Bytes), "bytes received")
	assert.Positive(t, int64(count.BusyTime), "busy time")
	// Five inputs of three keys: 17 pivots (part_count 16) from the smallest key hash to the
	// largest, ascending.
	require.Len(t, count.Pivots, 17)
	assert.True(t, slices.IsSorted(count.Pivots), "pivots ascending: %v", count.Pivots)
	assert.Less(t, count.Pivots[0], count.Pivots[16])
	assert.Empty(t, split.Pivots, "a source job keeps no pivots")
}
