// An epoch's write set (runner.write) and its commit, with the resolution of an unknown
// outcome (runner.commit).

package job

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.ytsaurus.tech/library/go/core/log"
	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/ytstore"
)

type destMsgs struct {
	dest string
	msgs []flow.Message
}

// groupByDest groups outs by destination, in the order destinations first appear, into the
// buffers of groups (the runner's, reused from epoch to epoch: what an earlier call returned
// is overwritten); it returns the buffers and the first n of them hold the groups. An epoch
// has few destinations: they are found by a linear search.
func groupByDest(groups []destMsgs, outs []epoch.Out) (all []destMsgs, n int) {
	for i := range groups {
		clear(groups[i].msgs) // drop the payloads the previous epoch's groups point to
		groups[i] = destMsgs{msgs: groups[i].msgs[:0]}
	}
	for _, o := range outs {
		i := 0
		for i < n && groups[i].dest != o.Destination.ID {
			i++
		}
		if i == n {
			if n == len(groups) {
				groups = append(groups, destMsgs{})
			}
			groups[n].dest = o.Destination.ID
			n++
		}
		groups[i].msgs = append(groups[i].msgs, o.Message)
	}
	return groups, n
}

// write converts the core's commit into the store's write set. It returns the output store
// rows to hand to the sender after the commit and the sink sequence numbers it used up.
func (r *runner) write(c *epoch.Commit, b *epoch.Batch, token uint64) (*ytstore.EpochWrite, []ytstore.OutputRow, map[string]int64, error) {
	w := &ytstore.EpochWrite{PartitionID: r.job.PartitionID, Lease: r.job.LeaseID, Token: token, PartitionStates: map[string][]byte{}}
	// The dedup and state rows live in the runner's buffers, reused by the next epoch (w is
	// dead once the epoch ended); the output rows go on to the outbox.
	w.Dedup, w.States = slices.Grow(r.dedupRows[:0], len(c.Register)), r.stateRows[:0]
	defer func() { r.dedupRows, r.stateRows = w.Dedup, w.States }()
	w.OutputsAdd = make([]ytstore.OutputRow, 0, len(c.Stored))
	keys := keyArena{buf: make([]byte, 0, 24*(len(c.States)+len(c.Stored)))}
	for _, in := range c.Register {
		w.Dedup = append(w.Dedup, ytstore.DedupRow{DedupKey: r.dedupKey(in), SystemTimestamp: in.Message.SystemTimestamp, PayloadFingerprint: in.PayloadFingerprint})
	}
	for _, s := range c.States {
		if r.cfg.Source {
			w.PartitionStates[userStatePrefix+s.Name] = s.Value
			continue
		}
		w.States = append(w.States, ytstore.StateRow{ComputationID: r.comp.ID, KeyHash: s.KeyHash, Key: keys.add(s.Key), Name: s.Name, State: s.Value})
	}
	for _, t := range c.TimersFired {
		if t.Timer.Visit {
			continue // a key visitor's visit: its cursor, below, records it
		}
		row, err := r.timerRow(t, b.Now)
		if err != nil {
			return nil, nil, nil, err
		}
		w.TimersFired = append(w.TimersFired, row)
	}
	for _, t := range c.TimersSet {
		row, err := r.timerRow(t, b.Now)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("job %s: %w", r.job.JobID, err)
		}
		w.TimersSet = append(w.TimersSet, row)
	}
	seq := map[string]int64{}
	for _, o := range c.Stored {
		row := ytstore.OutputRow{
			PartitionID: r.job.PartitionID, Destination: o.Destination.ID, MessageID: o.Message.MessageID, StreamID: o.Message.StreamID,
			KeyHash: o.KeyHash, EventTimestamp: o.Message.EventTimestamp, SystemTimestamp: o.Message.SystemTimestamp,
		}
		if o.Destination.Kind == epoch.ToComputation {
			row.Key = keys.add(o.Message.Key)
		} else {
			n, ok := seq[o.Destination.ID]
			if !ok {
				n = r.seq[o.Destination.ID]
			}
			row.SequenceNumber = n
			seq[o.Destination.ID] = n + 1
		}
		w.OutputsAdd = append(w.OutputsAdd, row)
	}
	if err := r.encodeStored(w.OutputsAdd, c.Stored); err != nil {
		return nil, nil, nil, err
	}
	r.memRefs = handOver(c.Stored, w.OutputsAdd, [][]epoch.Out{c.Sync, c.BestEffort}, r.memRefs)
	// One output store row per destination and epoch (split at ytstore.MaxChunkMessages).
	ytstore.AssignChunks(w.OutputsAdd, token)
	for id, n := range seq {
		b, _ := yson.Marshal(n)
		w.PartitionStates[seqStatePrefix+id] = b
	}
	if err := r.writeVisitCursors(w.PartitionStates); err != nil {
		return nil, nil, nil, err
	}
	for id, fp := range r.topologyPending {
		w.PartitionStates[topologyStatePrefix+id] = []byte(fp)
	}
	for sp, off := range c.Offsets {
		pos, err := r.sourcePosition(sp.SourceID, off)
		if err != nil {
			return nil, nil, nil, err
		}
		w.PartitionStates[ytstore.SourceStatePrefix+sp.SourceID] = ytstore.SourcePosition{NextSeq: off, Position: pos}.Encode()
	}
	var n int
	r.groups, n = groupByDest(r.groups, c.Sync)
	r.beforeCommit = r.beforeCommit[:0]
	for _, g := range r.groups[:n] {
		if alo, ok := r.aloSinks[g.dest]; ok {
			r.beforeCommit = append(r.beforeCommit, aloWrite{dest: g.dest, sink: alo, msgs: g.msgs})
			continue
		}
		sw, err := r.syncSinks[g.dest].Write(g.msgs)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("job %s: %s: %w", r.job.JobID, g.dest, err)
		}
		w.Sinks = append(w.Sinks, sw)
	}
	return w, w.OutputsAdd, seq, nil
}

// keyArena encodes the keys of one epoch's rows into one buffer instead of one allocation
// per key; each encoding is its own full slice of it (an append to it cannot overwrite the
// next one).
type keyArena struct{ buf []byte }

func (a *keyArena) add(k flow.Key) []byte {
	start := len(a.buf)
	a.buf = epoch.AppendKey(a.buf, k)
	return a.buf[start:len(a.buf):len(a.buf)]
}

// encodeStored sets the payloads of rows (rows[i] is outs[i]'s) to those of outs encoded
// as storedPayloads encodes them (payloadEncoder).
func (r *runner) encodeStored(rows []ytstore.OutputRow, outs []epoch.Out) error {
	bad, err := r.payloads.encode(rows, outs)
	if err != nil {
		return r.payloadError(outs, bad, err)
	}
	return nil
}

// storedPayloads encodes the payloads of outs (YSON).
func (r *runner) storedPayloads(outs []epoch.Out) ([][]byte, error) {
	rows := make([]flow.Row, len(outs))
	for i, o := range outs {
		rows[i] = o.Message.Payload
	}
	payloads, bad, err := marshalPayloads(rows)
	if err != nil {
		return nil, r.payloadError(outs, bad, err)
	}
	return payloads, nil
}

// payloadError is the error of outs[bad]'s payload (bad < 0: of none in particular).
func (r *runner) payloadError(outs []epoch.Out, bad int, err error) error {
	if bad >= 0 {
		o := outs[bad].Message
		return fmt.Errorf("job %s: output %s on stream %s: payload: %w", r.job.JobID, o.MessageID, o.StreamID, err)
	}
	return fmt.Errorf("job %s: %w", r.job.JobID, err)
}

// committer is what the commit loop needs of the store (runner.commit; a swift source job also
// draws its tokens here). Tests wrap the real store to inject commit faults.
//
//   - CommitEpoch commits w in one tablet transaction whose prerequisite is the job's lease:
//     nil when it applied; ytstore.ErrLeaseLost when the lease (or the epoch's own tablet
//     transaction) is gone; ytstore.ErrCommitUnknown when the outcome is unknown;
//     ytstore.ErrNotApplied or any other error when it did not apply.
//   - TxAlive reports whether a master transaction (the lease) is alive.
//   - PartitionToken reads the token of the partition's last committed epoch (found false when
//     it never committed): it resolves an unknown outcome.
//   - GenerateTimestamp draws a fresh cluster timestamp: unique and increasing.
type committer interface {
	CommitEpoch(ctx context.Context, w *ytstore.EpochWrite) error
	PartitionToken(ctx context.Context, partitionID string) (token uint64, found bool, err error)
	GenerateTimestamp(ctx context.Context) (uint64, error)
	TxAlive(ctx context.Context, tx string) (bool, error)
}

// errNotApplied reports an epoch whose commit definitely did not apply: the runner drops
// the epoch and recomputes it from durable state (dedup, states) in the next iteration.
var errNotApplied = errors.New("epoch not applied")

// commit commits w once, resolving an unknown outcome by re-reading the partition token.
// It returns nil when the epoch is durable, an error wrapping ErrZombie when the lease is
// dead, and errNotApplied when the epoch did not apply.
func (r *runner) commit(ctx context.Context, w *ytstore.EpochWrite) error {
	err := r.commits.CommitEpoch(ctx, w)
	outcome := outcomeOf(err)
	if outcome == epoch.LeaseLost {
		// "No such transaction" may name the epoch's own tablet transaction (e.g. its commit
		// reply was lost and the retried request found it finished), not the lease: only a
		// lease that is really gone makes the job a zombie.
		// Invariant: a live lease never stops the job; the outcome is then resolved by the
		// partition token (TestCommitLeaseAliveRechecks).
		if alive, aerr := r.commits.TxAlive(ctx, w.Lease); aerr == nil && alive {
			outcome = epoch.Unknown
		}
	}
	next := epoch.AfterCommit(outcome)
	if next == epoch.Recheck {
		r.stats.unknown.Add(1)
	}
	backoff := 100 * time.Millisecond
	for next == epoch.Recheck {
		stored, found, rerr := r.commits.PartitionToken(ctx, r.job.PartitionID)
		if rerr == nil {
			// Invariant: an unknown outcome is resolved by the partition token, so an epoch
			// that applied is not applied twice (TestCommitUnknownRecheck).
			next = epoch.AfterRecheck(w.Token, stored, found)
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.log.Warn("commit outcome unknown; re-reading the partition token failed", log.Error(rerr))
		sleep(ctx, backoff)
		backoff = min(2*backoff, 2*time.Second)
	}
	switch next {
	case epoch.Proceed:
		return nil
	case epoch.Stop:
		// Invariant: a commit rejected by a dead lease stops the job at once; nothing else
		// is written (TestZombieCommitRejected, TestZombieJobStops).
		r.log.Warn("lease lost: job stops", log.Error(err))
		r.stats.fenced.Add(1)
		return fmt.Errorf("job %s: %w: %w", r.job.JobID, ErrZombie, err)
	}
	if err == nil {
		err = errors.New("the partition token does not match: the commit did not apply")
	}
	r.stats.notApplied.Add(1)
	return fmt.Errorf("job %s: %w: %w", r.job.JobID, errNotApplied, err)
}

func outcomeOf(err error) epoch.Outcome {
	switch {
	case err == nil:
		return epoch.Committed
	case errors.Is(err, ytstore.ErrNotApplied):
		return epoch.Rejected
	case errors.Is(err, ytstore.ErrLeaseLost):
		return epoch.LeaseLost
	case errors.Is(err, ytstore.ErrCommitUnknown):
		return epoch.Unknown
	}
	return epoch.Rejected
}
