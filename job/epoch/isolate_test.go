package epoch

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/flow"
)

// isolatePlan is a plan of four keys with three messages each, and a due timer on key k1.
func isolatePlan() []*Group {
	var groups []*Group
	for k := 0; k < 4; k++ {
		g := &Group{Key: flow.Key{fmt.Sprintf("k%d", k)}}
		for m := 0; m < 3; m++ {
			g.Messages = append(g.Messages, flow.Message{MessageID: fmt.Sprintf("m%d.%d", k, m), Key: g.Key})
		}
		if k == 1 {
			g.Timers = []flow.Timer{{Key: g.Key, StreamID: "t", Trigger: 7}}
			g.timers = []DueTimer{{Timer: g.Timers[0]}}
		}
		groups = append(groups, g)
	}
	return groups
}

// failingOn is a fails predicate: an invocation fails when it holds one of the messages bad,
// or a timer when timer is set, or both of the messages pair (a failure of the two together).
func failingOn(bad map[string]bool, timer bool, pair [2]string) func(*Group) bool {
	return func(g *Group) bool {
		if timer && len(g.Timers) > 0 {
			return true
		}
		seen := 0
		for _, m := range g.Messages {
			if bad[m.MessageID] {
				return true
			}
			if m.MessageID == pair[0] || m.MessageID == pair[1] {
				seen++
			}
		}
		return seen == 2
	}
}

func failedIDs(failed []Failed) []string {
	var out []string
	for _, f := range failed {
		if f.Message != nil {
			out = append(out, f.Message.MessageID)
		} else {
			out = append(out, fmt.Sprintf("timer %v@%d", f.Key[0], f.Timer.Trigger))
		}
	}
	return out
}

func msgIDs(g *Group) []string {
	var out []string
	for _, m := range g.Messages {
		out = append(out, m.MessageID)
	}
	return out
}

// TestIsolateDeterministic: Isolate sets aside exactly the messages and timers that fail alone
// (or a group whose messages fail only together), keeps the rest of their groups and every
// other group as it was, keeps the bookkeeping (timers to fire) of a group it copies, and sets
// aside the same ones on every attempt: seeded random failing sets, each isolated three
// times over fresh copies of the plan, give the same result.
func TestIsolateDeterministic(t *testing.T) {
	groups := isolatePlan()
	kept, failed := Isolate(groups, failingOn(map[string]bool{"m0.1": true, "m2.0": true, "m2.2": true}, true, [2]string{"m3.0", "m3.2"}))
	assert.Equal(t, []string{"m0.1", "timer k1@7", "m2.0", "m2.2", "m3.0", "m3.1", "m3.2"}, failedIDs(failed))
	require.Len(t, kept, 4)
	assert.Equal(t, []string{"m0.0", "m0.2"}, msgIDs(kept[0]))
	assert.Equal(t, []string{"m1.0", "m1.1", "m1.2"}, msgIDs(kept[1]))
	assert.Empty(t, kept[1].Timers, "the failing timer is not invoked")
	assert.Len(t, kept[1].timers, 1, "but is fired with the commit")
	assert.Equal(t, []string{"m2.1"}, msgIDs(kept[2]))
	assert.True(t, kept[3].Empty(), "messages failing only together set their group aside")
	assert.Equal(t, 3, len(groups[0].Messages), "the plan's groups are not changed")

	kept, failed = Isolate(isolatePlan(), failingOn(nil, false, [2]string{}))
	assert.Empty(t, failed)
	assert.Equal(t, isolatePlan(), kept, "nothing failing: the plan as it was")

	rng := rand.New(rand.NewSource(40))
	for round := 0; round < 200; round++ {
		bad := map[string]bool{}
		for k := 0; k < 4; k++ {
			for m := 0; m < 3; m++ {
				if rng.Intn(5) == 0 {
					bad[fmt.Sprintf("m%d.%d", k, m)] = true
				}
			}
		}
		timer := rng.Intn(2) == 0
		fails := failingOn(bad, timer, [2]string{})
		_, first := Isolate(isolatePlan(), fails)
		for attempt := 0; attempt < 3; attempt++ {
			_, again := Isolate(isolatePlan(), fails)
			require.Equal(t, failedIDs(first), failedIDs(again), "round %d (seed 40): attempt %d", round, attempt)
		}
		var want []string
		for _, f := range first {
			if f.Message != nil {
				want = append(want, f.Message.MessageID)
			}
		}
		var got []string
		for k := 0; k < 4; k++ {
			for m := 0; m < 3; m++ {
				if id := fmt.Sprintf("m%d.%d", k, m); bad[id] {
					got = append(got, id)
				}
			}
		}
		assert.Equal(t, got, want, "round %d (seed 40): exactly the bad messages", round)
	}
}
