package epoch

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/flow"
)

func msg(id string, key ...any) Input {
	return Input{Message: flow.Message{StreamID: "in", MessageID: id, Key: flow.Key(key), Payload: flow.Row{"id": id}}}
}

func ids(ms []flow.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.MessageID)
	}
	return out
}

func TestPlanDropsDuplicates(t *testing.T) {
	cfg := &Config{ComputationID: "c", PartitionID: "p", Dedup: true}
	b := &Batch{Inputs: []Input{msg("a", "k"), msg("b", "k"), msg("a", "k"), msg("c", "j")}}
	committed := map[string]bool{"b": true}
	p := PlanEpoch(cfg, b, func(in Input) bool { return committed[in.Message.MessageID] })

	assert.Equal(t, []string{"b", "a"}, p.Duplicates, "committed and repeated ids are duplicates")
	require.Len(t, p.Groups, 2)
	assert.Equal(t, []string{"a"}, ids(p.Groups[0].Messages))
	assert.Equal(t, []string{"c"}, ids(p.Groups[1].Messages))

	c, err := BuildCommit(cfg, b, p, []*flow.Result{nil, nil})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "c"}, c.Acks, "only processed inputs are acknowledged after the commit")
	assert.Len(t, c.Register, 2, "processed inputs are registered in the dedup index")
}

func TestAtLeastOnceSkipsDedup(t *testing.T) {
	cfg := &Config{ComputationID: "c", PartitionID: "p", Dedup: false}
	b := &Batch{Inputs: []Input{msg("a", "k"), msg("b", "k")}}
	p := PlanEpoch(cfg, b, func(Input) bool { t.Fatal("dedup index consulted in at_least_once_consistent mode"); return false })
	assert.Empty(t, p.Duplicates)
	c, err := BuildCommit(cfg, b, p, []*flow.Result{{StateWrites: map[string][]byte{"n": []byte("2")}}})
	require.NoError(t, err)
	assert.Empty(t, c.Register, "nothing registered in the dedup index")
	assert.Equal(t, []string{"a", "b"}, c.Acks, "inputs are still acknowledged after the commit")
	assert.Len(t, c.States, 1, "state stays consistent: written in the commit")
}

func TestPlanGroupsTimersFirst(t *testing.T) {
	cfg := &Config{ComputationID: "c", PartitionID: "p", Dedup: true}
	b := &Batch{
		Inputs: []Input{msg("m1", "x"), msg("m2", "y"), msg("m3", "x")},
		Timers: []DueTimer{{Timer: flow.Timer{StreamID: "t", Key: flow.Key{"y"}, Trigger: 5, MessageID: "t1"}}},
	}
	p := PlanEpoch(cfg, b, func(Input) bool { return false })
	require.Len(t, p.Groups, 2)
	y, x := p.Groups[0], p.Groups[1]
	assert.Equal(t, flow.Key{"y"}, y.Key)
	assert.Len(t, y.Timers, 1)
	assert.Equal(t, []string{"m2"}, ids(y.Messages))
	assert.Equal(t, flow.Key{"x"}, x.Key)
	assert.Equal(t, []string{"m1", "m3"}, ids(x.Messages), "arrival order within a key")
}

func TestTransformIDsOrdered(t *testing.T) {
	var prev string
	seen := map[string]bool{}
	for _, seq := range []uint64{1, 2, 0x1000, 1 << 40} {
		for i := uint64(0); i < 300; i += 7 {
			id := TransformMessageID(seq, i)
			assert.False(t, seen[id], "id %s repeats", id)
			seen[id] = true
			assert.Less(t, prev, id, "ids sort in production order")
			prev = id
		}
	}
	assert.Equal(t, "00", LexUint(0))
	assert.Equal(t, "17b", LexUint(123))
	assert.Equal(t, "2320", LexUint(800))
}

func TestSourceIDsDeterministic(t *testing.T) {
	cfg := &Config{ComputationID: "src", PartitionID: "p0", Source: true,
		Routes: map[string][]Destination{"out": {{ID: "sink", Kind: ToSyncSink}}}}
	run := func(seq uint64) []string {
		b := &Batch{Now: seq, SeqNo: seq, Sources: []SourceRow{
			{SourcePartition: SourcePartition{"q", 3}, Offset: 9, Payload: flow.Row{"v": 1}},
			{SourcePartition: SourcePartition{"q", 3}, Offset: 10, Payload: flow.Row{"v": 2}},
		}}
		p := PlanEpoch(cfg, b, nil)
		res := make([]*flow.Result, len(p.Groups))
		for i, g := range p.Groups {
			res[i] = &flow.Result{Outputs: []flow.Output{{StreamID: "out", Payload: g.Messages[0].Payload}, {StreamID: "out"}}}
		}
		c, err := BuildCommit(cfg, b, p, res)
		require.NoError(t, err)
		assert.Equal(t, map[SourcePartition]int64{{"q", 3}: 11}, c.Offsets, "offset advances past the last row read")
		var out []string
		for _, o := range c.Sync {
			out = append(out, o.Message.MessageID)
		}
		return out
	}
	sp := SourcePartition{"q", 3}
	assert.NotEqual(t, SourceMessageID("a", sp, 1), SourceMessageID("b", sp, 1), "equally named sources of two computations")
	first, second := run(100), run(200)
	assert.Equal(t, first, second, "a recomputation with another SeqNo gives the same ids")
	assert.True(t, sort.StringsAreSorted(first), "ids sort in production order: %v", first)
	assert.Len(t, first, 4)
}

func TestTimerDeletedWithResults(t *testing.T) {
	cfg := &Config{ComputationID: "c", PartitionID: "p", Dedup: true,
		Routes: map[string][]Destination{"out": {{ID: "down", Kind: ToComputation}, {ID: "q", Kind: ToAsyncSink}}},
		Keyer:  func(dest string, row flow.Row) (flow.Key, error) { return flow.Key{row["w"]}, nil },
	}
	timer := DueTimer{Timer: flow.Timer{StreamID: "t", Key: flow.Key{"k"}, Trigger: 5, MessageID: "t1", EventTimestamp: 7}}
	b := &Batch{Now: 10, SeqNo: 42, Timers: []DueTimer{timer}}
	p := PlanEpoch(cfg, b, nil)
	res := []*flow.Result{{
		Outputs:     []flow.Output{{StreamID: "out", Payload: flow.Row{"w": "x"}}},
		Timers:      []flow.Timer{{StreamID: "t", Trigger: 20}},
		StateWrites: map[string][]byte{"s": nil},
	}}
	c, err := BuildCommit(cfg, b, p, res)
	require.NoError(t, err)
	assert.Equal(t, []DueTimer{timer}, c.TimersFired, "the fired timer is deleted in this commit")
	require.Len(t, c.TimersSet, 1)
	assert.Equal(t, flow.Key{"k"}, c.TimersSet[0].Timer.Key, "a new timer defaults to the invocation key")
	assert.Equal(t, uint64(7), c.TimersSet[0].Timer.EventTimestamp)
	require.Len(t, c.Stored, 2, "one stored row per reader")
	assert.Equal(t, flow.Key{"x"}, c.Stored[0].Message.Key, "keyed for the downstream computation")
	assert.Equal(t, uint64(7), c.Stored[0].Message.EventTimestamp, "event time is the parents' minimum")
	assert.Equal(t, uint64(10), c.Stored[0].Message.SystemTimestamp)
	assert.Equal(t, c.Stored[0].Message.MessageID, c.Stored[1].Message.MessageID, "readers see one id")
	assert.Equal(t, []StateWrite{{Key: flow.Key{"k"}, KeyHash: KeyHash(flow.Key{"k"}), Name: "s"}}, c.States)

	ts := NewTimerSet([]DueTimer{timer})
	assert.Len(t, ts.Due(10, 0), 1)
	assert.Empty(t, ts.DueBy(func(stream string) uint64 { return map[string]uint64{"t": 4}[stream] }, 0), "its stream's time is before the trigger")
	ts.Apply(c)
	assert.Empty(t, ts.Due(10, 0), "fired timer gone after the commit")
	assert.Len(t, ts.Due(20, 0), 1)
}

func TestBuildCommitKeyerError(t *testing.T) {
	cfg := &Config{ComputationID: "c", Routes: map[string][]Destination{"out": {{ID: "down", Kind: ToComputation}}},
		Keyer: func(string, flow.Row) (flow.Key, error) { return nil, fmt.Errorf("column word is missing") }}
	b := &Batch{Inputs: []Input{msg("a", "k")}}
	p := PlanEpoch(cfg, b, nil)
	_, err := BuildCommit(cfg, b, p, []*flow.Result{{Outputs: []flow.Output{{StreamID: "out"}}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "column word is missing")
	assert.Contains(t, err.Error(), "computation down")
}

func TestKeyHash(t *testing.T) {
	assert.Equal(t, uint64(77), KeyHash(flow.Key{uint64(77), "w"}), "a leading uint64 column is the hash")
	assert.Equal(t, KeyHash(flow.Key{"a", int64(1)}), KeyHash(flow.Key{"a", int64(1)}))
	assert.NotEqual(t, KeyHash(flow.Key{"a"}), KeyHash(flow.Key{"b"}))
	k, err := DecodeKey(EncodeKey(flow.Key{"a", int64(1), uint64(2)}))
	require.NoError(t, err)
	assert.Equal(t, flow.Key{"a", int64(1), uint64(2)}, k)
	assert.True(t, InRange(5, 0, 0))
	assert.False(t, InRange(5, 6, 0))
	assert.False(t, InRange(9, 0, 9))
}

func TestAfterCommit(t *testing.T) {
	assert.Equal(t, Proceed, AfterCommit(Committed))
	assert.Equal(t, Stop, AfterCommit(LeaseLost), "a zombie stops at once")
	assert.Equal(t, Recheck, AfterCommit(Unknown), "unknown is resolved by re-reading")
	assert.Equal(t, Retry, AfterCommit(Rejected))
	assert.Equal(t, Proceed, AfterRecheck(5, 5, true))
	assert.Equal(t, Retry, AfterRecheck(5, 4, true))
	assert.Equal(t, Retry, AfterRecheck(5, 0, false))
	assert.True(t, NeedCommit(&Commit{}, 0, 100, 0, 50), "lease check period elapsed")
	assert.False(t, NeedCommit(&Commit{}, 0, 10, 0, 50))
	assert.True(t, NeedCommit(&Commit{}, 1, 10, 0, 50), "pending outbox deletions")
}

// TestSimulationExactlyOnce runs a keyed counter through the core against an in-memory model
// of the durable tables, with random duplicate deliveries, unknown commit outcomes (applied
// or not) and restarts that lose all in-memory state. Every input must be counted exactly
// once. A failing seed is printed.
func TestSimulationExactlyOnce(t *testing.T) {
	for seed := int64(1); seed <= 200; seed++ {
		if err := simulate(seed); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

type durable struct {
	dedup map[string]bool
	state map[string]int
	token uint64
}

func simulate(seed int64) error {
	rng := rand.New(rand.NewSource(seed))
	cfg := &Config{ComputationID: "count", PartitionID: "p", Dedup: true}
	db := &durable{dedup: map[string]bool{}, state: map[string]int{}}
	const total = 60
	var pending []Input // the sender's unacknowledged messages
	for i := 0; i < total; i++ {
		pending = append(pending, msg(fmt.Sprintf("m%03d", i), fmt.Sprintf("k%d", i%5)))
	}
	seq := uint64(0)
	for round := 0; len(pending) > 0; round++ {
		if round > 10000 {
			return fmt.Errorf("no progress")
		}
		// Deliver a random prefix, with random repeats (retransmissions).
		n := 1 + rng.Intn(len(pending))
		batch := append([]Input(nil), pending[:n]...)
		for r := rng.Intn(3); r > 0; r-- {
			batch = append(batch, pending[rng.Intn(n)])
		}
		seq++
		b := &Batch{Now: seq, SeqNo: seq, Inputs: batch}
		p := PlanEpoch(cfg, b, func(in Input) bool { return db.dedup[in.Message.MessageID] })
		acked := map[string]bool{}
		for _, id := range p.Duplicates {
			if db.dedup[id] {
				acked[id] = true
			}
		}
		res := make([]*flow.Result, len(p.Groups))
		for i, g := range p.Groups {
			k := string(EncodeKey(g.Key))
			res[i] = &flow.Result{StateWrites: map[string][]byte{"n": []byte(fmt.Sprint(db.state[k] + len(g.Messages)))}}
		}
		c, err := BuildCommit(cfg, b, p, res)
		if err != nil {
			return err
		}
		apply := func() {
			for _, in := range c.Register {
				db.dedup[in.Message.MessageID] = true
			}
			for _, s := range c.States {
				var v int
				fmt.Sscan(string(s.Value), &v)
				db.state[string(EncodeKey(s.Key))] = v
			}
			db.token = seq
		}
		outcome := Outcome(rng.Intn(4))
		applied := outcome == Committed || (outcome == Unknown && rng.Intn(2) == 0)
		if applied {
			apply()
		}
		next := AfterCommit(outcome)
		if next == Recheck {
			next = AfterRecheck(seq, db.token, db.token != 0)
		}
		switch next {
		case Proceed:
			if !applied {
				return fmt.Errorf("round %d: proceeding with an epoch that did not apply", round)
			}
			for _, id := range c.Acks {
				acked[id] = true
			}
		case Stop, Retry:
			if applied {
				return fmt.Errorf("round %d: epoch applied but next=%v would redo it", round, next)
			}
			// Lost lease or retry: the job restarts from durable state; nothing is acked.
		}
		var left []Input
		for _, in := range pending {
			if !acked[in.Message.MessageID] {
				left = append(left, in)
			}
		}
		pending = left
	}
	sum := 0
	for _, v := range db.state {
		sum += v
	}
	if sum != total {
		var b strings.Builder
		fmt.Fprint(&b, db.state)
		return fmt.Errorf("counted %d of %d inputs: %s", sum, total, b.String())
	}
	return nil
}

func TestEncodeKeyMatchesSDK(t *testing.T) {
	for _, k := range []flow.Key{nil, {}, {"ab"}, {int64(-3), uint64(300), "x"}, {true, false, nil, 1.5},
		{uint64(1<<63 + 5), int64(-1 << 62), ""}, {[]byte("raw")}, {strings.Repeat("z", 300)}} {
		want, err := sdkKey(k)
		require.NoError(t, err)
		assert.Equal(t, want, EncodeKey(k), "key %v", k)
	}
}

// sdkKey is the SDK's binary YSON of the key as a list ([]byte items as strings).
func sdkKey(k flow.Key) ([]byte, error) {
	conv := make([]any, len(k))
	for i, v := range k {
		if b, ok := v.([]byte); ok {
			conv[i] = string(b)
		} else {
			conv[i] = v
		}
	}
	return yson.MarshalFormat(conv, yson.FormatBinary)
}

// TestSwiftIDsInherited: a swift computation's outputs take their ids from their single
// parent (parent id, "/", index) and its system timestamp, whatever the epoch's SeqNo and
// time; an output with several parents is refused.
func TestSwiftIDsInherited(t *testing.T) {
	cfg := &Config{ComputationID: "m", PartitionID: "p", Swift: true,
		Routes: map[string][]Destination{"out": {{ID: "sink", Kind: ToAsyncSink}}}}
	run := func(seq uint64) []Out {
		in := []Input{msg("a"), msg("b")}
		in[0].Message.SystemTimestamp, in[1].Message.SystemTimestamp = 7, 8
		b := &Batch{Now: seq, SeqNo: seq, Inputs: in}
		p := PlanEpoch(cfg, b, nil)
		require.Len(t, p.Groups, 1)
		res := []*flow.Result{{Outputs: []flow.Output{
			{StreamID: "out", ParentIDs: []string{"b"}}, {StreamID: "out", ParentIDs: []string{"a"}}, {StreamID: "out", ParentIDs: []string{"b"}},
		}}}
		c, err := BuildCommit(cfg, b, p, res)
		require.NoError(t, err)
		return c.Stored
	}
	first, second := run(100), run(200)
	assert.Equal(t, first, second, "a recomputation gives the same ids and timestamps")
	var got []string
	for _, o := range first {
		got = append(got, fmt.Sprintf("%s<-%v@%d", o.Message.MessageID, o.Parents, o.Message.SystemTimestamp))
	}
	assert.Equal(t, []string{"b/00<-[b]@8", "a/00<-[a]@7", "b/01<-[b]@8"}, got)
	assert.Less(t, SwiftOutputID("p", 9), SwiftOutputID("p", 10), "ids of one parent sort in production order")

	b := &Batch{Inputs: []Input{msg("a"), msg("b")}}
	p := PlanEpoch(cfg, b, nil)
	_, err := BuildCommit(cfg, b, p, []*flow.Result{{Outputs: []flow.Output{{StreamID: "out", ParentIDs: []string{"a", "b"}}}}})
	assert.ErrorContains(t, err, "has 2 parents")
}

// TestSwiftRelaxedBatchIDs: with allow_batching_with_relaxed_guarantees an output may have
// several parents; its id depends on the set of parent ids only (not their order), differs
// for another set, and it takes the smallest parent system timestamp.
func TestSwiftRelaxedBatchIDs(t *testing.T) {
	cfg := &Config{ComputationID: "m", PartitionID: "p", Swift: true, RelaxedBatching: true,
		Routes: map[string][]Destination{"out": {{ID: "sink", Kind: ToAsyncSink}}}}
	run := func(parents ...string) Out {
		in := []Input{msg("a"), msg("b"), msg("c")}
		for i := range in {
			in[i].Message.SystemTimestamp = uint64(10 - i)
		}
		b := &Batch{Inputs: in}
		p := PlanEpoch(cfg, b, nil)
		c, err := BuildCommit(cfg, b, p, []*flow.Result{{Outputs: []flow.Output{{StreamID: "out", ParentIDs: parents}}}})
		require.NoError(t, err)
		require.Len(t, c.Stored, 1)
		return c.Stored[0]
	}
	ab, ba, ac := run("a", "b"), run("b", "a", "b"), run("a", "c")
	assert.Equal(t, ab.Message.MessageID, ba.Message.MessageID, "the id depends on the set of parents")
	assert.NotEqual(t, ab.Message.MessageID, ac.Message.MessageID)
	assert.Equal(t, []string{"a", "b"}, ba.Parents)
	assert.Equal(t, uint64(9), ab.Message.SystemTimestamp, "the oldest parent's system timestamp")
	assert.Equal(t, SwiftOutputID(SwiftBatchOutputID([]string{"a", "b"}), 0), ab.Message.MessageID)
}

// TestSwiftSourceIDs: a swift source output's id derives from its row (computation, source,
// partition, offset) and its index among the row's outputs over all streams; a re-read in
// another epoch reproduces the ids, they sort in production order, and each output names its
// row as its parent.
func TestSwiftSourceIDs(t *testing.T) {
	cfg := &Config{ComputationID: "src", PartitionID: "p0", Source: true, Swift: true,
		Routes: map[string][]Destination{"a": {{ID: "sink", Kind: ToAsyncSink}}, "b": {{ID: "sink", Kind: ToAsyncSink}}}}
	sp := SourcePartition{"q", 3}
	run := func(now, seq uint64, offsets ...int64) ([]string, [][]string) {
		b := &Batch{Now: now, SeqNo: seq}
		for _, off := range offsets {
			b.Sources = append(b.Sources, SourceRow{SourcePartition: sp, Offset: off})
		}
		p := PlanEpoch(cfg, b, nil)
		res := make([]*flow.Result, len(p.Groups))
		for i := range p.Groups {
			res[i] = &flow.Result{Outputs: []flow.Output{{StreamID: "b"}, {StreamID: "a"}, {StreamID: "b"}}}
		}
		c, err := BuildCommit(cfg, b, p, res)
		require.NoError(t, err)
		var ids []string
		var parents [][]string
		for _, o := range c.Stored {
			ids = append(ids, o.Message.MessageID)
			parents = append(parents, o.Parents)
			assert.Equal(t, now, o.Message.SystemTimestamp, "a swift source output is stamped with the time it was read")
		}
		return ids, parents
	}
	first, parents := run(100, 100, 9, 10, 11)
	require.Len(t, first, 9)
	row9 := SourceMessageID("src", sp, 9)
	assert.Equal(t, []string{SwiftOutputID(row9, 0), SwiftOutputID(row9, 1), SwiftOutputID(row9, 2)}, first[:3])
	assert.Equal(t, []string{row9}, parents[0])
	assert.Equal(t, []string{SourceMessageID("src", sp, 11)}, parents[8])
	assert.True(t, sort.StringsAreSorted(first), "ids sort in production order: %v", first)
	again, _ := run(900, 900, 10, 11)
	assert.Equal(t, first[3:], again, "a re-read of the same rows in another epoch gives the same ids")
}

func TestCountersCountPerName(t *testing.T) {
	var c counters
	names := []string{"a", "b", "a", "c", "d", "c", "a", "b", "d", "d"}
	want := []uint64{0, 0, 1, 0, 0, 1, 2, 1, 1, 2}
	for i, n := range names {
		if got := c.next(n); got != want[i] {
			t.Fatalf("next(%q) at %d = %d, want %d", n, i, got, want[i])
		}
	}
}

// describePlan is what a plan says, for comparing plans made in different memory.
func describePlan(p *Plan) []string {
	out := []string{fmt.Sprintf("duplicates %v", p.Duplicates)}
	for _, in := range p.Fresh {
		out = append(out, "fresh "+in.Message.MessageID)
	}
	for _, g := range p.Groups {
		var timers []string
		for _, t := range g.Timers {
			timers = append(timers, t.MessageID)
		}
		var msgs []string
		for _, m := range g.Messages {
			msgs = append(msgs, fmt.Sprintf("%s/%s/%v/%v", m.StreamID, m.MessageID, m.Key, m.Payload))
		}
		src := "-"
		if r := g.SourceRow(); r != nil {
			src = fmt.Sprintf("%s:%d@%d", r.SourceID, r.Partition, r.Offset)
		}
		out = append(out, fmt.Sprintf("group %v %x timers %v messages %v source %s bookkeeping %d/%d", g.Key, g.KeyHash, timers, msgs, src, len(g.timers), g.inputs))
	}
	return out
}

// describeCommit is what a commit says, for comparing commits made in different memory.
func describeCommit(c *Commit) []string {
	out := []string{fmt.Sprintf("acks %v register %d empty %v", c.Acks, len(c.Register), c.Empty())}
	for _, st := range c.States {
		out = append(out, fmt.Sprintf("state %v %x %s=%q", st.Key, st.KeyHash, st.Name, st.Value))
	}
	for _, list := range []struct {
		name string
		ts   []DueTimer
	}{{"fired", c.TimersFired}, {"set", c.TimersSet}} {
		for _, t := range list.ts {
			out = append(out, fmt.Sprintf("timer %s %s %v %d", list.name, t.Timer.MessageID, t.Timer.Key, t.Timer.Trigger))
		}
	}
	for _, list := range []struct {
		name string
		outs []Out
	}{{"stored", c.Stored}, {"sync", c.Sync}, {"best effort", c.BestEffort}} {
		for _, o := range list.outs {
			out = append(out, fmt.Sprintf("%s %s %s %v %d/%d", list.name, o.Destination.ID, o.Message.MessageID, o.Message.Payload, o.Message.EventTimestamp, o.Message.SystemTimestamp))
		}
	}
	var offsets []string
	for sp, off := range c.Offsets {
		offsets = append(offsets, fmt.Sprintf("%s:%d=%d", sp.SourceID, sp.Partition, off))
	}
	sort.Strings(offsets)
	return append(out, fmt.Sprintf("offsets %v", offsets))
}

// TestPlannerReusesMemory: a Planner reused for batches of varying size and shape plans each
// as PlanEpoch does and builds each commit as BuildCommit does, and allocates less than
// PlanEpoch for a batch like the last one.
func TestPlannerReusesMemory(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	var pl Planner
	for round := range 60 {
		cfg := &Config{ComputationID: "c", PartitionID: "p", Dedup: round%3 != 0, Source: round%5 == 4}
		b := &Batch{DistinctInputs: round%2 == 0}
		n := rng.Intn(300)
		if round%7 == 0 || cfg.Source { // a source computation reads only its source
			n = 0
		}
		for i := range n {
			id := fmt.Sprintf("m%d-%d", round, i)
			if !b.DistinctInputs && i > 0 && rng.Intn(5) == 0 {
				id = b.Inputs[rng.Intn(i)].Message.MessageID // a repeat within the batch
			}
			b.Inputs = append(b.Inputs, msg(id, fmt.Sprintf("k%d", rng.Intn(40))))
		}
		timers := rng.Intn(4)
		if cfg.Source {
			timers = 0
		}
		for i := range timers {
			b.Timers = append(b.Timers, DueTimer{Timer: flow.Timer{StreamID: "t", Key: flow.Key{fmt.Sprintf("k%d", rng.Intn(40))}, MessageID: fmt.Sprintf("t%d-%d", round, i)}})
		}
		if cfg.Source {
			for i := range rng.Intn(200) {
				b.Sources = append(b.Sources, SourceRow{SourcePartition: SourcePartition{"q", 1}, Offset: int64(i), Payload: flow.Row{"v": int64(i)}})
			}
		}
		committed := func(in Input) bool { return strings.HasSuffix(in.Message.MessageID, "3") }
		fresh := PlanEpoch(cfg, b, committed)
		want := describePlan(fresh)
		p := pl.Plan(cfg, b, committed)
		require.Equal(t, want, describePlan(p), "round %d", round)

		// Results with outputs to a sync and an async sink, state changes and timers, in a
		// different mix each round.
		cfg.Routes = map[string][]Destination{"out": {{ID: "table", Kind: ToSyncSink}, {ID: "queue", Kind: ToAsyncSink}}, "log": {{ID: "q2", Kind: ToAsyncSink}}}
		b.SeqNo, b.Now = uint64(1000+round), uint64(2000+round)
		results := make([]*flow.Result, len(p.Groups))
		for i := range results {
			res := &flow.Result{}
			for j := range rng.Intn(3) {
				stream := []string{"out", "log"}[(i+j+round)%2]
				res.Outputs = append(res.Outputs, flow.Output{StreamID: stream, Payload: flow.Row{"i": int64(i), "j": int64(j)}})
			}
			if rng.Intn(3) == 0 {
				res.StateWrites = map[string][]byte{"s": []byte(fmt.Sprint(i))}
			}
			if rng.Intn(10) == 0 {
				res.Timers = []flow.Timer{{StreamID: "t", Trigger: uint64(i)}}
			}
			results[i] = res
		}
		wantCommit, err := BuildCommit(cfg, b, fresh, results)
		require.NoError(t, err)
		gotCommit, err := pl.Build(cfg, b, p, results)
		require.NoError(t, err)
		require.Equal(t, describeCommit(wantCommit), describeCommit(gotCommit), "round %d", round)
	}
	cfg := &Config{ComputationID: "c", PartitionID: "p", Dedup: true}
	b := &Batch{DistinctInputs: true}
	for i := range 500 {
		b.Inputs = append(b.Inputs, msg(fmt.Sprintf("m%d", i), fmt.Sprintf("k%d", i%50)))
	}
	no := func(Input) bool { return false }
	fresh := testing.AllocsPerRun(5, func() { PlanEpoch(cfg, b, no) })
	reused := testing.AllocsPerRun(5, func() { pl.Plan(cfg, b, no) })
	assert.Less(t, reused, fresh, "allocations per plan with a reused Planner")
}
