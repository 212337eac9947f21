package job

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/spec"
)

func streamInput(id, stream string, ts uint64) epoch.Input {
	return epoch.Input{Message: flow.Message{MessageID: id, StreamID: stream, EventTimestamp: ts, Key: flow.Key{"k"}}}
}

// TestInboxTakeOrdered: under input_ordering the inbox limit applies per stream (a stream
// ahead fills only its own share), takes follow the merge, a failed epoch's inputs are merged
// again in the same order, and acknowledged inputs free their stream's share.
func TestInboxTakeOrdered(t *testing.T) {
	c := inputOrdering(&spec.Computation{InputStreamIDs: []string{"views", "clicks"},
		InputOrdering: &spec.InputOrdering{TimeType: "event_time", StreamDelays: map[string]time.Duration{"views": 10 * time.Microsecond}}})
	require.NotNil(t, c)
	assert.Equal(t, []string{"clicks", "views"}, c.Streams)
	assert.Equal(t, uint64(10), c.Delays["views"])

	b := newInbox(2)
	b.perStream = map[string]int{}
	_, acc := b.offer([]epoch.Input{streamInput("c1", "clicks", 30), streamInput("c2", "clicks", 40), streamInput("c3", "clicks", 50)})
	assert.Len(t, acc, 2, "clicks' share is full")
	_, acc = b.offer([]epoch.Input{streamInput("v1", "views", 15), streamInput("v2", "views", 35)})
	assert.Len(t, acc, 2, "views has a share of its own")

	wm := map[string]uint64{"clicks": 30, "views": 15}
	// Stabilized: v1 25, c1 30, c2 40, v2 45. Both streams buffer: all but the watermark of a
	// stream whose queue empties. v1, c1, then views' head v2 (45) vs c2 (40): c2; then v2
	// alone, views' queue non-empty, clicks empty at 30 < 45: held.
	got, held := b.takeOrdered(nil, 10, c, wm, false)
	assert.Equal(t, 1, held, "v2 is held")
	assert.Equal(t, []string{"v1", "c1", "c2"}, inputIDs(got))
	b.release(inputIDs(got))
	assert.Equal(t, []string{"v1", "c1"}, inputIDs(first(b.takeOrdered(nil, 2, c, wm, false))), "a failed epoch's inputs are merged again")
	b.ack([]string{"v1", "c1"})
	_, acc = b.offer([]epoch.Input{streamInput("c3", "clicks", 50)})
	assert.Len(t, acc, 1, "an acknowledged input frees its stream's share")
	wm["clicks"] = 50
	// c2 40, v2 45; then c3 50 waits for views (15 + 10 = 25), released at 40 + 10 = 50.
	assert.Equal(t, []string{"c2", "v2"}, inputIDs(first(b.takeOrdered(nil, 10, c, wm, false))))
	assert.Empty(t, first(b.takeOrdered(nil, 10, c, wm, false)))
	wm["views"] = 40
	assert.Equal(t, []string{"c3"}, inputIDs(first(b.takeOrdered(nil, 10, c, wm, false))))
	b.drop()
	assert.Empty(t, b.perStream)
}

func first(ins []epoch.Input, _ int) []epoch.Input { return ins }
