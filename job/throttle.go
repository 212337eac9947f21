// Distributed throttling (dynamic_spec throttlers): a job draws from the throttlers its
// computation names for its input rows (input_rows_throttler_id) and input bytes
// (input_bytes_throttler_id), and from those its process function asks quota of
// (flow.Context.AcquireQuota). For each it keeps an account: the units it took and what it
// asks for beyond them. It reports the totals it asks for in job_status (throttle_requests;
// the rows also in throttle_requested) and takes, per epoch, at most what the controller
// granted it in all (@throttler_grants) less what it took.

package job

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
)

// quotaAccount is a job's account with one throttler.
type quotaAccount struct {
	// taken counts the units the job took in all; prefetch is what the automatic input
	// throttling asks for beyond them, waiting what AcquireQuota calls wait for.
	taken, prefetch, waiting atomic.Int64
	// waitNanos is the time epochs and AcquireQuota calls spent waiting for a grant;
	// blockedSince (ns, 0: not blocked) is when the epochs of the job started waiting.
	waitNanos, blockedSince atomic.Int64
	// calls counts the units AcquireQuota calls took since the last epoch started
	// (noteQuotaEpoch).
	calls atomic.Int64
	// mu serializes AcquireQuota's check-and-take.
	mu sync.Mutex
}

// noteQuotaEpoch sets, as an epoch starts, what the job asks for ahead from the throttlers its
// process function takes quota of (not those of its input rows or bytes): while it has input
// waiting, twice what the calls took since the last epoch started, so that the next epoch's
// calls find their units granted instead of each waiting for a controller round (Flow's
// prefetch).
func (r *runner) noteQuotaEpoch() {
	busy := r.inbox.len() > 0 || r.sourcesOpen()
	for id, a := range r.accounts() {
		if id == r.dyn.InputRowsThrottlerID || id == r.dyn.InputBytesThrottlerID {
			continue
		}
		used := a.calls.Swap(0)
		if busy {
			a.prefetch.Store(2 * used)
		} else {
			a.prefetch.Store(0)
		}
	}
}

// account returns the job's account with throttler id, created on first use.
func (r *runner) account(id string) *quotaAccount {
	r.quotaMu.Lock()
	defer r.quotaMu.Unlock()
	if r.quotas == nil {
		r.quotas = map[string]*quotaAccount{}
	}
	a := r.quotas[id]
	if a == nil {
		a = &quotaAccount{}
		r.quotas[id] = a
	}
	return a
}

// accounts returns the job's accounts by throttler id.
func (r *runner) accounts() map[string]*quotaAccount {
	r.quotaMu.Lock()
	defer r.quotaMu.Unlock()
	out := make(map[string]*quotaAccount, len(r.quotas))
	for id, a := range r.quotas {
		out[id] = a
	}
	return out
}

// throttled reports whether the job's input rows draw from a distributed throttler: its
// computation names one and the pipeline's job_status can carry the requests (a pipeline of an
// older version cannot: its jobs are not throttled).
func (r *runner) throttled() bool {
	return r.dyn.InputRowsThrottlerID != "" && r.w.throttling.Load()
}

// bytesThrottled reports whether the job's input bytes draw from a distributed throttler (the
// pipeline's job_status must carry throttle_requests).
func (r *runner) bytesThrottled() bool {
	return r.dyn.InputBytesThrottlerID != "" && r.w.throttlingAll.Load()
}

// available is how many units of throttler id the job may take now: its grant in all less
// what it took (never negative).
func (r *runner) available(id string) int64 {
	g := r.w.throttlerGrants.Load()
	granted := g.Granted(id, r.job.JobID)
	if g != nil && g.ByThrottler == nil && id == r.dyn.InputRowsThrottlerID {
		granted = g.Jobs[r.job.JobID] // a leader of an older version grants the rows alone
	}
	return max(granted-r.account(id).taken.Load(), 0)
}

// throttleAvailable is how many input rows the job may take now.
func (r *runner) throttleAvailable() int {
	return int(r.available(r.dyn.InputRowsThrottlerID))
}

// noteThrottled records the input rows and bytes the epoch took at now and what the job asks
// for next: while it has input waiting (or open sources), two batches beyond what it took (of
// rows: max_rows_per_batch; of bytes: the larger of the epoch's and 64 KiB), so that a grant is
// there when the next epoch needs it. An epoch that took nothing for want of a grant starts
// (or continues) the accounts' wait; one that took input ends it.
//
// Invariant: a throttled job never takes more input rows than the controller granted it, nor
// more input bytes than granted plus one message or one source batch (its next epochs wait
// until the grants cover it), and the controller never grants more than limit × the elapsed
// periods (TestRoundNeverGrantsMoreThanRefilled, TestInboxTakeBytes, e2e
// TestThrottlerGrantsWithinLimit, TestThrottlerBytesAndQuotaWithinLimit).
func (r *runner) noteThrottled(rows int, bytes int64, limit int, held bool, now time.Time) {
	busy := r.inbox.len() > 0 || r.sourcesOpen()
	note := func(id string, taken, ask int64) {
		a := r.account(id)
		a.taken.Add(taken)
		if busy {
			a.prefetch.Store(ask)
		} else {
			a.prefetch.Store(0)
		}
		switch since := a.blockedSince.Load(); {
		case held && busy && since == 0:
			a.blockedSince.Store(now.UnixNano())
		case !(held && busy) && since != 0:
			a.waitNanos.Add(now.UnixNano() - since)
			a.blockedSince.Store(0)
		}
	}
	if r.throttled() {
		note(r.dyn.InputRowsThrottlerID, int64(rows), 2*int64(limit))
	}
	if r.bytesThrottled() {
		note(r.dyn.InputBytesThrottlerID, bytes, 2*max(bytes, 64<<10))
	}
}

// rowsTaken counts the input rows the job took from its input rows throttler.
func (r *runner) rowsTaken() int64 {
	if r.dyn.InputRowsThrottlerID == "" {
		return 0
	}
	return r.account(r.dyn.InputRowsThrottlerID).taken.Load()
}

// throttleRequests are the units the job asks for in all, by throttler id
// (job_status.throttle_requests), and of them the input rows (throttle_requested).
func (r *runner) throttleRequests() (map[string]int64, int64) {
	var out map[string]int64
	for id, a := range r.accounts() {
		if out == nil {
			out = map[string]int64{}
		}
		out[id] = a.taken.Load() + a.prefetch.Load() + a.waiting.Load()
	}
	var rows int64
	if r.throttled() {
		rows = out[r.dyn.InputRowsThrottlerID]
	}
	if !r.w.throttlingAll.Load() {
		out = nil
	}
	return out, rows
}

// acquireQuota is the job's flow.QuotaFunc: it asks throttler id for amount units and waits
// until the job's grants cover them, then takes them. Units taken stay taken when the epoch
// is not applied: a retried invocation asks again.
func (r *runner) acquireQuota(ctx context.Context, id string, amount int64) error {
	if amount <= 0 {
		return nil
	}
	if _, ok := r.dynThrottlers()[id]; !ok || !r.w.throttlingAll.Load() {
		return fmt.Errorf("throttler %q: %w", id, flow.ErrNoThrottler)
	}
	a := r.account(id)
	a.waiting.Add(amount)
	defer a.waiting.Add(-amount)
	r.w.quotaWaiters.Add(1) // the worker reads the grants at every poll meanwhile
	defer r.w.quotaWaiters.Add(-1)
	start := time.Now()
	defer func() { a.waitNanos.Add(int64(time.Since(start))) }()
	r.w.wakeStatus() // report the request now, not at the next status period
	for {
		changed := r.w.grantsChanged()
		a.mu.Lock()
		if r.available(id) >= amount {
			a.taken.Add(amount)
			a.calls.Add(amount)
			a.mu.Unlock()
			return nil
		}
		a.mu.Unlock()
		select {
		case <-ctx.Done():
			return fmt.Errorf("throttler %q: wait for %d units: %w", id, amount, ctx.Err())
		case <-r.inbox.stopped:
			return fmt.Errorf("throttler %q: wait for %d units: the job stops", id, amount)
		case <-changed:
		}
	}
}

// dynThrottlers are the throttlers of the pipeline's dynamic spec.
func (r *runner) dynThrottlers() map[string]bool {
	out := map[string]bool{}
	if d := r.w.dynSeen.Load(); d != nil && d.spec != nil {
		for id := range d.spec.ThrottlerSpecs {
			out[id] = true
		}
	}
	return out
}

// rowBytes is the size of a source row as the bytes throttler counts it: its YSON encoding.
func rowBytes(row flow.Row) int64 {
	b, err := yson.Marshal(map[string]any(row))
	if err != nil {
		return 0
	}
	return int64(len(b))
}

// inputBytes is the size of inputs as received (epoch.Input.Bytes).
func inputBytes(ins []epoch.Input) int64 {
	var n int64
	for _, in := range ins {
		n += int64(in.Bytes)
	}
	return n
}

// ThrottlerStats are one job's figures with one throttler, as served on /stats.
type ThrottlerStats struct {
	// Taken counts the units the job took; Requested the units it asks for and was not
	// granted yet; WaitSeconds the time its epochs and AcquireQuota calls waited for a grant.
	Taken       int64   `json:"taken"`
	Requested   int64   `json:"requested"`
	WaitSeconds float64 `json:"wait_seconds"`
}

// throttlerStats are the job's figures by throttler id (nil for none).
func (r *runner) throttlerStats() map[string]ThrottlerStats {
	accts := r.accounts()
	if len(accts) == 0 {
		return nil
	}
	ids := make([]string, 0, len(accts))
	for id := range accts {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	g := r.w.throttlerGrants.Load()
	out := make(map[string]ThrottlerStats, len(ids))
	for _, id := range ids {
		a := accts[id]
		wait := a.waitNanos.Load()
		if since := a.blockedSince.Load(); since != 0 {
			wait += time.Now().UnixNano() - since
		}
		asked := a.taken.Load() + a.prefetch.Load() + a.waiting.Load()
		out[id] = ThrottlerStats{Taken: a.taken.Load(), Requested: max(asked-g.Granted(id, r.job.JobID), 0), WaitSeconds: float64(wait) / 1e9}
	}
	return out
}
