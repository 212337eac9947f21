// The driver's throttler step: the distributed throttlers' grants (internal/throttle).

package controller

import (
	"context"
	"math"
	"sort"
	"time"

	"github.com/ytflow/yt-flow/internal/throttle"
	"github.com/ytflow/yt-flow/ytstore"
)

// throttles are the leader's throttler buckets and what it granted (published as
// @throttler_grants).
type throttles struct {
	buckets map[string]*throttle.Bucket
	grants  ytstore.ThrottlerGrants
}

// advanceThrottlers runs a round of every throttler of the dynamic spec at now: each job of a
// computation with an input_rows_throttler_id asks for what it requested in all
// (job_status.throttle_requested) less what it was granted, the most lagging first (the
// smallest system watermark, the oldest message it holds); the grants are added to the jobs'
// totals and published. A new leader continues from the published totals with an empty bucket.
func (c *cycler) advanceThrottlers(ctx context.Context, in *Input, attrs *ytstore.Attributes, now time.Time) error {
	top := in.Topology
	if len(top.Throttlers) == 0 {
		return nil
	}
	if ok, err := c.st.Throttling(ctx); err != nil || !ok {
		return err
	}
	if c.thr == nil {
		c.thr = &throttles{buckets: map[string]*throttle.Bucket{}, grants: ytstore.ThrottlerGrants{}.Clone()}
		if attrs.ThrottlerGrants != nil {
			c.thr.grants = attrs.ThrottlerGrants.Clone()
		}
	}
	g := &c.thr.grants
	compOf := map[string]string{} // partition id -> computation id
	for _, p := range in.Partitions {
		compOf[p.PartitionID] = p.ComputationID
	}
	status := map[string]ytstore.JobStatus{}
	for _, st := range in.Statuses {
		status[st.JobID] = st
	}
	comps := map[string]Computation{}
	for _, tc := range top.Computations {
		comps[tc.ID] = tc
	}
	reqs := map[string][]throttle.Request{}
	live := map[string]bool{}
	for _, j := range in.Jobs {
		live[j.JobID] = true
		tc, ok := comps[compOf[j.PartitionID]]
		if !ok || tc.RowsThrottler == "" {
			continue
		}
		st, ok := status[j.JobID]
		if !ok {
			continue
		}
		if want := int64(st.ThrottleRequested) - g.Jobs[j.JobID]; want > 0 {
			lag := st.SystemWatermark
			if lag == 0 {
				lag = math.MaxUint64
			}
			reqs[tc.RowsThrottler] = append(reqs[tc.RowsThrottler], throttle.Request{Job: j.JobID, Class: tc.RowsThrottlerClass, Amount: want, Lag: lag})
		}
	}
	changed := false
	for id := range g.Jobs {
		if !live[id] {
			delete(g.Jobs, id) // a job gone from the layout draws nothing more
			changed = true
		}
	}
	ids := make([]string, 0, len(top.Throttlers))
	for id := range top.Throttlers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		cfg := top.Throttlers[id]
		b, ok := c.thr.buckets[id]
		if !ok {
			tot := g.Throttlers[id]
			b = throttle.Resume(tot.Periods, tot.Granted)
			c.thr.buckets[id] = b
		}
		for job, n := range b.Round(cfg, now, reqs[id]) {
			g.Jobs[job] += n
			changed = true
		}
		tot := ytstore.ThrottlerTotals{Limit: cfg.Limit, Periods: b.Periods, Granted: b.Granted}
		if tot != g.Throttlers[id] {
			g.Throttlers[id] = tot
			changed = true
		}
	}
	if !changed && attrs.ThrottlerGrants != nil {
		return nil
	}
	return c.st.SetThrottlerGrants(ctx, c.sess, *g)
}
