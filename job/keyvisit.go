// Key visitors (key_visitor_streams): a keyed job visits every key of its range that has
// state (internal, or a row of an external state named in external_names: keyvisit_ext.go), once per pass of each key visitor stream, a pass per period (epoch.PlanVisits). The
// visits ride in the epoch as due timers marked Visit (flow.Process.OnVisit handles them); the
// stream's cursor (epoch.VisitCursor) is a partition state written by the commit that holds
// the visits it moved past, so a restart continues the pass where the last commit left it.

package job

import (
	"context"
	"fmt"
	"sort"

	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytstore"
)

// visitStatePrefix names a key visitor stream's cursor among the partition states.
const visitStatePrefix = "key_visitor/"

// stateScanner reads the keys that have state: ytstore.Store.ScanStateKeys (keys of one of
// names with a hash in [from, to), to 0 = 2^64, at most limit state rows; next is where the
// following scan starts). An error means nothing was read; the epoch visits nothing.
type stateScanner interface {
	ScanStateKeys(ctx context.Context, computationID string, names []string, from, to uint64, limit int) ([]ytstore.StateKey, uint64, error)
}

// keyVisitor is one key visitor stream of a keyed job.
type keyVisitor struct {
	spec *spec.KeyVisitor
	// cur is the cursor as committed (or advanced over keys without visits); started is false
	// before the partition has one.
	cur     epoch.VisitCursor
	started bool
	// pending is the cursor the epoch in progress moves to, applied once its commit applied.
	pending *epoch.VisitCursor
}

// newKeyVisitors returns the key visitors of a keyed computation (nil for none).
func newKeyVisitors(comp *spec.Computation) []*keyVisitor {
	ids := make([]string, 0, len(comp.KeyVisitors))
	for id := range comp.KeyVisitors {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var out []*keyVisitor
	for _, id := range ids {
		out = append(out, &keyVisitor{spec: comp.KeyVisitors[id]})
	}
	return out
}

// loadVisitCursors restores the cursors from the partition's states.
func (r *runner) loadVisitCursors(ps map[string][]byte) error {
	for _, v := range r.visitors {
		b, ok := ps[visitStatePrefix+v.spec.ID]
		if !ok {
			continue
		}
		if err := yson.Unmarshal(b, &v.cur); err != nil {
			return fmt.Errorf("partition %s: state %s%s: %w", r.job.PartitionID, visitStatePrefix, v.spec.ID, err)
		}
		v.started = true
	}
	return nil
}

// visitRange is the job's key hash range.
func (r *runner) visitRange() epoch.VisitRange {
	return epoch.VisitRange{Lo: r.job.LowerKey, Hi: r.job.UpperKey}
}

// addVisits adds to b the epoch's visits, at most limit over all key visitor streams, and sets
// each stream's pending cursor. upstreamDone starts the final pass. A failed scan is noted and
// the stream visits nothing this epoch.
func (r *runner) addVisits(ctx context.Context, b *epoch.Batch, limit int, upstreamDone bool) {
	rng := r.visitRange()
	for _, v := range r.visitors {
		v.pending = nil
		if limit <= 0 {
			return
		}
		dyn := spec.DefaultDynamicKeyVisitor()
		if d := r.dyn.KeyVisitorStreams[v.spec.ID]; d != nil {
			dyn = *d
		}
		period := uint64(dyn.Period.Microseconds())
		cur, scan, ok := epoch.PlanVisits(v.cur, v.started, b.Now, period, rng, upstreamDone)
		if !ok {
			v.cur, v.started = cur, true // a new pass without keys yet: nothing to commit
			continue
		}
		to := scan.To
		if scan.ToEnd {
			to = rng.Hi
		}
		keys, next, err := r.scanVisitKeys(ctx, v, scan.From, to, dyn.MaxScanRowsPerIteration)
		if err != nil {
			r.noteProblem("key visitor "+v.spec.ID+": scan the states", err)
			continue
		}
		if n := min(limit, dyn.BufferRowLimit); len(keys) > n {
			// Whole hashes only: the next scan starts at the first hash left out (a single hash
			// with more keys than n is visited whole).
			cut := n
			for cut > 0 && keys[cut].KeyHash == keys[cut-1].KeyHash {
				cut--
			}
			if cut == 0 {
				for cut = n; cut < len(keys) && keys[cut].KeyHash == keys[0].KeyHash; cut++ {
				}
			}
			if cut < len(keys) {
				keys, next = keys[:cut], keys[cut].KeyHash
			}
		}
		after := epoch.AdvanceVisits(cur, scan, next, rng)
		if len(keys) == 0 {
			v.cur, v.started = after, true // no visit depends on it: kept in memory only
			continue
		}
		ts := epoch.VisitEventTime(cur, b.Now, period, rng)
		for i, k := range keys {
			key, err := epoch.DecodeKey(k.Key)
			if err != nil {
				r.noteProblem("key visitor "+v.spec.ID, fmt.Errorf("state key of hash %d: %w", k.KeyHash, err))
				return
			}
			b.Timers = append(b.Timers, epoch.DueTimer{KeyHash: k.KeyHash, Timer: flow.Timer{
				StreamID: v.spec.ID, Key: key, Trigger: cur.Start, Pass: cur.Pass, Visit: true, EventTimestamp: ts,
				MessageID: fmt.Sprintf("visit/%s/%s/%d/%x/%d", v.spec.ID, r.job.PartitionID, cur.Pass, k.KeyHash, i),
			}})
		}
		r.stats.visits.Add(int64(len(keys)))
		limit -= len(keys)
		v.pending = &after
	}
}

// writeVisitCursors adds the pending cursors to the epoch's partition states.
func (r *runner) writeVisitCursors(states map[string][]byte) error {
	for _, v := range r.visitors {
		if v.pending == nil {
			continue
		}
		b, err := yson.Marshal(v.pending)
		if err != nil {
			return fmt.Errorf("key visitor %s: encode the cursor: %w", v.spec.ID, err)
		}
		states[visitStatePrefix+v.spec.ID] = b
	}
	return nil
}

// visitsCommitted applies the pending cursors after their commit applied; visitsAbandoned
// drops them (the next epoch scans again from the committed cursors).
func (r *runner) visitsCommitted() {
	for _, v := range r.visitors {
		if v.pending != nil {
			v.cur, v.started, v.pending = *v.pending, true, nil
		}
	}
}

func (r *runner) visitsAbandoned() {
	for _, v := range r.visitors {
		v.pending = nil
	}
}

// visitsPending counts the key visitor streams whose final pass is not done: a completing
// job holds them in flight, so that it reports drained only after visiting every key once more.
func (r *runner) visitsPending() int64 {
	var n int64
	for _, v := range r.visitors {
		if !v.cur.Final || !v.cur.Done {
			n++
		}
	}
	return n
}
