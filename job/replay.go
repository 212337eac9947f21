// Replayed dead letters: a job of a transform computation reads the letters `yt-flow
// dead-letters replay` put into the output store's replay partitions for its key range, and
// processes them as inputs (messages) or due timers, deleting each one's replay row in the
// commit of the epoch that processes it.

package job

import (
	"context"
	"fmt"
	"time"

	"go.ytsaurus.tech/library/go/core/log"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/ytstore"
)

// replayPollPeriod is how often a job reads the replay partitions (one select of a few
// rows: usually none).
const replayPollPeriod = time.Second

// replayReads reads the replayed letters of a computation whose key hash lies in
// [lower, upper) (upper 0 = 2^64): ytstore.Store.LoadReplays.
type replayReads interface {
	LoadReplays(ctx context.Context, computationID string, lower, upper uint64) (messages, timers []ytstore.OutputRow, err error)
}

// replayFeed holds the replayed letters a job read and has not committed yet. Owned by the
// runner's goroutine.
type replayFeed struct {
	polled time.Time
	inputs []epoch.Input
	timers []epoch.DueTimer
	// rows maps the id of each held message or timer to its replay row.
	rows map[string]ytstore.OutputKey
}

// readsReplays says whether the job takes replayed letters: transform computations (their
// messages come from the output store); a source or swift computation's letters are not
// replayed (`dead-letters replay` refuses them).
func (r *runner) readsReplays() bool { return !r.cfg.Source && !r.cfg.Swift }

// pollReplays reads the replay partitions once per replayPollPeriod and holds the letters
// not held yet. A failed read is logged and retried at the next poll.
func (r *runner) pollReplays(ctx context.Context, rr replayReads) {
	if !r.readsReplays() || time.Since(r.replay.polled) < replayPollPeriod {
		return
	}
	r.replay.polled = time.Now()
	msgs, timers, err := rr.LoadReplays(ctx, r.comp.ID, r.job.LowerKey, r.job.UpperKey)
	if err != nil {
		r.log.Warn("read replayed dead letters failed", log.Error(err))
		return
	}
	if r.replay.rows == nil {
		r.replay.rows = map[string]ytstore.OutputKey{}
	}
	for i := range msgs {
		m := &msgs[i]
		if _, ok := r.replay.rows[m.MessageID]; ok {
			continue
		}
		key, payload, err := replayedKeyPayload(m)
		if err != nil {
			r.log.Warn("replayed dead letter cannot be decoded; left in the replay partition", log.String("message_id", m.MessageID), log.Error(err))
			continue
		}
		r.replay.rows[m.MessageID] = m.StoreKey()
		// Born stays 0 (unknown): the dedup index is always consulted.
		r.replay.inputs = append(r.replay.inputs, epoch.Input{Message: flow.Message{
			StreamID: m.StreamID, MessageID: m.MessageID, Key: key, Payload: payload,
			EventTimestamp: m.EventTimestamp, SystemTimestamp: m.SystemTimestamp,
		}})
	}
	for i := range timers {
		t := &timers[i]
		if _, ok := r.replay.rows[t.MessageID]; ok {
			continue
		}
		key, payload, err := replayedKeyPayload(t)
		if err != nil {
			r.log.Warn("replayed dead timer cannot be decoded; left in the replay partition", log.String("message_id", t.MessageID), log.Error(err))
			continue
		}
		r.replay.rows[t.MessageID] = t.StoreKey()
		r.replay.timers = append(r.replay.timers, epoch.DueTimer{KeyHash: t.KeyHash, Timer: flow.Timer{
			StreamID: t.StreamID, Key: key, Trigger: uint64(t.SequenceNumber), Payload: payload,
			MessageID: t.MessageID, EventTimestamp: t.EventTimestamp,
		}})
	}
}

func replayedKeyPayload(m *ytstore.OutputRow) (flow.Key, flow.Row, error) {
	key, err := epoch.DecodeKey(m.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("key: %w", err)
	}
	var payload flow.Row
	if len(m.Payload) > 0 {
		if payload, err = decodePayload(m.Payload, nil); err != nil {
			return nil, nil, fmt.Errorf("payload: %w", err)
		}
	}
	return key, payload, nil
}

// addReplays adds the held replayed letters to the batch b (at most limit inputs and limit
// timers in all) and returns the replay rows of those added: the epoch deletes them in its
// commit. Replayed messages join after the inbox's, so they fall outside per-key order.
func (r *runner) addReplays(b *epoch.Batch, limit int) []ytstore.OutputKey {
	if len(r.replay.inputs) == 0 && len(r.replay.timers) == 0 {
		return nil
	}
	var keys []ytstore.OutputKey
	for _, in := range r.replay.inputs {
		if len(b.Inputs) >= limit {
			break
		}
		b.Inputs = append(b.Inputs, in)
		keys = append(keys, r.replay.rows[in.Message.MessageID])
	}
	for _, t := range r.replay.timers {
		if len(b.Timers) >= limit {
			break
		}
		b.Timers = append(b.Timers, t)
		keys = append(keys, r.replay.rows[t.Timer.MessageID])
	}
	return keys
}

// replaysCommitted forgets the replayed letters an applied epoch processed (their replay
// rows are deleted by its commit) and counts them.
func (r *runner) replaysCommitted(keys []ytstore.OutputKey) {
	if len(keys) == 0 {
		return
	}
	gone := make(map[ytstore.OutputKey]bool, len(keys))
	for _, k := range keys {
		gone[k] = true
	}
	ins := r.replay.inputs[:0]
	for _, in := range r.replay.inputs {
		if k := r.replay.rows[in.Message.MessageID]; gone[k] {
			delete(r.replay.rows, in.Message.MessageID)
			continue
		}
		ins = append(ins, in)
	}
	clear(r.replay.inputs[len(ins):])
	r.replay.inputs = ins
	timers := r.replay.timers[:0]
	for _, t := range r.replay.timers {
		if k := r.replay.rows[t.Timer.MessageID]; gone[k] {
			delete(r.replay.rows, t.Timer.MessageID)
			continue
		}
		timers = append(timers, t)
	}
	clear(r.replay.timers[len(timers):])
	r.replay.timers = timers
	r.stats.replayed.Add(int64(len(keys)))
	r.log.Info("replayed dead letters processed", log.Int("count", len(keys)), log.Int64("replayed", r.stats.replayed.Load()))
}
