package epoch

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	farm "github.com/dgryski/go-farm"

	"github.com/ytflow/yt-flow/flow"
)

// DestKind says how outputs reach a destination.
type DestKind int

const (
	// ToComputation: an internal stream read by a downstream computation. Outputs are stored
	// in the output store in the epoch commit and pushed to the owning job after it, until
	// that job acknowledges them.
	ToComputation DestKind = iota
	// ToSyncSink: written to the target inside the epoch transaction.
	ToSyncSink
	// ToAsyncSink: stored in the output store in the epoch commit and delivered after it with
	// target-side deduplication.
	ToAsyncSink
	// ToBestEffortSink: an asynchronous sink with at_most_once_strategy: handed to a bounded
	// in-memory queue after the commit, never stored.
	ToBestEffortSink
)

// Destination is one reader of an output stream.
type Destination struct {
	// ID is the downstream computation id or the sink id.
	ID   string
	Kind DestKind
}

// Keyer computes the key of payload in the downstream computation dest (its group-by
// columns, computed columns included). It must be a pure function of its arguments.
type Keyer func(dest string, payload flow.Row) (flow.Key, error)

// Config describes the job the core works for. It does not change during a job's life.
type Config struct {
	// ComputationID and PartitionID name the job's computation and partition.
	ComputationID, PartitionID string
	// Dedup enables input deduplication (exactly_once); false is at_least_once_consistent.
	Dedup bool
	// Source marks a source computation: one invocation per source row with a nil key, and
	// output ids derived from source offsets.
	Source bool
	// Routes maps an output stream id to its readers. Outputs of a stream without readers
	// are dropped.
	Routes map[string][]Destination
	// Keyer computes keys for ToComputation destinations; required when such routes exist.
	Keyer Keyer
	// Swift marks a swift computation: outputs are not persisted. A swift map output inherits
	// its id (SwiftOutputID) and system timestamp from its single parent input, so a
	// recomputed parent reproduces the same ids for downstream deduplication. With Source (a
	// swift source) the parent is the source row: an output's id is SwiftOutputID of the row's
	// SourceMessageID and its index among the row's outputs (all streams counted), its system
	// timestamp the batch's Now, and its Parents the row's id.
	Swift bool
	// RelaxedBatching (allow_batching_with_relaxed_guarantees) lets a swift output derive from
	// several parents: its id is SwiftBatchOutputID of the sorted parent ids, so a
	// recomputation that batches the same parents together reproduces it, and one that
	// batches them otherwise does not: downstream then sees repeats (at-least-once).
	RelaxedBatching bool
}

// Input is a message received from an upstream job, keyed for this computation.
type Input struct {
	Message flow.Message
	// PayloadFingerprint is the FarmHash fingerprint of the payload as received (its YSON
	// bytes); 0 when not known. The dedup index keeps it to recognise a copy with another
	// payload.
	PayloadFingerprint uint64
	// Born is a cluster timestamp before which no job can have received the message, the
	// same for every copy of it: the token of the epoch that stored it, or for a swift output
	// the earliest birth of its parents (a swift source row's is its commit timestamp,
	// $timestamp); 0 when not known (senders of earlier versions). See job/fresh.go.
	Born uint64
}

// DueTimer is a stored timer: its id (Timer.MessageID) and key hash identify its row.
type DueTimer struct {
	Timer   flow.Timer
	KeyHash uint64
}

// SourcePartition names one partition of one source.
type SourcePartition struct {
	SourceID  string
	Partition int64
}

// SourceRow is one row read from a source partition at Offset.
type SourceRow struct {
	SourcePartition
	Offset          int64
	Payload         flow.Row
	SystemTimestamp uint64
	EventTimestamp  uint64
	// Born is the row's commit timestamp in its queue ($timestamp), 0 when not known: the
	// birth of a swift source's outputs (Input.Born).
	Born uint64
}

// Batch is what one epoch fetched.
type Batch struct {
	// Now is the epoch time in microseconds; outputs get it as their system timestamp.
	Now uint64
	// SeqNo is unique among all epochs of all jobs and grows over time (a cluster
	// timestamp). Transform output ids and new timer ids are built from it.
	SeqNo  uint64
	Inputs []Input
	// DistinctInputs tells that no message id repeats among Inputs (a driver that buffers
	// inputs by id, TestInboxTakesDistinctIDs), so the plan need not check.
	DistinctInputs bool
	Timers         []DueTimer
	Sources        []SourceRow
}

// Group is one invocation: one key with its timers first, then its messages.
type Group struct {
	Key      flow.Key
	KeyHash  uint64
	Timers   []flow.Timer
	Messages []flow.Message
	// timers and source are bookkeeping for BuildCommit; inputs counts the group's
	// messages while PlanEpoch plans.
	timers []DueTimer
	source *SourceRow
	inputs int
}

// SourceRow is the source row a source computation's group invokes on, nil for other groups.
func (g *Group) SourceRow() *SourceRow { return g.source }

// Plan is the epoch's work after deduplication.
type Plan struct {
	// Groups are the invocations to run, in order: keys in order of first appearance.
	Groups []*Group
	// Duplicates are input ids already committed (or repeated within the batch): the driver
	// acknowledges them at once and drops them.
	Duplicates []string
	// Fresh are the inputs that will be processed; they are registered in the dedup index
	// in the commit and acknowledged after it.
	Fresh []Input
}

// PlanEpoch groups the batch into invocations. committed reports whether an input is
// already in the dedup index; it is not called when cfg.Dedup is false.
//
// Invariant: duplicates are dropped and acknowledged (TestPlanDropsDuplicates); timers come
// before messages per key (TestPlanGroupsTimersFirst).
func PlanEpoch(cfg *Config, b *Batch, committed func(Input) bool) *Plan {
	return new(Planner).Plan(cfg, b, committed)
}

// A Planner plans epochs as PlanEpoch does and builds their commits as BuildCommit does,
// reusing the memory of the plan and commit it returned last: a plan is valid until the
// Planner's next Plan, a commit until its next Build, so a driver that runs one epoch at a
// time keeps one Planner (TestPlannerReusesMemory). The zero Planner is ready.
type Planner struct {
	plan    Plan
	byKey   map[string]*Group
	slab    []Group // groups of keys
	groupOf []*Group
	msgs    []flow.Message // messages of the keys' groups
	// srcGroups and srcMsgs hold one group and message per source row.
	srcGroups []Group
	srcMsgs   []flow.Message
	commit    Commit // see Build
}

// reset drops what the last plan pointed to and keeps the memory.
func (pl *Planner) reset() {
	clear(pl.plan.Groups)
	clear(pl.plan.Fresh)
	pl.plan = Plan{Groups: pl.plan.Groups[:0], Fresh: pl.plan.Fresh[:0]}
	clear(pl.byKey)
	clear(pl.slab)
	clear(pl.groupOf)
	clear(pl.msgs)
	clear(pl.srcGroups)
	clear(pl.srcMsgs)
	pl.slab, pl.groupOf = pl.slab[:0], pl.groupOf[:0]
}

// Plan is PlanEpoch in the memory of the Planner's last plan.
func (pl *Planner) Plan(cfg *Config, b *Batch, committed func(Input) bool) *Plan {
	pl.reset()
	p := &pl.plan
	p.Fresh = slices.Grow(p.Fresh, len(b.Inputs))
	p.Groups = slices.Grow(p.Groups, len(b.Sources)+len(b.Timers)+len(b.Inputs)/4)
	if pl.byKey == nil {
		pl.byKey = make(map[string]*Group, len(b.Inputs)/4)
	}
	byKey := pl.byKey
	// Groups are taken from a slab (one allocation for the usual number of keys, more only
	// when an epoch has more keys than that). The slab never grows while groups point into
	// it: a larger one replaces it before the plan starts.
	if need := len(b.Timers) + len(b.Inputs)/2; cap(pl.slab) < need {
		pl.slab = make([]Group, 0, need)
	}
	slab := pl.slab
	var keyBuf []byte
	group := func(k flow.Key) *Group {
		if kb, ok := appendKey(keyBuf[:0], k); ok {
			keyBuf = kb
		} else {
			keyBuf = EncodeKey(k)
		}
		g, ok := byKey[string(keyBuf)] // no copy of the key for a lookup
		if !ok {
			if len(slab) < cap(slab) {
				slab = append(slab, Group{Key: k, KeyHash: KeyHash(k)})
				g = &slab[len(slab)-1]
			} else {
				g = &Group{Key: k, KeyHash: KeyHash(k)}
			}
			byKey[string(keyBuf)] = g
			p.Groups = append(p.Groups, g)
		}
		return g
	}
	defer func() { pl.slab = slab }() // its length: the part reset clears
	for _, t := range b.Timers {
		g := group(t.Timer.Key)
		g.Timers = append(g.Timers, t.Timer)
		g.timers = append(g.timers, t)
	}
	var seen map[string]bool
	if !b.DistinctInputs {
		seen = make(map[string]bool, len(b.Inputs))
	}
	// Two passes over the inputs: the first finds the fresh ones and their groups and counts
	// the messages of each group, the second copies the messages into one slice carved up
	// by group, in input order (instead of growing a slice per group).
	groupOf := slices.Grow(pl.groupOf, len(b.Inputs)) // groupOf[i] is the group of p.Fresh[i]
	for _, in := range b.Inputs {
		id := in.Message.MessageID
		if seen[id] || (cfg.Dedup && committed(in)) {
			p.Duplicates = append(p.Duplicates, id)
			continue
		}
		if seen != nil {
			seen[id] = true
		}
		p.Fresh = append(p.Fresh, in)
		g := group(in.Message.Key)
		g.inputs++
		groupOf = append(groupOf, g)
	}
	pl.groupOf = groupOf
	if len(p.Fresh) > 0 {
		msgs := grown(&pl.msgs, len(p.Fresh))
		at := 0
		for _, g := range p.Groups {
			if g.inputs > 0 {
				g.Messages = msgs[at : at : at+g.inputs]
				at += g.inputs
			}
		}
		for i, g := range groupOf {
			g.Messages = append(g.Messages, p.Fresh[i].Message)
		}
	}
	// One group per source row, allocated together.
	groups, msgs := grown(&pl.srcGroups, len(b.Sources)), grown(&pl.srcMsgs, len(b.Sources))
	for i := range b.Sources {
		r := &b.Sources[i]
		msgs[i] = flow.Message{
			StreamID:        r.SourceID,
			MessageID:       SourceMessageID(cfg.ComputationID, r.SourcePartition, r.Offset),
			Payload:         r.Payload,
			SystemTimestamp: r.SystemTimestamp,
			EventTimestamp:  r.EventTimestamp,
		}
		groups[i] = Group{Messages: msgs[i : i+1 : i+1], source: r}
		p.Groups = append(p.Groups, &groups[i])
	}
	return p
}

// grown sets *s to n zero elements, in its memory when it has room, and returns it.
func grown[T any](s *[]T, n int) []T {
	if cap(*s) < n {
		*s = make([]T, n)
	} else {
		*s = (*s)[:n]
	}
	return *s
}

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
	return buildCommit(&Commit{}, cfg, b, p, results)
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
	return buildCommit(c, cfg, b, p, results)
}

// buildCommit builds the commit into c: a zero Commit, or one whose lists are empty and map
// is empty (their memory is reused).
func buildCommit(c *Commit, cfg *Config, b *Batch, p *Plan, results []*flow.Result) (*Commit, error) {
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
				id = SourceOutputID(parent, o.StreamID, perStream.next(o.StreamID))
			} else {
				id = TransformMessageID(b.SeqNo, outIndex)
				outIndex++
			}
			ev := o.EventTimestamp
			if ev == 0 {
				ev = minEventTimestamp(g, o.ParentIDs)
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
					out.Message.Key, out.KeyHash = k, KeyHash(k)
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

// LexUint encodes v so that string order equals numeric order: one hex digit holding the
// number of hex digits minus one, then the hex digits (0 → "00", 123 → "17b").
func LexUint(v uint64) string {
	var b [17]byte
	return string(appendLexUint(b[:0], v))
}

// appendLexUint appends the LexUint form of v to b.
func appendLexUint(b []byte, v uint64) []byte {
	digits := 1
	for x := v >> 4; x != 0; x >>= 4 {
		digits++
	}
	b = strconv.AppendUint(b, uint64(digits-1), 16)
	return strconv.AppendUint(b, v, 16)
}

// TransformMessageID is the id of the index-th output of the epoch with sequence number
// seqNo. Ids of one producer sort in production order because SeqNo grows across epochs.
func TransformMessageID(seqNo, index uint64) string {
	var b [40]byte
	id := strconv.AppendUint(b[:0], seqNo, 16)
	if pad := 16 - len(id); pad > 0 { // %016x
		id = append(b[:0], "0000000000000000"[:pad]...)
		id = strconv.AppendUint(id, seqNo, 16)
	}
	id = append(id, '-')
	return string(appendLexUint(id, index))
}

// idBuffer is the stack buffer ids are built in; a longer id grows onto the heap.
const idBuffer = 128

// SourceMessageID is the id of the source row at offset of sp read by computation; it depends
// on nothing else, and the computation id keeps rows of equally named sources of different
// computations apart.
func SourceMessageID(computation string, sp SourcePartition, offset int64) string {
	var buf [idBuffer]byte // on the stack: the id allocates once, as the string
	b := buf[:0]
	b = append(b, computation...)
	b = append(b, '/')
	b = append(b, sp.SourceID...)
	b = append(b, ':')
	b = appendLexUint(b, uint64(sp.Partition))
	b = append(b, ':')
	return string(appendLexUint(b, uint64(offset)))
}

// SourceOutputID is the id of the index-th output on stream of the source message parent.
func SourceOutputID(parent, stream string, index uint64) string {
	var buf [idBuffer]byte
	b := buf[:0]
	b = append(b, parent...)
	b = append(b, '-')
	b = append(b, stream...)
	b = append(b, ':')
	return string(appendLexUint(b, index))
}

// SwiftOutputID is the id of the index-th output (all streams counted) of a swift
// computation's parent message: the parent id, "/" and the index in LexUint form, so the ids of
// one parent sort in production order and a recomputation reproduces them.
func SwiftOutputID(parent string, index uint64) string {
	return parent + "/" + LexUint(index)
}

// SwiftBatchOutputID is the base id of an output of several parents (sorted, distinct): the
// first parent, "+" and the FarmHash fingerprint of all of them, so it depends on the set of
// parents only.
func SwiftBatchOutputID(sortedParents []string) string {
	return fmt.Sprintf("%s+%016x", sortedParents[0], farm.Fingerprint64([]byte(strings.Join(sortedParents, "\x00"))))
}
