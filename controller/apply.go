package controller

import (
	"context"

	"go.ytsaurus.tech/library/go/core/log"

	"github.com/ytflow/yt-flow/ytstore"
)

// apply applies a decision in the order the protocol needs.
// Invariant: the leases of removed jobs are aborted before any job is
// written, so a replacement never overlaps a live predecessor
// (TestSimulation, TestLeaseAbortedWhenWorkerDies).
func (c *cycler) apply(ctx context.Context, d *Decision) error {
	for _, l := range d.AbortLeases {
		if err := c.st.AbortLease(ctx, l); err != nil {
			return err
		}
	}
	var started []string
	abortStarted := func() {
		for _, l := range started {
			if err := c.st.AbortLease(context.WithoutCancel(ctx), l); err != nil {
				c.lg.Warn("cannot abort unused lease; it expires", log.String("lease", l), log.Error(err))
			}
		}
	}
	for i := range d.Layout.PutJobs {
		j := &d.Layout.PutJobs[i]
		if j.LeaseID != "" {
			continue
		}
		lease, err := c.st.StartLease(ctx, j.JobID, c.cfg.LeaseTimeout)
		if err != nil {
			abortStarted()
			return err
		}
		j.LeaseID = lease
		started = append(started, lease)
	}
	if err := c.st.ApplyLayout(ctx, c.sess, d.Layout); err != nil {
		// Even if the outcome is unknown, aborting is safe: a written job with
		// an aborted lease is replaced next cycle.
		abortStarted()
		return err
	}
	for _, e := range d.Events {
		c.lg.Info(e)
	}
	c.log(ctx, d.Events...)
	return nil
}

// log appends messages to controller_logs; failures are only logged.
func (c *cycler) log(ctx context.Context, msgs ...string) {
	if len(msgs) == 0 {
		return
	}
	now := ytstore.Now()
	recs := make([]ytstore.LogRecord, len(msgs))
	for i, m := range msgs {
		recs[i] = ytstore.LogRecord{Time: now, Host: c.cfg.Address, Data: m}
	}
	if err := c.st.AppendControllerLog(ctx, recs...); err != nil {
		c.lg.Warn("cannot write controller_logs", log.Error(err))
	}
}

// pingConcurrency bounds the requests parallel runs at once.
const pingConcurrency = 32
