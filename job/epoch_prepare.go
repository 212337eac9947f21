// What an epoch reads before it plans (runner.prepare: its token, dedup hits, key states) and
// the invocation of the process function (runner.invoke).

package job

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.ytsaurus.tech/library/go/core/log"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/ytstore"
)

// epochReads is what an epoch reads of the store before it plans (runner.prepare), and what a
// swift source job begins its commit with. The calls of one epoch run concurrently.
//
//   - BeginEpochTx begins the epoch's tablet transaction for its commit (EpochWrite.Tx); the
//     caller owns it and releases it (EpochTx.Release) unless the commit used it. Its
//     StartTimestamp is 0 while the store does not know that it is a valid token.
//   - GenerateTimestamp draws a fresh cluster timestamp: unique, later than every one drawn
//     before (an epoch's token when the transaction gives none).
//   - LookupDedupRows returns one hit per key, in the order of keys: whether the dedup index
//     holds the message, and with which payload fingerprint.
//   - LoadStates returns every state row of the computation's keys with the given hashes; the
//     caller matches exact keys.
//   - LoadReplays returns the replayed dead letters of the job's key range (replay.go).
//
// An error means the read did not happen; the epoch is abandoned and recomputed.
type epochReads interface {
	BeginEpochTx(ctx context.Context) (*ytstore.EpochTx, error)
	GenerateTimestamp(ctx context.Context) (uint64, error)
	LookupDedupRows(ctx context.Context, keys []ytstore.DedupKey) ([]ytstore.DedupHit, error)
	LoadStates(ctx context.Context, computationID string, hashes []uint64) ([]ytstore.StateRow, error)
	replayReads
}

func (r *runner) dedupKey(in epoch.Input) ytstore.DedupKey {
	k := ytstore.DedupKey{ComputationID: r.comp.ID, KeyHash: epoch.KeyHash(in.Message.Key), MessageID: in.Message.MessageID, Compact: r.compact}
	if !r.compact { // the compact index keys by hash and message id only
		k.Key = epoch.EncodeKey(in.Message.Key)
	}
	return k
}

// prepared is what an epoch reads before it plans: its token, which inputs the dedup index
// holds (found[i] for b.Inputs[i]) and the states of its keys (encoded key -> name -> value).
type prepared struct {
	token    uint64
	tokenErr error
	// tx is the epoch's tablet transaction, begun alongside the reads (nil when beginning it
	// failed: the commit then begins its own). Released when the epoch ends.
	tx *ytstore.EpochTx

	found    []ytstore.DedupHit
	dedupErr error

	states    map[string]map[string][]byte
	statesErr error
	// external are the rows of the external states for the epoch's keys.
	external     map[string]map[string]flow.Row
	externalRows map[string]map[string][]flow.Row
	externalErr  error
	// joined are the states the state joiners read for the epoch's keys.
	joined    *joinedEpoch
	joinedErr error
	// loadedHashes are the key hashes read from the table (not cached), with their rows.
	loadedHashes []uint64
	loadedRows   []ytstore.StateRow
}

// prepare begins the epoch's tablet transaction and takes its token (the transaction's start
// timestamp, or a fresh timestamp), looks its inputs up in the dedup index and loads the
// states of every key of its inputs and timers, concurrently.
func (r *runner) prepare(ctx context.Context, b *epoch.Batch) *prepared {
	if r.keyStates == nil {
		r.keyStates, r.keyHashes = map[string]map[string][]byte{}, map[uint64]bool{}
	}
	clear(r.keyStates) // the last epoch's, dead
	pre := &prepared{states: r.keyStates}
	var wg sync.WaitGroup
	wg.Go(func() {
		tx, err := r.reads.BeginEpochTx(ctx)
		if err != nil {
			r.log.Debug("epoch: beginning the tablet transaction ahead failed; the commit begins one", log.Error(err))
		} else {
			pre.tx = tx
			// The token is the transaction's start timestamp when its id tells it (as
			// Flow's partition_transactions row holds last_transaction_start_timestamp):
			// unique, and later than every token drawn before, like a fresh timestamp.
			if start := tx.StartTimestamp(); start != 0 {
				pre.token = start
				return
			}
		}
		pre.token, pre.tokenErr = r.reads.GenerateTimestamp(ctx)
	})
	if r.cfg.Dedup && len(b.Inputs) > 0 {
		// Most epochs look nothing up (every input is fresh): the buffers are made for the
		// first input that needs a lookup.
		var keys []ytstore.DedupKey
		var at []int // b.Inputs index of keys[i]
		for i := range b.Inputs {
			if r.fresh == nil || r.fresh.needLookup(&b.Inputs[i]) {
				if keys == nil {
					keys, at = make([]ytstore.DedupKey, 0, len(b.Inputs)-i), make([]int, 0, len(b.Inputs)-i)
				}
				keys = append(keys, r.dedupKey(b.Inputs[i]))
				at = append(at, i)
			}
		}
		if skipped := len(b.Inputs) - len(keys); skipped > 0 {
			r.stats.lookupsSkipped.Add(int64(skipped))
		}
		if len(keys) > 0 {
			pre.found = make([]ytstore.DedupHit, len(b.Inputs)) // nil: nothing found
			wg.Go(func() {
				hits, err := r.reads.LookupDedupRows(ctx, keys)
				if err != nil {
					pre.dedupErr = err
					return
				}
				for i, h := range hits {
					pre.found[at[i]] = h
				}
			})
		}
	}
	if !r.cfg.Source && !r.cfg.Swift {
		seen := r.keyHashes
		clear(seen)
		var hashes []uint64
		add := func(h uint64) {
			if !seen[h] {
				seen[h] = true
				hashes = append(hashes, h)
			}
		}
		for _, t := range b.Timers {
			add(t.KeyHash)
		}
		for _, in := range b.Inputs {
			add(epoch.KeyHash(in.Message.Key))
		}
		missing := hashes[:0:0]
		for _, h := range hashes {
			if !r.stateCache.get(h, pre.states, r.shareStates) {
				missing = append(missing, h)
			}
		}
		if len(r.comp.ExternalStates) > 0 {
			wg.Go(func() { pre.external, pre.externalRows, pre.externalErr = r.loadExternal(ctx, b, time.Now()) })
		}
		if len(r.comp.StateJoinerSpecs) > 0 {
			wg.Go(func() { pre.joined, pre.joinedErr = r.loadJoined(ctx, r.reads, b, time.Now()) })
		}
		if len(missing) > 0 {
			wg.Go(func() {
				rows, err := r.reads.LoadStates(ctx, r.comp.ID, missing)
				if err != nil {
					pre.statesErr = err
					return
				}
				for _, row := range rows {
					k := string(row.Key)
					if pre.states[k] == nil {
						pre.states[k] = map[string][]byte{}
					}
					pre.states[k][row.Name] = row.State
				}
				pre.loadedHashes, pre.loadedRows = missing, rows
			})
		}
	}
	wg.Wait()
	if pre.statesErr == nil {
		r.stateCache.loaded(pre.loadedHashes, pre.loadedRows)
	}
	return pre
}

// invoke calls the process function per group of the plan; states are the loaded states of
// (at least) the plan's keys.
func (r *runner) invoke(plan *epoch.Plan, states map[string]map[string][]byte, now uint64) ([]*flow.Result, error) {
	// A source job invokes once per row with the partition's state; later rows of the epoch
	// see the writes of earlier ones.
	var cur map[string][]byte
	if r.cfg.Source {
		cur = make(map[string][]byte, len(r.partState))
		for k, v := range r.partState {
			cur[k] = v
		}
	}
	// The invocations and results of one epoch live in the runner's buffers, reused by the
	// next epoch (see releaseResults).
	if cap(r.invs) < len(plan.Groups) {
		// A quarter more than needed: epochs vary in size, and each new largest one would
		// otherwise make both arrays again.
		n := len(plan.Groups) + len(plan.Groups)/4
		r.invs = make([]flow.Invocation, n)
		r.results = make([]*flow.Result, n)
	}
	results := r.results[:len(plan.Groups)]
	invs := r.invs[:len(plan.Groups)]
	var keyBuf []byte
	for i, g := range plan.Groups {
		if g.Empty() {
			// Isolate set all of it aside: nothing to invoke.
			results[i] = nil
			continue
		}
		inv := &invs[i]
		*inv = flow.Invocation{Key: g.Key, Timers: g.Timers, Messages: g.Messages, Parameters: r.params, Now: now, Quota: r.quotaFn}
		if r.cfg.Source {
			inv.State = cur
		} else {
			keyBuf = epoch.AppendKey(keyBuf[:0], g.Key)
			inv.State = states[string(keyBuf)]
			if r.extLoaded != nil {
				inv.External, keyBuf = externalOf(r.extLoaded, g.Key, keyBuf)
			}
			if r.extSubKeys != nil {
				inv.ExternalSubKeys = r.extSubKeys
				inv.ExternalRows, keyBuf = externalRowsOf(r.extRowsLoaded, g.Key, keyBuf)
			}
			if r.joined != nil {
				inv.Joined = r.joined
			}
		}
		res, err := r.fn.Invoke(inv)
		if err != nil {
			r.releaseResults(results[:i])
			ie := &invokeError{Key: g.Key, err: err}
			if len(g.Messages) > 0 {
				ie.MessageID = g.Messages[0].MessageID
				ie.Messages = len(g.Messages)
			}
			if row := g.SourceRow(); row != nil {
				// Invariant: a failing source row is named by queue path, tablet and row
				// offset (TestSourceRowErrorNamesQueueRow).
				ie.where = fmt.Sprintf("job %s: computation %s: source %s: %s row offset %d: process function %s",
					r.job.JobID, r.comp.ID, row.SourceID, r.sourceName(row.SourceID), row.Offset, r.comp.ProcessingFunction)
				return nil, ie
			}
			ie.where = fmt.Sprintf("job %s: computation %s: key %v: process function %s", r.job.JobID, r.comp.ID, g.Key, r.comp.ProcessingFunction)
			return nil, ie
		}
		if r.cfg.Source && res != nil && len(res.StateWrites) > 0 {
			// Copy on write: earlier results keep the state they saw.
			next := make(map[string][]byte, len(cur))
			for k, v := range cur {
				next[k] = v
			}
			for k, v := range res.StateWrites {
				if v == nil {
					delete(next, k)
				} else {
					next[k] = v
				}
			}
			cur = next
		}
		results[i] = res
	}
	return results, nil
}

// releaseResults releases the results of an epoch (flow.Result.Release) once its write set is
// built from them, and drops what the runner's invocation buffers point to.
func (r *runner) releaseResults(results []*flow.Result) {
	for i, res := range results {
		res.Release()
		results[i] = nil
	}
	clear(r.invs[:min(len(results), len(r.invs))])
}

// invokeError is a failed invocation of the process function: an error it returned or a
// panic it raised (flow recovers it into a *flow.PanicError carrying the stack).
type invokeError struct {
	// Key is the key of the failing group; MessageID the id of its first message ("" for a
	// group of timers only) and Messages how many messages the group had.
	Key       flow.Key
	MessageID string
	Messages  int
	where     string // job, computation, source row or key and function, for Error
	err       error
}

func (e *invokeError) Error() string { return e.where + ": " + e.err.Error() }
func (e *invokeError) Unwrap() error { return e.err }

// summary is the error without a panic's stack: what job_status shows (the log has the stack).
func (e *invokeError) summary() string {
	var pe *flow.PanicError
	if errors.As(e.err, &pe) {
		return fmt.Sprintf("%s: %v: %v", e.where, flow.ErrUserPanic, pe.Value)
	}
	return e.Error()
}

// stack is the stack of a panic, nil for a returned error.
func (e *invokeError) stack() []byte {
	var pe *flow.PanicError
	if errors.As(e.err, &pe) {
		return pe.Stack
	}
	return nil
}
