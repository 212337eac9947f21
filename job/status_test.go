// A job reports its status at once on a transition the controller waits for.

package job

import (
	"testing"
	"time"

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
