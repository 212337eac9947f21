package job

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/ytstore"
)

// countFailing is CountWords, except that it fails on the words starting with the
// parameter reject_prefix ("bad" when not set: bad1, bad2 and bad3).
type countFailing struct{}

func (countFailing) Invoke(inv *flow.Invocation) (*flow.Result, error) {
	prefix := "bad"
	if p, ok := inv.Parameters["reject_prefix"].(string); ok {
		prefix = p
	}
	for _, m := range inv.Messages {
		if w, _ := m.Payload["word"].(string); strings.HasPrefix(w, prefix) {
			return nil, fmt.Errorf("word %q is bad", w)
		}
	}
	f, err := flow.Lookup("CountWords")
	if err != nil {
		return nil, err
	}
	return f.Invoke(inv)
}

func init() { flow.Register("test.CountFailing", countFailing{}) }

// TestInvokeBackoff: the wait before the next attempt doubles from 50ms up to 10s.
func TestInvokeBackoff(t *testing.T) {
	assert.Equal(t, 50*time.Millisecond, invokeBackoff(1))
	assert.Equal(t, 100*time.Millisecond, invokeBackoff(2))
	assert.Equal(t, 6400*time.Millisecond, invokeBackoff(8))
	assert.Equal(t, 10*time.Second, invokeBackoff(9))
	assert.Equal(t, 10*time.Second, invokeBackoff(1000))
}

// TestDeadLettersExactlyOnce: with failure_policy dead_letter, a keyed computation whose
// function fails on three chosen messages retries the epoch max_attempts times, then sets the
// three aside: every other word is counted exactly once, and dead_letters holds the three
// exactly once, each with its stream, key, message id, payload, error and attempts.
func TestDeadLettersExactlyOnce(t *testing.T) {
	testSetAside(t, "dead_letter")
}

// TestSkipExactlyOnce: with failure_policy skip, the same pipeline counts every other word
// exactly once, writes no dead letters and counts the three skipped messages.
func TestSkipExactlyOnce(t *testing.T) {
	testSetAside(t, "skip")
}

func testSetAside(t *testing.T, mode string) *wcEnv {
	specText := strings.Replace(wordCountSpec, `processing_function = "CountWords"`, `processing_function = "test.CountFailing"`, 1)
	require.NotEqual(t, wordCountSpec, specText)
	e := startWordCountSpec(t, specText, nil, nil)
	require.NoError(t, e.store.SetSpecs(e.ctx, ytstore.SpecUpdate{Spec: yson.RawValue(specText), SpecVersion: 1,
		DynamicSpec:        yson.RawValue(`{computations = {count = {failure_policy = {mode = ` + mode + `; max_attempts = 2}}}}`),
		DynamicSpecVersion: 1, TargetState: ytstore.TargetWorking}))
	e.write("a bad1 b", "c bad2 a", "bad3 d a")
	e.putJob("split-0", "split", "split-p0", 0)
	e.putJob("count-0", "count", "count-p0", -1)
	e.waitCounts(map[string]int64{"a": 3, "b": 1, "c": 1, "d": 1})

	if mode == "skip" {
		e.eventually("three skipped", func() bool { return e.worker.Stats()["count-0"].Skipped == 3 })
		e.write("a e")
		e.waitCounts(map[string]int64{"a": 4, "b": 1, "c": 1, "d": 1, "e": 1})
		letters, err := e.store.DeadLetters(e.ctx)
		require.NoError(t, err)
		assert.Empty(t, letters, "skip keeps nothing")
		assert.Equal(t, int64(3), e.worker.Stats()["count-0"].Skipped)
		assert.Zero(t, e.worker.Stats()["count-0"].DeadLettered)
		return e
	}
	var letters []ytstore.DeadLetterRow
	e.eventually("three dead letters", func() bool {
		var err error
		letters, err = e.store.DeadLetters(e.ctx)
		require.NoError(t, err)
		return len(letters) >= 3
	})
	require.Len(t, letters, 3)
	sort.Slice(letters, func(i, j int) bool { return letters[i].MessageID < letters[j].MessageID })
	for i, l := range letters {
		word := fmt.Sprintf("bad%d", i+1)
		assert.Equal(t, "count", l.ComputationID)
		assert.Equal(t, "words", l.StreamID)
		assert.Equal(t, "count-p0", l.PartitionID)
		assert.Contains(t, string(l.Key), word)
		assert.Contains(t, l.Error, fmt.Sprintf("word %q is bad", word))
		assert.GreaterOrEqual(t, l.Attempts, uint64(2))
		assert.False(t, l.Timer)
		assert.NotZero(t, l.DeadAt)
		var payload map[string]any
		require.NoError(t, yson.Unmarshal(l.Payload, &payload))
		assert.Equal(t, word, payload["word"])
	}
	assert.Equal(t, int64(3), e.worker.Stats()["count-0"].DeadLettered)

	// More input afterwards: processed normally, nothing set aside again.
	e.write("a e")
	e.waitCounts(map[string]int64{"a": 4, "b": 1, "c": 1, "d": 1, "e": 1})
	letters, err := e.store.DeadLetters(e.ctx)
	require.NoError(t, err)
	assert.Len(t, letters, 3, "each failing message set aside exactly once")
	assert.Equal(t, int64(3), e.worker.Stats()["count-0"].DeadLettered)
	return e
}

// TestReplayDeadLettersExactlyOnce: the three letters of TestDeadLettersExactlyOnce, after a
// dynamic spec change that makes the function accept them (reaching the running job), are
// replayed: each is counted exactly once, dead_letters is empty and the replay partition
// too. A second replay of the same letters (a command that read them before the first one
// committed) writes the same new ids, which the job's dedup drops.
func TestReplayDeadLettersExactlyOnce(t *testing.T) {
	e := testSetAside(t, "dead_letter")
	letters, err := e.store.DeadLetters(e.ctx)
	require.NoError(t, err)
	require.Len(t, letters, 3)

	// Replayed while the function still rejects them: set aside again, under the new ids.
	replays := make([]ytstore.Replay, len(letters))
	for i, l := range letters {
		replays[i] = ytstore.Replay{Letter: l, MessageID: ytstore.ReplayMessageID(l.MessageID)}
	}
	require.NoError(t, e.store.ReplayDeadLetters(e.ctx, replays, uint64(time.Now().UnixMicro())))
	var again []ytstore.DeadLetterRow
	e.eventually("three letters again, under the replayed ids", func() bool {
		again, err = e.store.DeadLetters(e.ctx)
		require.NoError(t, err)
		return len(again) == 3 && strings.HasSuffix(again[0].MessageID, "~r1")
	})
	for _, l := range again {
		assert.True(t, strings.HasSuffix(l.MessageID, "~r1"), l.MessageID)
	}
	assert.Equal(t, int64(3), e.worker.Stats()["count-0"].Replayed)

	// The dynamic spec change reaches the running job; the second replay is counted.
	require.NoError(t, e.store.SetSpecs(e.ctx, ytstore.SpecUpdate{
		DynamicSpec:        yson.RawValue(`{computations = {count = {failure_policy = {mode = dead_letter; max_attempts = 2}; processing_function_parameters = {reject_prefix = "none"}}}}`),
		DynamicSpecVersion: 2}))
	replays = replays[:0]
	for _, l := range again {
		replays = append(replays, ytstore.Replay{Letter: l, MessageID: ytstore.ReplayMessageID(l.MessageID)})
	}
	assert.True(t, strings.HasSuffix(replays[0].MessageID, "~r2"), replays[0].MessageID)
	e.eventually("the running job applies the change", func() bool { return e.worker.Stats()["count-0"].DynamicSpecVersion == 2 })
	e.write("bad4") // a word with the old prefix now counts

	e.waitCounts(map[string]int64{"a": 4, "b": 1, "c": 1, "d": 1, "e": 1, "bad4": 1})
	require.NoError(t, e.store.ReplayDeadLetters(e.ctx, replays, uint64(time.Now().UnixMicro())))
	want := map[string]int64{"a": 4, "b": 1, "c": 1, "d": 1, "e": 1, "bad1": 1, "bad2": 1, "bad3": 1, "bad4": 1}
	e.waitCounts(want)
	e.eventually("replayed and processed", func() bool { return e.worker.Stats()["count-0"].Replayed == 6 })
	left, err := e.store.DeadLetters(e.ctx)
	require.NoError(t, err)
	assert.Empty(t, left, "replay deletes the letters")
	msgs, timers, err := e.store.LoadReplays(e.ctx, "count", 0, 0)
	require.NoError(t, err)
	assert.Empty(t, msgs, "the job deleted the replay rows it processed")
	assert.Empty(t, timers)

	// The same letters replayed once more (read before the replay above committed): same
	// ids, dropped by dedup, the replay rows deleted all the same.
	require.NoError(t, e.store.ReplayDeadLetters(e.ctx, replays, uint64(time.Now().UnixMicro())))
	e.eventually("the repeated replay consumed", func() bool { return e.worker.Stats()["count-0"].Replayed == 9 })
	e.write("a")
	want["a"]++
	e.waitCounts(want)
	msgs, _, err = e.store.LoadReplays(e.ctx, "count", 0, 0)
	require.NoError(t, err)
	assert.Empty(t, msgs)
}

// countTimerFailing counts words like CountWords and, for a word starting with "t", sets a
// timer on stream tick; when the timer fires it adds 100 to the word's count, unless the
// parameter reject_timers is true, when it fails.
type countTimerFailing struct{}

func (countTimerFailing) Invoke(inv *flow.Invocation) (*flow.Result, error) {
	if len(inv.Timers) > 0 {
		if reject, _ := inv.Parameters["reject_timers"].(bool); reject {
			return nil, fmt.Errorf("timer %s rejected", inv.Timers[0].MessageID)
		}
	}
	var n int64
	if b := inv.State["count"]; b != nil {
		if err := yson.Unmarshal(b, &n); err != nil {
			return nil, err
		}
	}
	n += int64(len(inv.Messages)) + 100*int64(len(inv.Timers))
	b, err := yson.Marshal(n)
	if err != nil {
		return nil, err
	}
	hash, _ := inv.Key[0].(uint64)
	word, _ := inv.Key[1].(string)
	res := &flow.Result{StateWrites: map[string][]byte{"count": b},
		Outputs: []flow.Output{{StreamID: "counts", Payload: flow.Row{"hash": hash, "word": word, "count": n}}}}
	if len(inv.Messages) > 0 && strings.HasPrefix(word, "t") {
		res.Timers = []flow.Timer{{StreamID: "tick", Trigger: inv.Now}}
	}
	return res, nil
}

func init() { flow.Register("test.CountTimerFailing", countTimerFailing{}) }

// TestReplayDeadTimer: a timer whose handler keeps failing is set aside as a timer letter
// (with its stream and trigger); once a dynamic spec change makes the handler accept it,
// replay fires it as a timer, exactly once, and the replay partition is left empty.
func TestReplayDeadTimer(t *testing.T) {
	specText := strings.Replace(wordCountSpec, `processing_function = "CountWords";`,
		`processing_function = "test.CountTimerFailing"; timer_streams = {tick = {time_type = "current_time"}};`, 1)
	require.NotEqual(t, wordCountSpec, specText)
	e := startWordCountSpec(t, specText, nil, nil)
	require.NoError(t, e.store.SetSpecs(e.ctx, ytstore.SpecUpdate{Spec: yson.RawValue(specText), SpecVersion: 1,
		DynamicSpec:        yson.RawValue(`{computations = {count = {failure_policy = {mode = dead_letter; max_attempts = 2}; processing_function_parameters = {reject_timers = %true}}}}`),
		DynamicSpecVersion: 1, TargetState: ytstore.TargetWorking}))
	e.putJob("split-0", "split", "split-p0", 0)
	e.putJob("count-0", "count", "count-p0", -1)
	e.write("a tick b")
	e.waitCounts(map[string]int64{"a": 1, "b": 1, "tick": 1})
	var letters []ytstore.DeadLetterRow
	e.eventually("the timer set aside", func() bool {
		var err error
		letters, err = e.store.DeadLetters(e.ctx)
		require.NoError(t, err)
		return len(letters) > 0
	})
	require.Len(t, letters, 1)
	l := letters[0]
	assert.True(t, l.Timer)
	assert.Equal(t, "tick", l.StreamID)
	assert.NotZero(t, l.Trigger)
	assert.Contains(t, l.Error, "rejected")
	assert.Contains(t, string(l.Key), "tick")

	require.NoError(t, e.store.SetSpecs(e.ctx, ytstore.SpecUpdate{
		DynamicSpec:        yson.RawValue(`{computations = {count = {failure_policy = {mode = dead_letter; max_attempts = 2}}}}`),
		DynamicSpecVersion: 2}))
	e.eventually("the running job applies the change", func() bool { return e.worker.Stats()["count-0"].DynamicSpecVersion == 2 })
	require.NoError(t, e.store.ReplayDeadLetters(e.ctx, []ytstore.Replay{{Letter: l, MessageID: ytstore.ReplayMessageID(l.MessageID)}}, uint64(time.Now().UnixMicro())))
	e.waitCounts(map[string]int64{"a": 1, "b": 1, "tick": 101})
	e.eventually("the replay counted", func() bool { return e.worker.Stats()["count-0"].Replayed == 1 })
	msgs, timers, err := e.store.LoadReplays(e.ctx, "count", 0, 0)
	require.NoError(t, err)
	assert.Empty(t, msgs)
	assert.Empty(t, timers, "the job deleted the replayed timer's row")
	left, err := e.store.DeadLetters(e.ctx)
	require.NoError(t, err)
	assert.Empty(t, left)
	e.write("a")
	e.waitCounts(map[string]int64{"a": 2, "b": 1, "tick": 101})
}
