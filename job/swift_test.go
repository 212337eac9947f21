// Tests of swift map jobs: parents acknowledged after their children, recomputation,
// payload mismatches and relaxed batching.

package job

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/ytstore"
)

// TestSwiftParentAckedAfterChildren: a swift parent counts as processed only once each of
// its outputs reached each destination; a parent without outputs is processed at once.
func TestSwiftParentAckedAfterChildren(t *testing.T) {
	o := newOutbox()
	rows := []ytstore.OutputRow{
		{Destination: "d1", MessageID: "a/00", SystemTimestamp: 5},
		{Destination: "d2", MessageID: "a/00", SystemTimestamp: 5},
		{Destination: "d1", MessageID: "a/01", SystemTimestamp: 5},
		{Destination: "d1", MessageID: "b/00", SystemTimestamp: 6},
	}
	childless := o.addSwift([]string{"a", "b", "c"}, rows, [][]string{{"a"}, {"a"}, {"a"}, {"b"}})
	assert.Equal(t, []string{"c"}, childless)
	assert.Equal(t, 4, o.held())
	assert.Equal(t, uint64(5), o.minSystemTS())

	assert.Empty(t, o.finish("p", "d1", []string{"a/00", "a/01"}), "a/00 is not delivered to d2 yet")
	assert.Equal(t, []string{"b"}, o.finish("p", "d1", []string{"b/00"}))
	assert.Empty(t, o.finish("p", "d1", []string{"a/00"}), "a repeated acknowledgement counts once")
	assert.Equal(t, []string{"a"}, o.finish("p", "d2", []string{"a/00"}))
	assert.Equal(t, 0, o.held(), "swift outputs leave no output store rows to delete")
	assert.Empty(t, o.takeDone())
}

const swiftWordCountSpec = `{
  computations = {
    split = {
      computation_class_name = "NYT::NFlow::TProcessFunctionSourceComputation";
      processing_function = "SplitWords";
      source_streams = {
        lines = {
          source_class_name = "NYT::NFlow::TQueueSource";
          parameters = {queue_path = "//tmp/wc/input"; consumer_path = "//tmp/wc/consumer"};
        };
      };
      output_stream_ids = ["words"];
    };
    relay = {
      computation_class_name = "NYT::NFlow::TSwiftPassthroughComputation";
      group_by_schema = [
        {name = "hash"; type = "uint64"; required = %true; expression = "farm_hash(word)"};
        {name = "word"; type = "string"; required = %true};
      ];
      input_stream_ids = ["words"];
      output_stream_ids = ["relayed"];
    };
    count = {
      computation_class_name = "NYT::NFlow::TProcessFunctionComputation";
      processing_function = "CountWords";
      group_by_schema = [
        {name = "hash"; type = "uint64"; required = %true; expression = "farm_hash(word)"};
        {name = "word"; type = "string"; required = %true};
      ];
      input_stream_ids = ["relayed"];
      output_stream_ids = ["counts"];
      sinks = {
        table = {
          sink_class_name = "NYT::NFlow::NSortedDynamicTable::TSyncSink";
          input_stream_ids = ["counts"];
          parameters = {table_path = "//tmp/wc/counts"};
        };
      };
    };
  };
  streams = {
    relayed = {schema = [{name = "word"; type = "string"; required = %true}]};
    words = {schema = [{name = "word"; type = "string"; required = %true}]};
    counts = {schema = [{name = "hash"; type = "uint64"}; {name = "word"; type = "string"}; {name = "count"; type = "int64"}]};
  };
}`

// TestSwiftMapRecomputes: a swift map stage persists nothing, holds its inputs
// unacknowledged until its outputs are delivered, and, restarted with undelivered outputs,
// gets its inputs again and recomputes them; the counts stay exact.
func TestSwiftMapRecomputes(t *testing.T) {
	e := startWordCountSpec(t, swiftWordCountSpec, nil, nil)
	e.putJob("split-0", "split", "split-p0", 0)
	e.putJob("relay-0", "relay", "relay-p0", -1)
	e.write("x y", "x")
	// No reader for the relay's outputs yet: it holds its inputs and outputs in flight.
	e.eventually("the relay to hold three words", func() bool {
		st := e.worker.Stats()["relay-0"]
		return st.InboxLen == 3 && st.OutboxLen == 3
	})
	outs, err := e.store.LoadOutputs(e.ctx, "relay-p0")
	require.NoError(t, err)
	assert.Empty(t, outs, "a swift stage writes no output store rows")
	splitOuts, err := e.store.LoadOutputs(e.ctx, "split-p0")
	require.NoError(t, err)
	assert.Len(t, splitOuts, 3, "the upstream keeps the parents until the swift children are delivered")

	// Restart the relay: the new job gets the parents again and recomputes them.
	e.deleteJob("relay-0")
	e.putJob("relay-1", "relay", "relay-p0", -1)
	e.putJob("count-0", "count", "count-p0", -1)
	e.waitCounts(map[string]int64{"x": 2, "y": 1})
	e.eventually("the upstream output store to drain", func() bool {
		outs, err := e.store.LoadOutputs(e.ctx, "split-p0")
		require.NoError(t, err)
		return len(outs) == 0
	})
	e.write("y z")
	e.waitCounts(map[string]int64{"x": 2, "y": 2, "z": 1})
}

// TestInboxReportsPayloadMismatch: a message received again with the same payload is a plain
// retransmission; with another payload it is counted and described, and the first copy stays.
func TestInboxReportsPayloadMismatch(t *testing.T) {
	b := newInbox(10)
	in := func(v string) epoch.Input {
		return epoch.Input{Message: flow.Message{StreamID: "s", MessageID: "a/00", Payload: flow.Row{"v": v}}}
	}
	b.offer([]epoch.Input{in("x")})
	b.offer([]epoch.Input{in("x")})
	n, _ := b.payloadMismatches()
	assert.Equal(t, int64(0), n, "a retransmission with the same payload")
	b.offer([]epoch.Input{in("y")})
	n, last := b.payloadMismatches()
	assert.Equal(t, int64(1), n)
	assert.Contains(t, last, "message a/00 on stream s was received again with another payload")
	taken := b.take(10)
	require.Len(t, taken, 1)
	assert.Equal(t, flow.Row{"v": "x"}, taken[0].Message.Payload, "the first copy is kept")
}

// TestSwiftRelaxedBatching: with relaxed batching an output with several parents holds each
// of them until it is delivered.
func TestSwiftRelaxedBatching(t *testing.T) {
	o := newOutbox()
	rows := []ytstore.OutputRow{{Destination: "d", MessageID: "ab"}, {Destination: "d", MessageID: "b"}}
	assert.Empty(t, o.addSwift([]string{"a", "b"}, rows, [][]string{{"a", "b"}, {"b"}}))
	assert.Empty(t, o.finish("p", "d", []string{"b"}), "b still has an undelivered output")
	assert.ElementsMatch(t, []string{"a", "b"}, o.finish("p", "d", []string{"ab"}))
}

// TestInboxKeepsOrderAcrossRetransmissions: the sender pushes pending outputs in id order (=
// production order) and retransmits what was not acknowledged in the same order; the inbox
// accepts a prefix when full and hands inputs out in arrival order, so the messages of one
// producer are processed in production order even when some were retransmitted.
func TestInboxKeepsOrderAcrossRetransmissions(t *testing.T) {
	o := newOutbox()
	var rows []ytstore.OutputRow
	for _, parent := range []string{"p:1a", "p:00", "p:19"} { // parents in LexUint offset order: 0, 9, 10
		for i := range uint64(2) {
			rows = append(rows, ytstore.OutputRow{Destination: "d", MessageID: epoch.SwiftOutputID(parent, i)})
		}
	}
	o.add(rows)
	var sent []epoch.Input
	for _, r := range o.snapshot("d") {
		sent = append(sent, epoch.Input{Message: flow.Message{StreamID: "s", MessageID: r.MessageID}})
	}
	wantOrder := []string{"p:00/00", "p:00/01", "p:19/00", "p:19/01", "p:1a/00", "p:1a/01"}
	ids := func(ins []epoch.Input) []string {
		var out []string
		for _, in := range ins {
			out = append(out, in.Message.MessageID)
		}
		return out
	}
	require.Equal(t, wantOrder, ids(sent))

	b := newInbox(3)
	b.offer(sent) // a full inbox accepts the first three only
	first := b.take(10)
	assert.Equal(t, wantOrder[:3], ids(first))
	b.ack(ids(first[:2]))
	b.offer(sent[2:]) // the retransmission of everything not acknowledged, in the same order
	assert.Equal(t, wantOrder[3:5], ids(b.take(10)), "the next messages follow in order")
	b.ack(wantOrder[2:5])
	b.offer(sent[5:])
	assert.Equal(t, wantOrder[5:], ids(b.take(10)))
}

// relayFailing is a swift map relaying words, except that it fails on those starting with
// "bad" after emitting them (a child made before the failure must not escape).
func relayFailing(c *flow.Context, m *flow.Message) error {
	w, _ := m.Payload["word"].(string)
	c.AddMessage("relayed", flow.Row{"word": w})
	if strings.HasPrefix(w, "bad") {
		return fmt.Errorf("word %q is bad", w)
	}
	return nil
}

func init() { flow.Register("test.RelayFailing", flow.PerMessage(relayFailing)) }

// TestSwiftDeadLetters: with failure_policy dead_letter a swift map sets its failing parents
// aside as one with their children: dead_letters holds each exactly once, no child of them
// reaches the count, every other word is counted exactly once, and the upstream output store
// drains (the set-aside parents are acknowledged).
func TestSwiftDeadLetters(t *testing.T) {
	specText := strings.Replace(swiftWordCountSpec, `computation_class_name = "NYT::NFlow::TSwiftPassthroughComputation";`,
		`computation_class_name = "NYT::NFlow::TProcessFunctionSwiftMapComputation"; processing_function = "test.RelayFailing";`, 1)
	require.NotEqual(t, swiftWordCountSpec, specText)
	e := startWordCountSpec(t, specText, nil, nil)
	require.NoError(t, e.store.SetSpecs(e.ctx, ytstore.SpecUpdate{Spec: yson.RawValue(specText), SpecVersion: 1,
		DynamicSpec:        yson.RawValue(`{computations = {relay = {failure_policy = {mode = dead_letter; max_attempts = 2}}}}`),
		DynamicSpecVersion: 1, TargetState: ytstore.TargetWorking}))
	e.putJob("split-0", "split", "split-p0", 0)
	e.putJob("relay-0", "relay", "relay-p0", -1)
	e.putJob("count-0", "count", "count-p0", -1)
	e.write("a bad1 b", "bad2 a")
	e.waitCounts(map[string]int64{"a": 2, "b": 1})
	var letters []ytstore.DeadLetterRow
	e.eventually("two dead letters", func() bool {
		var err error
		letters, err = e.store.DeadLetters(e.ctx)
		require.NoError(t, err)
		return len(letters) >= 2
	})
	e.eventually("the upstream output store to drain", func() bool {
		outs, err := e.store.LoadOutputs(e.ctx, "split-p0")
		require.NoError(t, err)
		return len(outs) == 0
	})
	e.write("c a")
	e.waitCounts(map[string]int64{"a": 3, "b": 1, "c": 1})
	letters, err := e.store.DeadLetters(e.ctx)
	require.NoError(t, err)
	require.Len(t, letters, 2)
	for _, l := range letters {
		assert.Equal(t, "relay", l.ComputationID)
		assert.Contains(t, l.Error, "is bad")
	}
	assert.Equal(t, int64(2), e.worker.Stats()["relay-0"].DeadLettered)
}
