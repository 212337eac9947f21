// The driver's throttler step: the distributed throttlers' grants (internal/throttle).

package controller

import (
	"context"
	"math"
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

// advanceThrottlers runs a round of every throttler of the dynamic spec at now. Each job asks
// each throttler it draws from for what it requested in all less what it was granted: the
// input rows throttler (job_status.throttle_requested, or its entry in throttle_requests), the
// input bytes throttler and the throttlers its process function asked for quota
// (throttle_requests), in the class its computation names for input rows or bytes (else
// "default"), the most lagging first (the smallest system watermark, the oldest message it
// holds). The grants are added to the jobs' totals and published (@throttler_grants); a new
// leader continues from the published totals with an empty bucket.
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
	changed := c.thr.round(in, now)
	g := &c.thr.grants
	if !changed && attrs.ThrottlerGrants != nil {
		return nil
	}
	if err := c.st.SetThrottlerGrants(ctx, c.sess, *g); err != nil {
		return err
	}
	pub := g.Clone()
	attrs.ThrottlerGrants = &pub
	return nil
}

// round runs a round of every throttler of in's topology at now: the jobs' requests
// (throttleRequests), the buckets' grants added to the jobs' totals, the totals updated. It
// reports whether the grants changed. Pure: no I/O, the time is given.
func (t *throttles) round(in *Input, now time.Time) bool {
	g := &t.grants
	top := in.Topology
	reqs, live := throttleRequests(in, g)
	comps := map[string]Computation{}
	for _, tc := range top.Computations {
		comps[tc.ID] = tc
	}
	compOf := map[string]string{} // partition id -> computation id
	for _, p := range in.Partitions {
		compOf[p.PartitionID] = p.ComputationID
	}
	changed := false
	for id := range g.Jobs {
		if !live[id] {
			delete(g.Jobs, id) // a job gone from the layout draws nothing more
			changed = true
		}
	}
	for _, jobs := range g.ByThrottler {
		for id := range jobs {
			if !live[id] {
				delete(jobs, id)
				changed = true
			}
		}
	}
	rowsOf := map[string]string{} // job id -> its input rows throttler
	for _, j := range in.Jobs {
		if tc := comps[compOf[j.PartitionID]]; tc.RowsThrottler != "" {
			rowsOf[j.JobID] = tc.RowsThrottler
		}
	}
	for _, id := range sortedKeys(top.Throttlers) {
		cfg := top.Throttlers[id]
		b, ok := t.buckets[id]
		if !ok {
			tot := g.Throttlers[id]
			b = throttle.Resume(tot.Periods, tot.Granted)
			t.buckets[id] = b
		}
		jobs := g.ByThrottler[id]
		if jobs == nil {
			jobs = map[string]int64{}
			g.ByThrottler[id] = jobs
		}
		var asked int64
		for _, r := range reqs[id] {
			asked += r.Amount
		}
		for job, n := range b.Round(cfg, now, reqs[id]) {
			if jobs[job] == 0 && rowsOf[job] == id {
				jobs[job] = g.Jobs[job]
			}
			jobs[job] += n
			if rowsOf[job] == id {
				g.Jobs[job] = jobs[job] // for workers that read the rows' grants alone
			}
			asked -= n
			changed = true
		}
		tot := ytstore.ThrottlerTotals{Limit: cfg.Limit, Periods: b.Periods, Granted: b.Granted, Pending: asked}
		if tot != g.Throttlers[id] {
			g.Throttlers[id] = tot
			changed = true
		}
	}
	return changed
}

// throttleRequests are the jobs' requests of a round, by throttler id, given the grants so
// far (see advanceThrottlers), and the jobs of the layout.
func throttleRequests(in *Input, g *ytstore.ThrottlerGrants) (map[string][]throttle.Request, map[string]bool) {
	top := in.Topology
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
		tc := comps[compOf[j.PartitionID]]
		st, ok := status[j.JobID]
		if !ok {
			continue
		}
		asked := st.ThrottleRequests
		if tc.RowsThrottler != "" && st.ThrottleRequests == nil && st.ThrottleRequested > 0 {
			asked = map[string]int64{tc.RowsThrottler: int64(st.ThrottleRequested)}
		}
		lag := st.SystemWatermark
		if lag == 0 {
			lag = math.MaxUint64
		}
		for _, id := range sortedKeys(asked) {
			if _, ok := top.Throttlers[id]; !ok {
				continue // a throttler the dynamic spec no longer has grants nothing
			}
			granted := g.ByThrottler[id][j.JobID]
			if id == tc.RowsThrottler && granted == 0 {
				granted = g.Jobs[j.JobID] // published by a leader that kept the rows' grants alone
			}
			if want := asked[id] - granted; want > 0 {
				class := ""
				switch id {
				case tc.RowsThrottler:
					class = tc.RowsThrottlerClass
				case tc.BytesThrottler:
					class = tc.BytesThrottlerClass
				}
				reqs[id] = append(reqs[id], throttle.Request{Job: j.JobID, Class: class, Amount: want, Lag: lag})
			}
		}
	}
	return reqs, live
}
