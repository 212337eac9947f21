// The commit half of the core: the write set of one epoch built from its invocations' results.

package epoch

import (
	"fmt"
	"math"
	"slices"
	"sort"

	farm "github.com/dgryski/go-farm"

	"github.com/ytflow/yt-flow/flow"
)

// StateWrite changes one named state of one key; a nil Value deletes it.
type StateWrite struct {
	Key     flow.Key
	KeyHash uint64
	Name    string
	Value   []byte
}

// Out is one output message addressed to one destination. Message.Key is the key in the
// destination computation (nil for sinks).
type Out struct {
	Destination Destination
	Message     flow.Message
	KeyHash     uint64
	// Parents are the input ids (for a swift source: the source row id) the output derives
	// from (set for Swift computations only; one unless RelaxedBatching).
	Parents []string
}

// Commit is the write set of one epoch and the effects to apply once it committed.
type Commit struct {
	// Register are the inputs to add to the dedup index (empty without Dedup).
	Register []Input
	// Acks are the input ids to acknowledge upstream after the commit.
	Acks []string
	// States are the state changes.
	States []StateWrite
	// TimersFired are deleted, TimersSet inserted.
	TimersFired, TimersSet []DueTimer
	// Stored go to the output store (ToComputation, ToAsyncSink); Sync to sync sinks in the
	// transaction; BestEffort to at-most-once sinks after the commit.
	Stored, Sync, BestEffort []Out
	// Offsets are the new exclusive offsets of the source partitions read in this epoch.
	Offsets map[SourcePartition]int64
}

// Empty reports whether the commit writes nothing (the driver still commits one every
// lease check period to notice a lost lease).
func (c *Commit) Empty() bool {
	return len(c.Register) == 0 && len(c.Acks) == 0 && len(c.States) == 0 &&
		len(c.TimersFired) == 0 && len(c.TimersSet) == 0 && len(c.Stored) == 0 &&
		len(c.Sync) == 0 && len(c.BestEffort) == 0 && len(c.Offsets) == 0
}

// BuildCommit turns the invocation results (results[i] belongs to p.Groups[i]) into the
// epoch's write set, assigning output ids and timestamps.
//
// Invariant: fired timers are deleted in the commit holding their results
// (TestTimerDeletedWithResults); ids follow TransformMessageID / SourceOutputID
// (TestTransformIDsOrdered, TestSourceIDsDeterministic).
func BuildCommit(cfg *Config, b *Batch, p *Plan, results []*flow.Result) (*Commit, error) {
	return new(Planner).Build(cfg, b, p, results)
}

// Build is BuildCommit in the memory of the commit the Planner built last (its lists of
// acknowledgements, outputs and state changes, its map of offsets): a commit is valid until
// the Planner's next Build (TestPlannerReusesMemory).
func (pl *Planner) Build(cfg *Config, b *Batch, p *Plan, results []*flow.Result) (*Commit, error) {
	c := &pl.commit
	clear(c.Acks)
	clear(c.Stored)
	clear(c.Sync)
	clear(c.States)
	clear(c.Offsets)
	*c = Commit{Acks: c.Acks[:0], Stored: c.Stored[:0], Sync: c.Sync[:0], States: c.States[:0], Offsets: c.Offsets}
	return pl.build(c, cfg, b, p, results)
}

// build builds the commit into c: a zero Commit, or one whose lists are empty and map is
// empty (their memory is reused).
func (pl *Planner) build(c *Commit, cfg *Config, b *Batch, p *Plan, results []*flow.Result) (*Commit, error) {
	if len(results) != len(p.Groups) {
		return nil, fmt.Errorf("epoch: build commit of %s/%s: %d results for %d invocations", cfg.ComputationID, cfg.PartitionID, len(results), len(p.Groups))
	}
	c.Acks = slices.Grow(c.Acks, len(p.Fresh))
	for _, in := range p.Fresh {
		c.Acks = append(c.Acks, in.Message.MessageID)
	}
	if cfg.Dedup {
		c.Register = p.Fresh
	}
	outputs := 0
	for _, res := range results {
		if res != nil {
			outputs += len(res.Outputs)
		}
	}
	c.Stored = slices.Grow(c.Stored, outputs)
	outIndex, timerIndex := uint64(0), uint64(0)
	for gi, g := range p.Groups {
		res := results[gi]
		c.TimersFired = append(c.TimersFired, g.timers...)
		if g.source != nil {
			sp := g.source.SourcePartition
			if c.Offsets == nil {
				c.Offsets = map[SourcePartition]int64{}
			}
			if next := g.source.Offset + 1; next > c.Offsets[sp] {
				c.Offsets[sp] = next
			}
		}
		if res == nil {
			continue
		}
		var names [4]string // most invocations change a state or two: sorted on the stack
		for _, name := range appendSortedNames(names[:0], res.StateWrites) {
			if cap(c.States) == 0 { // room for one state per remaining invocation, the usual case
				c.States = make([]StateWrite, 0, len(p.Groups)-gi)
			}
			c.States = append(c.States, StateWrite{Key: g.Key, KeyHash: g.KeyHash, Name: name, Value: res.StateWrites[name]})
		}
		for _, t := range res.Timers {
			if t.Key == nil {
				t.Key = g.Key
			}
			t.MessageID = fmt.Sprintf("%016x-timer:%s", b.SeqNo, LexUint(timerIndex))
			timerIndex++
			if t.EventTimestamp == 0 {
				t.EventTimestamp = minEventTimestamp(g, nil)
			}
			c.TimersSet = append(c.TimersSet, DueTimer{Timer: t, KeyHash: KeyHash(t.Key)})
		}
		var perStream, perParent counters // outputs so far per stream / per parent
		var groupMinEv uint64             // minEventTimestamp(g, nil), once known
		groupMinKnown := false
		for _, o := range res.Outputs {
			var id string
			var parents []string
			sysTS := b.Now
			if cfg.Swift && !cfg.Source {
				pms, err := swiftParents(cfg, g, o)
				if err != nil {
					return nil, err
				}
				sysTS = math.MaxUint64
				for _, pm := range pms {
					parents = append(parents, pm.MessageID)
					sysTS = min(sysTS, pm.SystemTimestamp)
				}
				sort.Strings(parents)
				parents = slices.Compact(parents)
				base := parents[0]
				if len(parents) > 1 {
					base = SwiftBatchOutputID(parents)
				}
				id = SwiftOutputID(base, perParent.next(base))
			} else if cfg.Swift && cfg.Source {
				// Invariant: a swift source output's id is its row's id (computation, source,
				// partition, offset) and its index among the row's outputs, so a re-read
				// reproduces it and ids sort in production order (TestSwiftSourceIDs).
				parent := g.Messages[0].MessageID
				parents = []string{parent}
				id = SwiftOutputID(parent, perParent.next(parent))
			} else if cfg.Source {
				parent := g.Messages[0].MessageID
				id = pl.ids.sourceOutput(parent, o.StreamID, perStream.next(o.StreamID))
			} else {
				id = pl.ids.transform(b.SeqNo, outIndex)
				outIndex++
			}
			ev := o.EventTimestamp
			switch {
			case ev != 0:
			case len(o.ParentIDs) > 0:
				ev = minEventTimestamp(g, o.ParentIDs)
			default: // the same for every output of the invocation without parents
				if !groupMinKnown {
					groupMinEv, groupMinKnown = minEventTimestamp(g, nil), true
				}
				ev = groupMinEv
			}
			for _, d := range cfg.Routes[o.StreamID] {
				m := flow.Message{StreamID: o.StreamID, MessageID: id, Payload: o.Payload, EventTimestamp: ev, SystemTimestamp: sysTS}
				out := Out{Destination: d, Message: m, Parents: parents}
				switch d.Kind {
				case ToComputation:
					if cfg.Keyer == nil {
						return nil, fmt.Errorf("epoch: computation %s: stream %s goes to computation %s but no keyer is configured", cfg.ComputationID, o.StreamID, d.ID)
					}
					k, err := cfg.Keyer(d.ID, o.Payload)
					if err != nil {
						return nil, fmt.Errorf("epoch: computation %s: key of output %s on stream %s for computation %s: %w", cfg.ComputationID, id, o.StreamID, d.ID, err)
					}
					out.Message.Key, out.KeyHash = k, pl.keyHash(k)
					c.Stored = append(c.Stored, out)
				case ToAsyncSink:
					c.Stored = append(c.Stored, out)
				case ToSyncSink:
					if len(c.Sync) == 0 { // as many as the outputs, the usual case
						c.Sync = slices.Grow(c.Sync, outputs)
					}
					c.Sync = append(c.Sync, out)
				case ToBestEffortSink:
					c.BestEffort = append(c.BestEffort, out)
				}
			}
		}
	}
	return c, nil
}

// keyHash is KeyHash(k), the key encoded in the Planner's scratch buffer.
func (pl *Planner) keyHash(k flow.Key) uint64 {
	if len(k) == 0 {
		return 0
	}
	if h, ok := k[0].(uint64); ok {
		return h
	}
	if enc, ok := appendKey(pl.keyBuf[:0], k); ok {
		pl.keyBuf = enc
		return farm.Fingerprint64(enc)
	}
	return KeyHash(k)
}

// counters counts by name (the outputs of one invocation per stream or per parent) without
// a map for the usual one or two names.
type counters struct {
	inline [2]struct {
		name string
		n    uint64
	}
	used int
	more map[string]uint64
}

// next returns how many times name was counted before and counts it once more.
func (c *counters) next(name string) uint64 {
	for i := range c.inline[:c.used] {
		if c.inline[i].name == name {
			c.inline[i].n++
			return c.inline[i].n - 1
		}
	}
	if c.used < len(c.inline) {
		c.inline[c.used].name, c.inline[c.used].n = name, 1
		c.used++
		return 0
	}
	if c.more == nil {
		c.more = map[string]uint64{}
	}
	n := c.more[name]
	c.more[name] = n + 1
	return n
}

// swiftParents are the input messages a swift output derives from: those its ParentIDs
// name, or the invocation's only message. Without RelaxedBatching there must be exactly one.
func swiftParents(cfg *Config, g *Group, o flow.Output) ([]flow.Message, error) {
	ids := o.ParentIDs
	if len(ids) == 0 && len(g.Messages) == 1 {
		ids = []string{g.Messages[0].MessageID}
	}
	if len(ids) == 0 || (len(ids) > 1 && !cfg.RelaxedBatching) {
		return nil, fmt.Errorf("epoch: swift computation %s: output on stream %s has %d parents, want exactly one input message "+
			"(several need allow_batching_with_relaxed_guarantees)", cfg.ComputationID, o.StreamID, len(ids))
	}
	byID := make(map[string]flow.Message, len(g.Messages))
	for _, m := range g.Messages {
		byID[m.MessageID] = m
	}
	out := make([]flow.Message, 0, len(ids))
	for _, id := range ids {
		m, ok := byID[id]
		if !ok {
			return nil, fmt.Errorf("epoch: swift computation %s: output on stream %s: parent %s is not an input message (a timer cannot be a swift parent)", cfg.ComputationID, o.StreamID, id)
		}
		out = append(out, m)
	}
	return out, nil
}

// minEventTimestamp is the minimum non-zero event timestamp of the invocation's inputs named
// by parents (all inputs when parents is empty); 0 when none is known.
func minEventTimestamp(g *Group, parents []string) uint64 {
	want := map[string]bool{}
	for _, id := range parents {
		want[id] = true
	}
	best := uint64(math.MaxUint64)
	consider := func(id string, ts uint64) {
		if ts != 0 && (len(want) == 0 || want[id]) && ts < best {
			best = ts
		}
	}
	for _, t := range g.Timers {
		consider(t.MessageID, t.EventTimestamp)
	}
	for _, m := range g.Messages {
		consider(m.MessageID, m.EventTimestamp)
	}
	if best == math.MaxUint64 {
		return 0
	}
	return best
}
