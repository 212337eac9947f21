// The plan half of the core: what an epoch fetched, grouped into invocations.

package epoch

import (
	"slices"
	"unsafe"

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
	// Bytes is the size of the message as received (its key and payload bytes); 0 when not
	// known. Input bytes throttling (input_bytes_throttler_id) counts it.
	Bytes int
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
	// ids holds the message ids the Planner builds (source rows' in Plan, outputs' in Build).
	ids idArena
	// keys holds the bytes of byKey's keys (strings over it), rewritten from the start by
	// each Plan once reset cleared byKey.
	keys []byte
	// keyBuf is scratch for encoding a key.
	keyBuf []byte
	// planned is set by the first Plan.
	planned bool
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
	pl.keys = pl.keys[:0] // byKey, cleared above, held the only strings over it
}

// keyString copies k into pl.keys and returns a string over the copy, valid until the next
// reset: a map key of byKey without an allocation per key. A grown pl.keys is a new array;
// the strings over the old one stay valid.
func (pl *Planner) keyString(k []byte) string {
	if len(k) == 0 {
		return ""
	}
	start := len(pl.keys)
	pl.keys = append(pl.keys, k...)
	return unsafe.String(&pl.keys[start], len(k))
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
	// when an epoch has more keys than that). A Planner that planned before (one kept from
	// epoch to epoch) makes room for a group per timer and input, the most keys an epoch can
	// have, and so allocates again only for a larger epoch than ever before; a first plan for
	// half as many. The slab never grows while groups point into it: a larger one replaces it
	// before the plan starts.
	need := len(b.Timers) + len(b.Inputs)/2
	if pl.planned {
		need = len(b.Timers) + len(b.Inputs)
	}
	pl.planned = true
	if cap(pl.slab) < need {
		pl.slab = make([]Group, 0, need)
	}
	slab := pl.slab
	group := func(k flow.Key) *Group {
		keyBuf, ok := appendKey(pl.keyBuf[:0], k)
		if ok {
			pl.keyBuf = keyBuf
		} else {
			keyBuf = EncodeKey(k)
		}
		g, ok := byKey[string(keyBuf)] // no copy of the key for a lookup
		if !ok {
			if len(slab) < cap(slab) {
				slab = append(slab, Group{Key: k, KeyHash: keyHashOf(k, keyBuf)})
				g = &slab[len(slab)-1]
			} else {
				g = &Group{Key: k, KeyHash: keyHashOf(k, keyBuf)}
			}
			byKey[pl.keyString(keyBuf)] = g
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
			MessageID:       pl.ids.source(cfg.ComputationID, r.SourcePartition, r.Offset),
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
