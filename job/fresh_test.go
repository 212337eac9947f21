// Tests of the dedup lookups a keyed job skips (freshInputs) and of the births of swift
// outputs.

package job

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
)

func freshIn(id string, born uint64) epoch.Input {
	return epoch.Input{Message: flow.Message{MessageID: id}, Born: born}
}

func TestFreshInputsRemembersAndForgets(t *testing.T) {
	f := newFreshInputs(3)
	a := freshIn("a", 150)
	assert.True(t, f.needLookup(&a), "before the first token everything is looked up")

	f.started(100)
	f.started(120) // only the first token counts
	assert.False(t, f.needLookup(&a), "born after the floor and not committed here")
	for _, in := range []epoch.Input{freshIn("x", 100), freshIn("y", 7), freshIn("z", 0)} {
		assert.True(t, f.needLookup(&in), "%s born %d, not after the floor", in.Message.MessageID, in.Born)
	}

	f.committed([]epoch.Input{a, freshIn("old", 90)})
	assert.True(t, f.needLookup(&a), "an input this job committed is looked up when it comes again")
	assert.Len(t, f.recent, 1, "an input born before the floor is not remembered")

	f.committed([]epoch.Input{freshIn("b", 160), freshIn("c", 170)})
	assert.Equal(t, uint64(100), f.floor, "3 ids held: nothing forgotten yet")
	f.committed([]epoch.Input{freshIn("d", 165)})
	// 4 > 3: the oldest epoch (a, born 150) is forgotten and the floor covers it.
	assert.Equal(t, uint64(150), f.floor)
	assert.True(t, f.needLookup(&a), "a forgotten input is looked up: its birth is not after the floor")
	for _, id := range []string{"b", "c", "d"} {
		in := freshIn(id, 200)
		assert.True(t, f.needLookup(&in), "%s is still remembered", id)
	}
	e := freshIn("e", 151)
	assert.False(t, f.needLookup(&e))

	// The same id in two remembered epochs (a collision, or a recomputed epoch) stays
	// remembered until both are forgotten.
	g := newFreshInputs(2)
	g.started(10)
	g.committed([]epoch.Input{freshIn("same", 20)})
	g.committed([]epoch.Input{freshIn("same", 30)})
	g.committed([]epoch.Input{freshIn("other", 40)}) // forgets the first epoch only
	same := freshIn("same", 31)
	assert.True(t, g.needLookup(&same), "still held by the second epoch")
	assert.Equal(t, uint64(20), g.floor)

	assert.Nil(t, newFreshInputs(-1), "a negative limit disables it")
}

// TestFreshInputsSkipLookup: inputs born after a keyed job started are not looked up in the
// dedup index, yet a copy of one the job committed is still dropped, and after a restart (new
// job, new lease) the same copy is looked up and dropped again.
func TestFreshInputsSkipLookup(t *testing.T) {
	e := startWordCount(t)
	e.putJob("split-0", "split", "split-p0", 0)
	countLease := e.putJob("count-0", "count", "count-p0", -1)
	e.write("warm")
	e.waitCounts(map[string]int64{"warm": 1})
	// Outputs of epochs of split that read after this point are born after count's first
	// epoch, which committed "warm".
	e.write("a b c")
	e.waitCounts(map[string]int64{"warm": 1, "a": 1, "b": 1, "c": 1})
	assert.GreaterOrEqual(t, e.worker.Stats()["count-0"].LookupsSkipped, int64(3), "a, b and c needed no lookup")

	born, err := e.store.GenerateTimestamp(e.ctx)
	require.NoError(t, err)
	push := func(job string) pushResponse {
		t.Helper()
		return e.pushWords(job, "handmade-1", "pushed", nil, born)
	}

	before := e.worker.Stats()["count-0"]
	assert.Equal(t, []string{"handmade-1"}, push("count-0").Acked)
	e.waitCounts(map[string]int64{"warm": 1, "a": 1, "b": 1, "c": 1, "pushed": 1})
	e.waitInboxEmpty("count-0")
	after := e.worker.Stats()["count-0"]
	assert.Equal(t, before.LookupsSkipped+1, after.LookupsSkipped, "born after the job started: not looked up")

	// The ack was lost, say: the sender pushes the same message again.
	pr := push("count-0")
	assert.Equal(t, []string{"handmade-1"}, pr.Acked, "a copy is acknowledged: %+v", pr)
	e.eventually("the copy to be dropped", func() bool { return e.worker.Stats()["count-0"].Duplicates >= 1 })
	assert.Equal(t, after.LookupsSkipped, e.worker.Stats()["count-0"].LookupsSkipped, "a committed id is looked up")

	// A new job for the partition, after the old lease is gone: the copy was born before it
	// started, so it is looked up and dropped.
	require.NoError(t, e.store.AbortLease(e.ctx, countLease))
	e.deleteJob("count-0")
	e.putJob("count-1", "count", "count-p0", -1)
	e.eventually("count-1 to run", func() bool { _, ok := e.worker.Stats()["count-1"]; return ok })
	assert.Equal(t, []string{"handmade-1"}, push("count-1").Acked)
	e.eventually("the copy to be dropped by the new job", func() bool { return e.worker.Stats()["count-1"].Duplicates >= 1 })
	assert.Zero(t, e.worker.Stats()["count-1"].LookupsSkipped)
	e.write("d")
	e.waitCounts(map[string]int64{"warm": 1, "a": 1, "b": 1, "c": 1, "pushed": 1, "d": 1})
}

func TestSwiftBirth(t *testing.T) {
	born := map[string]uint64{"p": 30, "q": 20, "unknown": 0}
	assert.Equal(t, uint64(20), swiftBirth([]string{"p", "q"}, born), "the earliest parent")
	assert.Equal(t, uint64(30), swiftBirth([]string{"p"}, born))
	assert.Zero(t, swiftBirth([]string{"p", "unknown"}, born), "a parent of unknown birth")
	assert.Zero(t, swiftBirth([]string{"p", "missing"}, born), "a parent not in the map")
	assert.Zero(t, swiftBirth(nil, born), "no parents")
}

// TestSwiftSourceOutputsBornAtTheirRow: a swift source's outputs are born when their row was
// committed to the queue (a queue whose schema has $timestamp reports it), so rows written after the reader started need no lookup; after the
// source restarts, their recomputed copies (same ids, same birth) are still recognised as
// committed by the reader that committed them.
func TestSwiftSourceOutputsBornAtTheirRow(t *testing.T) {
	// No lease check commits: the split commits only when its offset advances.
	e := startWordCountEnv(t, swiftSourceSpec, nil, func(c *Config) { c.LeaseCheckPeriod = time.Hour }, true)
	splitLease := e.putJob("split-0", "split", "split-p0", 0)
	e.putJob("count-0", "count", "count-p0", -1)
	e.write("warm")
	e.waitCounts(map[string]int64{"warm": 1})
	e.eventually("the split to commit past the first row", func() bool { return e.committedOffset("split-p0") == 1 })

	// The split's lease dies unnoticed: it still reads and delivers, but cannot commit past
	// what it read, so its successor reads the row again.
	require.NoError(t, e.store.AbortLease(e.ctx, splitLease))
	e.write("a b")
	e.waitCounts(map[string]int64{"warm": 1, "a": 1, "b": 1})
	skipped := e.worker.Stats()["count-0"].LookupsSkipped
	assert.GreaterOrEqual(t, skipped, int64(2), "a and b, written after count started, needed no lookup")
	e.eventually("the split job to stop on its refused commit", func() bool { return e.worker.runner("split-0") == nil })

	e.deleteJob("split-0")
	e.putJob("split-1", "split", "split-p0", 0)
	e.eventually("the recomputed outputs to be dropped as duplicates", func() bool { return e.worker.Stats()["count-0"].Duplicates == 2 })
	e.eventually("the new split to commit past both rows", func() bool { return e.committedOffset("split-p0") == 2 })
	assert.Equal(t, map[string]int64{"warm": 1, "a": 1, "b": 1}, e.counts(), "recomputed outputs are not counted twice")
	assert.Equal(t, skipped, e.worker.Stats()["count-0"].LookupsSkipped, "copies of committed inputs are looked up")
}

// TestSwiftMapOutputsBornWithParents: a swift map's outputs take their parents' birth, so
// its reader skips the lookup of what was produced after it started.
func TestSwiftMapOutputsBornWithParents(t *testing.T) {
	e := startWordCountSpec(t, swiftWordCountSpec, nil, nil)
	e.putJob("split-0", "split", "split-p0", 0)
	e.putJob("relay-0", "relay", "relay-p0", -1)
	e.putJob("count-0", "count", "count-p0", -1)
	e.write("warm")
	e.waitCounts(map[string]int64{"warm": 1})
	e.write("p q")
	e.waitCounts(map[string]int64{"warm": 1, "p": 1, "q": 1})
	assert.GreaterOrEqual(t, e.worker.Stats()["count-0"].LookupsSkipped, int64(2), "p and q needed no lookup")
}

// TestFreshInputsReusesForgottenArrays: the ids array of a forgotten epoch is reused for a
// later one, and what is remembered stays exactly the ids of the epochs still held.
func TestFreshInputsReusesForgottenArrays(t *testing.T) {
	f := newFreshInputs(4)
	f.started(1)
	epochIDs := func(e int) []epoch.Input {
		ins := make([]epoch.Input, 2)
		for i := range ins {
			ins[i] = freshIn(fmt.Sprintf("e%d-%d", e, i), uint64(10+e))
		}
		return ins
	}
	reused := 0
	for e := range 20 {
		spare := f.spare
		f.committed(epochIDs(e))
		last := f.epochs[len(f.epochs)-1].ids
		if spare != nil && &last[:1][0] == &spare[:1][0] {
			reused++
		}
		require.Len(t, f.epochs, min(e+1, 2), "epoch %d: two epochs of two ids fit the limit of 4", e)
		require.Equal(t, min(2*(e+1), 4), f.held)
		require.Len(t, f.recent, f.held)
		for _, held := range []int{e - 1, e} {
			if held < 0 {
				continue
			}
			for _, in := range epochIDs(held) {
				require.True(t, f.needLookup(&in), "epoch %d: %s of a held epoch is remembered", e, in.Message.MessageID)
			}
		}
		if e >= 2 {
			old := epochIDs(e - 2)[0]
			old.Born = 1000 // born after the floor: looked up only if still remembered
			require.False(t, f.needLookup(&old), "epoch %d: the forgotten epoch %d is not remembered", e, e-2)
		}
	}
	assert.Equal(t, 17, reused, "from the fourth epoch on, each reuses the array of the one it forgot before")
}

// BenchmarkFreshInputsCommitted: remembering an epoch of 1,000 inputs in a full freshInputs
// (the oldest epoch is forgotten each time).
func BenchmarkFreshInputsCommitted(b *testing.B) {
	// 100 epochs of distinct ids, more than the 65 the limit holds: an id is forgotten
	// before it comes again.
	epochs := make([][]epoch.Input, 100)
	for e := range epochs {
		epochs[e] = make([]epoch.Input, 1000)
		for j := range epochs[e] {
			epochs[e][j] = freshIn(epoch.SourceMessageID("c", epoch.SourcePartition{SourceID: "s"}, int64(e*1000+j)), 2)
		}
	}
	f := newFreshInputs(defaultFreshLimit)
	f.started(1)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		ins := epochs[i%len(epochs)]
		for j := range ins {
			ins[j].Born = uint64(i + 2) // after the floor, which rises as epochs are forgotten
		}
		f.committed(ins)
	}
}
