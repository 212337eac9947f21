// Loading a job's durable state when it starts (runner.load), and the conversion of timers to
// and from their rows.

package job

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"sync"

	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/ytstore"
)

// stateLoader is what a job reads of the store when it starts (runner.load); the reads run
// concurrently.
//
//   - LoadPartitionStates returns the partition's states, name to YSON bytes (source offsets,
//     sink sequence numbers, a source job's user state).
//   - LoadTimers returns the computation's timers whose key hash lies in [lower, upper)
//     (upper 0 = 2^64).
//   - LoadOutputs returns the partition's output store rows still to deliver, ordered by
//     destination then message id.
//   - SystemWatermark returns the pipeline's @system_watermark (µs; 0 when never published).
//
// An error fails the job's start.
type stateLoader interface {
	LoadPartitionStates(ctx context.Context, partitionID string) (map[string][]byte, error)
	LoadTimers(ctx context.Context, computationID string, lower, upper uint64) ([]ytstore.TimerRow, error)
	LoadOutputs(ctx context.Context, partitionID string) ([]ytstore.OutputRow, error)
	SystemWatermark(ctx context.Context) (uint64, error)
}

// load restores the job's durable state: source offsets, sink sequence numbers, timers and
// the output store rows still to deliver.
func (r *runner) load(ctx context.Context) error {
	// The four reads are independent: they run concurrently (a job starts one round trip
	// later instead of four).
	var (
		wg                         sync.WaitGroup
		ps                         map[string][]byte
		timerRows                  []ytstore.TimerRow
		outs                       []ytstore.OutputRow
		published                  uint64
		psErr, tErr, outErr, wmErr error
	)
	wg.Go(func() { ps, psErr = r.loads.LoadPartitionStates(ctx, r.job.PartitionID) })
	if !r.cfg.Source {
		wg.Go(func() { timerRows, tErr = r.loads.LoadTimers(ctx, r.comp.ID, r.job.LowerKey, r.job.UpperKey) })
	}
	wg.Go(func() { outs, outErr = r.loads.LoadOutputs(ctx, r.job.PartitionID) })
	wg.Go(func() { published, wmErr = r.loads.SystemWatermark(ctx) })
	wg.Wait()
	if err := cmp.Or(psErr, tErr, outErr); err != nil {
		return err
	}
	if wmErr != nil {
		return fmt.Errorf("computation %s partition %s: read system watermark: %w", r.comp.ID, r.job.PartitionID, wmErr)
	}
	for _, s := range r.sources {
		if b, ok := ps[ytstore.SourceStatePrefix+s.id]; ok {
			p, err := ytstore.DecodeSourcePosition(b)
			if err != nil {
				return fmt.Errorf("partition %s: state %s%s: %w", r.job.PartitionID, ytstore.SourceStatePrefix, s.id, err)
			}
			s.offset, s.pos = p.NextSeq, p.Position
		}
	}
	for id := range r.asyncSinks {
		if b, ok := ps[seqStatePrefix+id]; ok {
			var n int64
			if err := yson.Unmarshal(b, &n); err != nil {
				return fmt.Errorf("partition %s: state %s%s: %w", r.job.PartitionID, seqStatePrefix, id, err)
			}
			r.seq[id] = n
		}
	}
	if err := r.loadVisitCursors(ps); err != nil {
		return err
	}
	if err := r.checkTopologies(ps, outs); err != nil {
		return err
	}
	for name, b := range ps {
		if user, ok := strings.CutPrefix(name, userStatePrefix); ok {
			r.partState[user] = b
		}
	}
	var timers []epoch.DueTimer
	for _, row := range timerRows {
		t, err := timerFromRow(row)
		if err != nil {
			return fmt.Errorf("computation %s: %w", r.comp.ID, err)
		}
		timers = append(timers, t)
	}
	r.timers = epoch.NewTimerSet(timers)
	r.pendingTimers.Store(int64(r.timers.Len()))
	r.outbox.add(outs)
	r.stampMu.Lock()
	r.lastStamp = max(r.lastStamp, published)
	r.stampMu.Unlock()
	r.startSwiftSources(published)
	r.loaded.Store(true)
	return nil
}

func timerFromRow(row ytstore.TimerRow) (epoch.DueTimer, error) {
	key, err := epoch.DecodeKey(row.Key)
	if err != nil {
		return epoch.DueTimer{}, fmt.Errorf("timer %s: key: %w", row.MessageID, err)
	}
	var payload flow.Row
	if len(row.Payload) > 0 {
		var err error
		if payload, err = decodePayload(row.Payload, nil); err != nil {
			return epoch.DueTimer{}, fmt.Errorf("timer %s: payload: %w", row.MessageID, err)
		}
	}
	return epoch.DueTimer{KeyHash: row.KeyHash, Timer: flow.Timer{
		StreamID: row.StreamID, Key: key, Trigger: row.TriggerTimestamp, Payload: payload,
		MessageID: row.MessageID, EventTimestamp: row.EventTimestamp,
	}}, nil
}

func (r *runner) timerRow(t epoch.DueTimer, systemTS uint64) (ytstore.TimerRow, error) {
	row := ytstore.TimerRow{
		ComputationID: r.comp.ID, KeyHash: t.KeyHash, Key: epoch.EncodeKey(t.Timer.Key), MessageID: t.Timer.MessageID,
		StreamID: t.Timer.StreamID, SystemTimestamp: systemTS, EventTimestamp: t.Timer.EventTimestamp, TriggerTimestamp: t.Timer.Trigger,
	}
	if t.Timer.Payload != nil {
		b, err := yson.Marshal(t.Timer.Payload)
		if err != nil {
			return row, fmt.Errorf("timer payload: %w", err)
		}
		row.Payload = b
	}
	return row, nil
}

// checkTopologies compares the topology fingerprint of each async sink that has one
// (connector.Topology) with the one kept in the partition state. A change is refused while
// the partition holds outputs for the sink (committed under the old one); without any, the
// new fingerprint is kept with the next commit (r.topologyPending).
//
// Invariant: outputs committed under one topology of a sink are never delivered along
// another (TestTopologyChangeRefusedWithBacklog).
func (r *runner) checkTopologies(ps map[string][]byte, outs []ytstore.OutputRow) error {
	for id, sink := range r.asyncSinks {
		t, ok := sink.(connector.Topology)
		if !ok {
			continue
		}
		fp := t.Topology()
		old, had := ps[topologyStatePrefix+id]
		if had && string(old) == fp {
			continue
		}
		pending := 0
		for i := range outs {
			if outs[i].Destination == sinkDestPrefix+id {
				pending++
			}
		}
		if had && pending > 0 {
			return fmt.Errorf("job %s: computation %s: sink %s: %w: %d outputs of partition %s wait for delivery along the old one (%s, now %s); restore the sink's old parameters until they are delivered (yt-flow status shows the backlog), then change them",
				r.job.JobID, r.comp.ID, id, connector.ErrTopologyChanged, pending, r.job.PartitionID, old, fp)
		}
		if r.topologyPending == nil {
			r.topologyPending = map[string]string{}
		}
		r.topologyPending[id] = fp
	}
	return nil
}
