// Tests of event time: assigned event timestamps, job event watermarks, alignment holds,
// idleness and the delays of event_time timer streams.

package job

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytstore"
)

func eventRunner(ws *spec.WatermarkStrategy) *runner {
	r := testRunner(nil, nil, "p", "lease")
	r.comp.Watermark = ws
	r.inbox = newInbox(100)
	r.outbox = newOutbox()
	return r
}

// TestAssignEventTimes: event_timestamp_assigner takes an output's event time from its
// payload column (seconds or milliseconds → µs), capped at its system time on request; an
// output without the column keeps the inherited time; a column of another type is an error
// naming the output and the column.
func TestAssignEventTimes(t *testing.T) {
	out := func(id string, payload flow.Row) epoch.Out {
		return epoch.Out{Message: flow.Message{MessageID: id, StreamID: "raw", Payload: payload, EventTimestamp: 7, SystemTimestamp: 2_000_000_000}}
	}
	outs := []epoch.Out{out("s", flow.Row{"ts": int64(1500)}), out("none", flow.Row{}), out("null", flow.Row{"ts": nil}), out("u", flow.Row{"ts": uint64(3)})}
	require.NoError(t, eventRunner(&spec.WatermarkStrategy{AssignerColumn: "ts", AssignerFormat: "seconds"}).assignEventTimes(outs))
	assert.Equal(t, []uint64{1_500_000_000, 7, 7, 3_000_000}, []uint64{outs[0].Message.EventTimestamp, outs[1].Message.EventTimestamp, outs[2].Message.EventTimestamp, outs[3].Message.EventTimestamp})

	ms := []epoch.Out{out("m", flow.Row{"ts": int64(1500)})}
	require.NoError(t, eventRunner(&spec.WatermarkStrategy{AssignerColumn: "ts", AssignerFormat: "milliseconds"}).assignEventTimes(ms))
	assert.Equal(t, uint64(1_500_000), ms[0].Message.EventTimestamp)

	capped := []epoch.Out{out("c", flow.Row{"ts": int64(5000)})}
	require.NoError(t, eventRunner(&spec.WatermarkStrategy{AssignerColumn: "ts", AssignerFormat: "seconds", LimitBySystemTimestamp: true}).assignEventTimes(capped))
	assert.Equal(t, uint64(2_000_000_000), capped[0].Message.EventTimestamp, "limit_by_system_timestamp caps it at the system time")

	bad := []epoch.Out{out("bad", flow.Row{"ts": "yesterday"})}
	err := eventRunner(&spec.WatermarkStrategy{AssignerColumn: "ts", AssignerFormat: "seconds"}).assignEventTimes(bad)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `output bad on stream raw: event_timestamp_assigner column "ts": want an integer (seconds), got string`)
	neg := []epoch.Out{out("neg", flow.Row{"ts": int64(-1)})}
	require.Error(t, eventRunner(&spec.WatermarkStrategy{AssignerColumn: "ts", AssignerFormat: "seconds"}).assignEventTimes(neg))

	untouched := []epoch.Out{out("x", flow.Row{"ts": int64(1)})}
	require.NoError(t, eventRunner(nil).assignEventTimes(untouched))
	assert.Equal(t, uint64(7), untouched[0].Message.EventTimestamp, "without an assigner outputs keep their inherited time")
}

// TestJobEventWatermark: a job's event bound is the smallest event time it holds (inbox,
// undelivered outputs) and, for a source job not yet completed, the largest event time read
// minus the generator's out-of-orderness bound (1: nothing read yet); 0 when nothing bounds it.
func TestJobEventWatermark(t *testing.T) {
	r := eventRunner(nil)
	assert.Equal(t, uint64(0), r.eventWatermark(), "a keyed job holding nothing does not bound it")
	r.inbox.offer([]epoch.Input{{Message: flow.Message{MessageID: "m1", EventTimestamp: 900}}, {Message: flow.Message{MessageID: "m2", EventTimestamp: 400}}})
	assert.Equal(t, uint64(400), r.eventWatermark(), "held inputs hold it back")
	r.outbox.add([]ytstore.OutputRow{{Destination: "d", MessageID: "o1", EventTimestamp: 250}})
	assert.Equal(t, uint64(250), r.eventWatermark(), "undelivered outputs hold it back")

	src := eventRunner(&spec.WatermarkStrategy{Generator: true, OutOfOrderness: time.Millisecond})
	src.sources = []*sourceState{{id: "in"}}
	assert.Equal(t, uint64(1), src.eventWatermark(), "a source that read nothing is at the beginning of time")
	src.noteEventTimes(&epoch.Batch{Sources: []epoch.SourceRow{{EventTimestamp: 5000}, {EventTimestamp: 8000}, {EventTimestamp: 6000}}}, nil)
	assert.Equal(t, uint64(7000), src.eventWatermark(), "largest read, 8000, minus the 1 ms bound")
	src.noteEventTimes(&epoch.Batch{Sources: []epoch.SourceRow{{EventTimestamp: 3000}}}, nil)
	assert.Equal(t, uint64(7000), src.eventWatermark(), "a late row does not move it back")
	src.completed.Store(true)
	assert.Equal(t, uint64(0), src.eventWatermark(), "an exhausted source no longer bounds it")
}

// TestPercentileWatermark: a source job with watermark_percentile bounds its in-flight outputs
// by max(smallest, percentile − delay) (internal/watermark.PercentileBound), and still by its
// estimate; once its source is exhausted every held output counts again.
func TestPercentileWatermark(t *testing.T) {
	r := eventRunner(&spec.WatermarkStrategy{Generator: true, Percentile: &spec.WatermarkPercentile{Value: 100, Delay: 60 * time.Microsecond}}) // µs
	r.sources = []*sourceState{{id: "in"}}
	r.noteEventTimes(&epoch.Batch{Sources: []epoch.SourceRow{{EventTimestamp: 1000}}}, nil)
	r.outbox.add([]ytstore.OutputRow{{Destination: "d", MessageID: "o1", EventTimestamp: 100}, {Destination: "d", MessageID: "o2", EventTimestamp: 500}, {Destination: "d", MessageID: "o3", EventTimestamp: 520}})
	assert.Equal(t, uint64(460), r.eventWatermark(), "held outputs: max(100, 520 − 60)")
	r.completed.Store(true)
	assert.Equal(t, uint64(100), r.eventWatermark(), "once the source is exhausted every held output counts again")
}

// TestAlignmentHold: with watermark_alignment a source job holds its reads back while its
// estimate is more than drift_bound ahead of the published EventWatermark (stall) and reads
// again once the watermark catches up (release); without the setting, or in a pipeline without
// event watermarks, it never holds. Values by hand: estimate = 1000 − 10 (out-of-orderness)
// = 990; held while 990 − ew > 100.
func TestAlignmentHold(t *testing.T) {
	r := eventRunner(&spec.WatermarkStrategy{Generator: true, OutOfOrderness: 10 * time.Microsecond,
		Alignment: &spec.WatermarkAlignment{DriftBound: 100 * time.Microsecond}})
	r.sources = []*sourceState{{id: "in"}}
	r.w.eventTime.Store(eventTimeWatermark)
	r.noteEventTimes(&epoch.Batch{Sources: []epoch.SourceRow{{EventTimestamp: 1000}}}, nil) // estimate 990
	r.w.eventWatermark.Store(800)
	assert.True(t, r.alignmentHold(), "990 is 190 ahead of 800")
	r.w.eventWatermark.Store(889)
	assert.True(t, r.alignmentHold(), "101 ahead: one past the bound")
	r.w.eventWatermark.Store(890)
	assert.False(t, r.alignmentHold(), "100 ahead: within the bound")
	r.w.eventWatermark.Store(math.MaxUint64)
	assert.False(t, r.alignmentHold(), "every source exhausted")
	assert.Equal(t, int64(2), r.jobStats().AlignmentHolds)

	free := eventRunner(&spec.WatermarkStrategy{Generator: true})
	free.sources = []*sourceState{{id: "in"}}
	free.w.eventTime.Store(eventTimeWatermark)
	free.noteEventTimes(&epoch.Batch{Sources: []epoch.SourceRow{{EventTimestamp: 1_000_000_000}}}, nil)
	free.w.eventWatermark.Store(1)
	assert.False(t, free.alignmentHold(), "no watermark_alignment")

	old := eventRunner(&spec.WatermarkStrategy{Generator: true, Alignment: &spec.WatermarkAlignment{DriftBound: time.Microsecond}})
	old.sources = []*sourceState{{id: "in"}}
	old.w.eventTime.Store(eventTimeWallClock)
	old.noteEventTimes(&epoch.Batch{Sources: []epoch.SourceRow{{EventTimestamp: 1_000_000_000}}}, nil)
	assert.False(t, old.alignmentHold(), "a pipeline without event watermarks (older version) is never held")
}

// TestAlignmentWaitsForFirstWatermark: a source with watermark_alignment reads nothing until
// the worker has read a watermark of its group (nor while it is not known whether the
// pipeline has event watermarks); once the group's first watermark (1: every source at the
// beginning of time) is read, it reads its first epoch and is then held at drift_bound.
func TestAlignmentWaitsForFirstWatermark(t *testing.T) {
	r := eventRunner(&spec.WatermarkStrategy{Generator: true,
		Alignment: &spec.WatermarkAlignment{GroupName: "g", DriftBound: 100 * time.Microsecond}})
	r.sources = []*sourceState{{id: "in"}}
	assert.True(t, r.alignmentHold(), "not known yet whether the pipeline has event watermarks")
	r.w.eventTime.Store(eventTimeWatermark)
	assert.True(t, r.alignmentHold(), "no watermark read yet")
	r.w.eventWatermarks.Store(&ytstore.EventWatermarks{Streams: map[string]uint64{"in": 1}, Groups: map[string]uint64{}})
	assert.True(t, r.alignmentHold(), "watermarks published, but none of group g yet")
	r.w.eventWatermarks.Store(&ytstore.EventWatermarks{Groups: map[string]uint64{"g": 1}})
	assert.False(t, r.alignmentHold(), "the group's first watermark: estimate 1 is not ahead of it")
	r.noteEventTimes(&epoch.Batch{Sources: []epoch.SourceRow{{EventTimestamp: 5000}}}, nil)
	assert.True(t, r.alignmentHold(), "after the first epoch, 5000 is 4999 ahead of the group")
	assert.Equal(t, int64(4), r.jobStats().AlignmentHolds, "every held epoch counts, the waits for the first watermark too")
}

// TestEventIdleSince: a source job is idle from the first read that found nothing after the
// last that found rows, reports it only while it holds no message and its sources are open,
// and is busy again at the next row; a keyed job never reports it.
func TestEventIdleSince(t *testing.T) {
	keyed := eventRunner(nil)
	keyed.noteSourceRead(0, 100) // not a source job: never called by it, and never reported
	assert.Equal(t, uint64(0), keyed.eventIdleSince())

	r := eventRunner(&spec.WatermarkStrategy{Generator: true})
	r.sources = []*sourceState{{id: "in"}}
	assert.Equal(t, uint64(0), r.eventIdleSince(), "not idle before any read")
	r.noteSourceRead(3, 100)
	assert.Equal(t, uint64(0), r.eventIdleSince(), "rows read: busy")
	r.noteSourceRead(0, 200)
	r.noteSourceRead(0, 300)
	assert.Equal(t, uint64(200), r.eventIdleSince(), "idle since the first empty read")

	r.outbox.add([]ytstore.OutputRow{{Destination: "d", MessageID: "o1", EventTimestamp: 250}})
	assert.Equal(t, uint64(0), r.eventIdleSince(), "an undelivered output is held: not reported idle")
	r.outbox.finish("p", "d", []string{"o1"})
	assert.Equal(t, uint64(200), r.eventIdleSince(), "delivered: idle again, since the same time")
	w, _ := r.inbox.offer([]epoch.Input{{Message: flow.Message{MessageID: "m1", EventTimestamp: 900}}})
	assert.Equal(t, uint64(0), r.eventIdleSince(), "a buffered input is held: not reported idle")
	r.inbox.ack([]string{"m1"})
	<-w.done

	r.noteSourceRead(1, 400)
	assert.Equal(t, uint64(0), r.eventIdleSince(), "a row ends the idle period")
	r.noteSourceRead(0, 500)
	assert.Equal(t, uint64(500), r.eventIdleSince())
	r.completed.Store(true)
	assert.Equal(t, uint64(0), r.eventIdleSince(), "an exhausted source is not idle: it no longer bounds the watermark")
}

// TestEventTimerStreamDelays: an event_time timer stream's time is the pipeline
// EventWatermark shifted back by the largest delay of its streams_with_delays; +inf (every
// source exhausted) stays +inf, and a delay larger than the watermark gives 0.
func TestEventTimerStreamDelays(t *testing.T) {
	delayed := &spec.Timer{ID: "t", TimeType: "event_time", StreamsWithDelays: map[string]time.Duration{"a": time.Second, "b": 3 * time.Second}}
	assert.Equal(t, uint64(7_000_000), eventClock(10_000_000, delayed))
	assert.Equal(t, uint64(10_000_000), eventClock(10_000_000, &spec.Timer{ID: "plain", TimeType: "event_time"}))
	assert.Equal(t, uint64(10_000_000), eventClock(10_000_000, nil))
	assert.Equal(t, uint64(math.MaxUint64), eventClock(math.MaxUint64, delayed))
	assert.Equal(t, uint64(0), eventClock(2_000_000, delayed))

	r := eventRunner(nil)
	r.comp.Timers = map[string]*spec.Timer{"t": delayed}
	r.w.eventTime.Store(eventTimeWatermark)
	r.w.eventWatermark.Store(10_000_000)
	assert.Equal(t, uint64(7_000_000), r.timerClock(123, false)("t"), "the runner's clock applies the delay")
	r.w.eventTime.Store(eventTimeUnknown)
	assert.Equal(t, uint64(0), r.timerClock(123, false)("t"), "nothing fires while it is unknown whether the pipeline has event watermarks")
	r.w.eventTime.Store(eventTimeWallClock)
	assert.Equal(t, uint64(123), r.timerClock(123, false)("t"), "pipelines without event watermarks keep the wall clock")
}

// TestEventTimersPerStream: with per-stream watermarks published, an event_time timer stream's
// time is the minimum over the streams it waits for (those it names, else every input), each
// shifted back by its own delay, capped by the messages the job holds; a stream not published
// yet keeps every timer of the stream from firing.
func TestEventTimersPerStream(t *testing.T) {
	r := eventRunner(nil)
	r.comp.InputStreamIDs = []string{"clicks", "views"}
	r.comp.Timers = map[string]*spec.Timer{
		"all":     {ID: "all", TimeType: "event_time"},
		"clicks":  {ID: "clicks", TimeType: "event_time", Streams: []string{"clicks"}},
		"delayed": {ID: "delayed", TimeType: "event_time", StreamsWithDelays: map[string]time.Duration{"clicks": 2 * time.Microsecond, "views": 50 * time.Microsecond}},
	}
	r.w.eventTime.Store(eventTimeWatermark)
	r.w.eventWatermark.Store(100) // the pipeline-wide one is not used once per-stream ones exist
	r.w.eventWatermarks.Store(&ytstore.EventWatermarks{Streams: map[string]uint64{"clicks": 1000, "views": 400}})
	clock := r.timerClock(5, false)
	assert.Equal(t, uint64(400), clock("all"), "every input: the slower stream")
	assert.Equal(t, uint64(1000), clock("clicks"), "clicks only")
	assert.Equal(t, uint64(350), clock("delayed"), "min(1000 − 2, 400 − 50)")

	w, _ := r.inbox.offer([]epoch.Input{{Message: flow.Message{MessageID: "m1", StreamID: "clicks", EventTimestamp: 900}}})
	assert.Equal(t, uint64(900), r.timerClock(5, false)("clicks"), "a held message at 900 caps it")
	r.inbox.ack([]string{"m1"})
	<-w.done

	r.w.eventWatermarks.Store(&ytstore.EventWatermarks{Streams: map[string]uint64{"clicks": 1000}})
	assert.Equal(t, uint64(0), r.timerClock(5, false)("all"), "views not published yet: nothing fires")
	assert.Equal(t, uint64(math.MaxUint64), r.timerClock(5, true)("all"), "completing: the end of time")
}

// TestAlignmentGroups: a source job is held by its own alignment group's watermark, not by
// another group's nor by the pipeline's; the
// read_delays entry of its source holds it that much earlier.
func TestAlignmentGroups(t *testing.T) {
	r := eventRunner(&spec.WatermarkStrategy{Generator: true, OutOfOrderness: 10 * time.Microsecond,
		Alignment: &spec.WatermarkAlignment{GroupName: "a", DriftBound: 100 * time.Microsecond}})
	r.sources = []*sourceState{{id: "in"}}
	r.w.eventTime.Store(eventTimeWatermark)
	r.noteEventTimes(&epoch.Batch{Sources: []epoch.SourceRow{{EventTimestamp: 1000}}}, nil) // estimate 990
	r.w.eventWatermark.Store(1)                                                             // far behind: not used
	r.w.eventWatermarks.Store(&ytstore.EventWatermarks{Groups: map[string]uint64{"a": 990, "b": 1}})
	assert.False(t, r.alignmentHold(), "group b's watermark, far behind, is not ours; the pipeline's neither")
	r.w.eventWatermarks.Store(&ytstore.EventWatermarks{Groups: map[string]uint64{"a": 800, "b": 1}})
	assert.True(t, r.alignmentHold(), "990 is 190 ahead of group a's 800")
	r.w.eventWatermarks.Store(&ytstore.EventWatermarks{Groups: map[string]uint64{"a": 900, "b": 1}})
	assert.False(t, r.alignmentHold(), "90 ahead of group a: released")

	r.comp.Watermark.Alignment.ReadDelays = map[string]time.Duration{"in": 50 * time.Microsecond, "other": time.Hour}
	assert.True(t, r.alignmentHold(), "read_delays of its source: 990 + 50 is 140 ahead of 900")
	r.w.eventWatermarks.Store(&ytstore.EventWatermarks{Groups: map[string]uint64{"a": 940}})
	assert.False(t, r.alignmentHold(), "1040 is 100 ahead of 940: released")
}
