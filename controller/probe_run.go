// The driver of dead-worker detection: a goroutine of the leader that connects to every live
// worker's transport endpoint each ProbePeriod and reports the workers deathWatch declares
// dead; the leader aborts their sessions and runs a cycle at once (lead).

package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"go.ytsaurus.tech/library/go/core/log"

	"github.com/ytflow/yt-flow/ytstore"
)

// probeDialTimeout bounds one connection attempt; an attempt that times out says nothing
// (ProbeUnknown): a host that is down is detected by the worker's session timeout.
const probeDialTimeout = 500 * time.Millisecond

// workerSet is one observation of the workers, handed from a cycle to the prober.
type workerSet struct {
	workers []ytstore.Worker
	alive   map[string]bool
}

// prober connects to the workers' endpoints. Its goroutine (run) owns the deathWatch; the
// leader hands it each cycle's workers (observe) and reads its verdicts (Dead).
type prober struct {
	period time.Duration
	watch  *deathWatch
	// latest holds the newest observation not yet taken by run (capacity 1: a newer one
	// replaces it).
	latest chan workerSet
	dead   chan ProbeTarget
	dial   func(ctx context.Context, addr string) ProbeOutcome
}

func newProber(period time.Duration, refusals int) *prober {
	return &prober{period: period, watch: newDeathWatch(refusals), latest: make(chan workerSet, 1), dead: make(chan ProbeTarget, 16), dial: dialOutcome}
}

// observe hands the workers of a cycle to the prober without blocking (nil p: no probing).
func (p *prober) observe(workers []ytstore.Worker, alive map[string]bool) {
	if p == nil {
		return
	}
	set := workerSet{workers: workers, alive: alive}
	for {
		select {
		case p.latest <- set:
			return
		default:
		}
		select {
		case <-p.latest: // drop the older one
		default:
		}
	}
}

// Dead delivers the registrations declared dead (nil p: never).
func (p *prober) Dead() <-chan ProbeTarget {
	if p == nil {
		return nil
	}
	return p.dead
}

// run probes every period until ctx ends; it returns after its dials have ended.
func (p *prober) run(ctx context.Context) error {
	tick := time.NewTicker(p.period)
	defer tick.Stop()
	var targets []ProbeTarget
	for {
		select {
		case <-ctx.Done():
			return nil
		case set := <-p.latest:
			targets = p.watch.Targets(set.workers, set.alive)
			continue
		case <-tick.C:
		}
		if len(targets) == 0 {
			continue
		}
		outcomes := make([]ProbeOutcome, len(targets))
		var wg sync.WaitGroup
		for i, t := range targets {
			wg.Add(1)
			go func() { defer wg.Done(); outcomes[i] = p.dial(ctx, t.Address) }()
		}
		wg.Wait()
		if ctx.Err() != nil {
			return nil
		}
		kept := targets[:0:0]
		for i, t := range targets {
			if !p.watch.Record(t, outcomes[i]) {
				kept = append(kept, t)
				continue
			}
			select {
			case p.dead <- t:
			case <-ctx.Done():
				return nil
			}
		}
		targets = kept
	}
}

// abortRefusing aborts the session of a worker whose endpoint refuses connections (the
// prober declared it dead). The cycle that follows sees the worker lost and removes its
// jobs, aborting their leases before any replacement is written (apply): a process that is
// not dead after all can commit nothing more under them, and registers again when it sees
// its session end.
//
// Invariant: a worker found dead by refused connections loses its session, its jobs' leases
// are aborted before their partitions are reassigned, and the old leases fence every commit
// (TestRefusingWorkerLosesLeases).
func (c *cycler) abortRefusing(ctx context.Context, t ProbeTarget) {
	if err := c.st.AbortSession(ctx, t.Session); err != nil {
		c.lg.Warn("worker refuses connections but its session cannot be aborted; waiting for its timeout",
			log.String("worker", t.WorkerID), log.String("session", t.Session), log.Error(err))
		return
	}
	msg := fmt.Sprintf("worker %s refuses connections at %s (%d attempts in a row): session %s aborted", t.WorkerID, t.Address, c.cfg.ProbeRefusals, t.Session)
	c.lg.Info(msg, log.String("worker", t.WorkerID), log.String("session", t.Session))
	c.log(ctx, msg)
}

// dialOutcome makes one TCP connection attempt to addr and closes it at once.
func dialOutcome(ctx context.Context, addr string) ProbeOutcome {
	d := net.Dialer{Timeout: probeDialTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		_ = conn.Close()
		return ProbeAccepted
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return ProbeRefused
	}
	return ProbeUnknown
}
