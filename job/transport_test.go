// Tests of the transport: inbox back-pressure and takes, pushes acknowledged only once
// committed, outbox chunks and deletions, the SystemWatermark and epoch stamps.

package job

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/internal/varbin"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytstore"
)

func input(id string) epoch.Input {
	return epoch.Input{Message: flow.Message{MessageID: id, Key: flow.Key{"k"}}}
}

func TestInboxBackPressure(t *testing.T) {
	b := newInbox(2)
	w, accepted := b.offer([]epoch.Input{input("a"), input("b"), input("c")})
	require.Len(t, accepted, 2, "a full inbox accepts nothing more")
	assert.Equal(t, "b", accepted[1].in.Message.MessageID, "the accepted messages are a prefix of the push")

	again, acceptedAgain := b.offer([]epoch.Input{input("a")})
	require.Len(t, acceptedAgain, 1)
	assert.Same(t, accepted[0], acceptedAgain[0], "a retransmitted message waits on the buffered copy")

	got := b.take(10)
	require.Len(t, got, 2)
	assert.Empty(t, b.take(10), "taken inputs are not handed out twice")
	b.release([]string{"b"})
	assert.Equal(t, []string{"b"}, inputIDs(b.take(10)), "a failed epoch's inputs come back")

	b.ack([]string{"a"})
	select {
	case <-again.done:
	default:
		t.Fatal("ack does not wake the retransmission's push")
	}
	select {
	case <-w.done:
		t.Fatal("a push with an input not acknowledged is reported persisted")
	default:
	}
	assert.Equal(t, []string{"a"}, b.persistedIDs(accepted), "only the acknowledged input is persisted")
	b.ack([]string{"b"})
	select {
	case <-w.done:
	default:
		t.Fatal("ack of the push's last input does not wake it")
	}
	assert.Equal(t, []string{"a", "b"}, b.persistedIDs(accepted))
	assert.Equal(t, 0, b.len())

	empty, none := b.offer(nil)
	assert.Empty(t, none)
	select {
	case <-empty.done:
	default:
		t.Fatal("a push with nothing to wait for is not answered at once")
	}
}

// newTestWorker returns a worker serving /push for one job without any YT connection.
func newTestWorker(t *testing.T, j ytstore.Job) (*Worker, *runner, string) {
	t.Helper()
	w := withTestKey(NewWorker(Config{PushTimeout: 300 * time.Millisecond}))
	r := &runner{w: w, job: j, comp: &spec.Computation{ID: j.ComputationID}, inbox: newInbox(100), outbox: newOutbox()}
	w.runners[j.JobID] = &runnerHandle{r: r, lease: j.LeaseID, cancel: func() {}, done: make(chan struct{})}
	srv := httptest.NewServer(handlerOf(w))
	t.Cleanup(srv.Close)
	return w, r, srv.Listener.Addr().String()
}

func TestPushAcksOnlyCommitted(t *testing.T) {
	j := ytstore.Job{JobID: "j1", ComputationID: "count", LowerKey: 0, UpperKey: 0}
	_, r, addr := newTestWorker(t, j)
	rows := []ytstore.OutputRow{
		{MessageID: "m1", StreamID: "words", Key: epoch.EncodeKey(flow.Key{"a"}), KeyHash: 1},
		{MessageID: "m2", StreamID: "words", Key: epoch.EncodeKey(flow.Key{"b"}), KeyHash: 2},
		{MessageID: "m3", StreamID: "words", Key: epoch.EncodeKey(flow.Key{"c"}), KeyHash: 3},
	}
	// The "epoch": take what arrived and commit only m1 and m3.
	go func() {
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if got := r.inbox.take(10); len(got) > 0 {
				r.inbox.ack([]string{"m1", "m3"})
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	acked, err := push(context.Background(), httpClient(), testKey, route{jobID: "j1", address: addr}, "count", rows)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"m1", "m3"}, acked, "only committed ids are acknowledged")

	got := r.inbox.take(10)
	assert.Empty(t, got, "m2 is still taken by the running epoch")
	r.inbox.release([]string{"m2"})
	got = r.inbox.take(10)
	require.Len(t, got, 1)
	assert.Equal(t, flow.Key{"b"}, got[0].Message.Key, "the key survives the wire")
}

// TestPushAnsweredWhenJobStops: a push waiting for the commits of a job that stops is
// answered at once with what the job committed, not after the push timeout (here 10
// minutes: the client gives up after 20 seconds, which fails the test).
func TestPushAnsweredWhenJobStops(t *testing.T) {
	j := ytstore.Job{JobID: "j1", ComputationID: "count"}
	w := withTestKey(NewWorker(Config{PushTimeout: 10 * time.Minute}))
	r := &runner{w: w, job: j, comp: &spec.Computation{ID: j.ComputationID}, inbox: newInbox(100), outbox: newOutbox()}
	w.runners[j.JobID] = &runnerHandle{r: r, lease: j.LeaseID, cancel: func() {}, done: make(chan struct{})}
	srv := httptest.NewServer(handlerOf(w))
	t.Cleanup(srv.Close)
	rows := []ytstore.OutputRow{
		{MessageID: "m1", StreamID: "words", Key: epoch.EncodeKey(flow.Key{"a"}), KeyHash: 1},
		{MessageID: "m2", StreamID: "words", Key: epoch.EncodeKey(flow.Key{"b"}), KeyHash: 2},
	}
	go func() { // the job commits m1, then stops
		for {
			if got := r.inbox.take(10); len(got) > 0 {
				r.inbox.ack([]string{"m1"})
				r.inbox.stop()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	acked, err := push(ctx, httpClient(), testKey, route{jobID: "j1", address: srv.Listener.Addr().String()}, "count", rows)
	require.NoError(t, err, "the push is answered when the job stops")
	assert.Equal(t, []string{"m1"}, acked, "only the committed message is acknowledged")
}

func TestPushRefused(t *testing.T) {
	j := ytstore.Job{JobID: "j1", ComputationID: "count", LowerKey: 10, UpperKey: 20}
	_, r, addr := newTestWorker(t, j)
	_, err := push(context.Background(), httpClient(), testKey, route{jobID: "other", address: addr}, "count", []ytstore.OutputRow{{MessageID: "m"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no job other")

	acked, err := push(context.Background(), httpClient(), testKey, route{jobID: "j1", address: addr}, "count",
		[]ytstore.OutputRow{{MessageID: "m", KeyHash: 25, Key: epoch.EncodeKey(nil)}})
	require.NoError(t, err)
	assert.Empty(t, acked)
	assert.Equal(t, 0, r.inbox.len(), "a message outside the job's key range is not buffered")
}

func TestOutboxDoneGoesToNextCommit(t *testing.T) {
	o := newOutbox()
	o.add([]ytstore.OutputRow{{Destination: "d", MessageID: "b"}, {Destination: "d", MessageID: "a"}})
	rows := o.snapshot("d")
	require.Len(t, rows, 2)
	assert.Equal(t, "a", rows[0].MessageID, "sent in id order")
	o.finish("p", "d", []string{"a", "zzz"})
	assert.Equal(t, 1, o.size())
	done := o.takeDone()
	assert.Equal(t, []ytstore.OutputKey{{PartitionID: "p", Destination: "d", MessageID: "a"}}, done)
	assert.Empty(t, o.takeDone())
	o.giveBack()
	assert.Equal(t, done, o.takeDone(), "a failed commit hands the deletions to the next one")
	o.committed()
	assert.Empty(t, o.takeDone())
}

// TestOutboxDeletesChunkWhenAllAcked: a stored chunk is deleted once every message in it is
// acknowledged, and until then holds the system watermark at its oldest message, acknowledged
// or not (a restart resends the whole chunk; its readers must still find those in the dedup
// index).
func TestOutboxDeletesChunkWhenAllAcked(t *testing.T) {
	r := &runner{inbox: newInbox(10), outbox: newOutbox()}
	rows := []ytstore.OutputRow{
		{PartitionID: "p", Destination: "d", MessageID: "a", SystemTimestamp: 10},
		{PartitionID: "p", Destination: "d", MessageID: "b", SystemTimestamp: 20},
		{PartitionID: "p", Destination: "e", MessageID: "c", SystemTimestamp: 30},
	}
	ytstore.AssignChunks(rows, 77)
	r.outbox.add(rows)
	r.outbox.add(rows[:1]) // a row added twice is counted once

	r.outbox.finish("p", "d", []string{"a"})
	assert.Empty(t, r.outbox.takeDone(), "b is not acknowledged yet")
	assert.Equal(t, uint64(10), r.systemWatermark(), "the chunk holds the watermark at its acknowledged message")
	r.outbox.committed()

	r.outbox.finish("p", "d", []string{"b", "a"})
	done := r.outbox.takeDone()
	assert.Equal(t, []ytstore.OutputKey{{PartitionID: "p", Destination: "d", Chunk: ytstore.OutputChunk{ID: 77}}}, done)
	assert.Equal(t, uint64(10), r.systemWatermark(), "being deleted")
	r.outbox.committed()
	assert.Equal(t, uint64(30), r.systemWatermark(), "only the chunk of e is left")
	r.outbox.finish("p", "e", []string{"c"})
	assert.Len(t, r.outbox.takeDone(), 1)
	r.outbox.committed()
	assert.Zero(t, r.systemWatermark())
	assert.Zero(t, r.outbox.held())
}

func TestSystemWatermarkCoversOutbox(t *testing.T) {
	r := &runner{inbox: newInbox(10), outbox: newOutbox()}
	assert.Zero(t, r.systemWatermark(), "holds nothing")

	r.inbox.offer([]epoch.Input{{Message: flow.Message{MessageID: "in", SystemTimestamp: 50}}})
	r.outbox.add([]ytstore.OutputRow{{Destination: "d", MessageID: "o1", SystemTimestamp: 30}, {Destination: "d", MessageID: "o2", SystemTimestamp: 40}})
	assert.Equal(t, uint64(30), r.systemWatermark())

	r.outbox.finish("p", "d", []string{"o1"})
	assert.Equal(t, uint64(30), r.systemWatermark(), "acknowledged but its row is not deleted yet")
	r.outbox.takeDone()
	assert.Equal(t, uint64(30), r.systemWatermark(), "being deleted by an open epoch")
	r.outbox.giveBack()
	assert.Equal(t, uint64(30), r.systemWatermark(), "the deletion failed")
	r.outbox.takeDone()
	r.outbox.committed()
	assert.Equal(t, uint64(40), r.systemWatermark(), "deleted by a committed epoch")

	r.openEpoch.Store(20)
	assert.Equal(t, uint64(20), r.systemWatermark(), "outputs of the open epoch")
	r.openEpoch.Store(0)
	r.outbox.finish("p", "d", []string{"o2"})
	r.outbox.takeDone()
	r.outbox.committed()
	assert.Equal(t, uint64(50), r.systemWatermark(), "a buffered input")
	r.inbox.ack([]string{"in"})
	assert.Zero(t, r.systemWatermark())
}

func TestKeyerComputesFarmHash(t *testing.T) {
	p := &spec.Pipeline{Computations: map[string]*spec.Computation{"count": {ID: "count"}}}
	p.Computations["count"].GroupBy.Columns = append(p.Computations["count"].GroupBy.Columns,
		schemaColumn("hash", "farm_hash(word)"), schemaColumn("word", ""))
	keyer, err := newKeyer(p)
	require.NoError(t, err)
	k, err := keyer("count", flow.Row{"word": "abc"})
	require.NoError(t, err)
	require.Len(t, k, 2)
	assert.Equal(t, "abc", k[1])
	h, ok := k[0].(uint64)
	require.True(t, ok, "farm_hash gives a uint64, got %T", k[0])
	assert.Equal(t, h, epoch.KeyHash(k), "the computed hash column routes the key")
	_, err = keyer("nope", flow.Row{})
	assert.Error(t, err)
}

// TestOutboxInOrder: a sender reads pending rows in id order (rows added out of order are
// sorted), without the finished ones, and may stop early.
func TestOutboxInOrder(t *testing.T) {
	o := newOutbox()
	var rows []ytstore.OutputRow
	for _, id := range []string{"c", "a", "e", "b", "d", "f"} {
		rows = append(rows, ytstore.OutputRow{Destination: "d", MessageID: id})
	}
	o.add(rows[:3])
	o.add(rows[3:])
	o.finish("p", "d", []string{"a", "d"})
	var seen []string
	o.inOrder("d", func(r *ytstore.OutputRow) bool { seen = append(seen, r.MessageID); return true })
	assert.Equal(t, []string{"b", "c", "e", "f"}, seen)
	seen = nil
	o.inOrder("d", func(r *ytstore.OutputRow) bool { seen = append(seen, r.MessageID); return len(seen) < 2 })
	assert.Equal(t, []string{"b", "c"}, seen, "stops when told")
	o.finish("p", "d", []string{"b", "c", "e"})
	o.add([]ytstore.OutputRow{{Destination: "d", MessageID: "g"}})
	assert.Equal(t, []string{"f", "g"}, refIDs(o.snapshot("d")))
	assert.Equal(t, 2, o.size())
}

func refIDs(rows []*ytstore.OutputRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.MessageID
	}
	return out
}

func ids(rows []ytstore.OutputRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.MessageID
	}
	return out
}

func TestPushBodyRoundTripAndErrors(t *testing.T) {
	rows := []ytstore.OutputRow{
		{MessageID: "m1", StreamID: "s", Key: epoch.EncodeKey(flow.Key{uint64(5), "w"}), KeyHash: 5, Payload: []byte("{word=w}"), EventTimestamp: 3, SystemTimestamp: 4,
			Chunk: ytstore.OutputChunk{ID: 1 << 62, Part: 1}},
		{MessageID: "m2", KeyHash: 1 << 63},
	}
	body := encodePush("job-1", "count", pushTag{sender: "split/0", session: 3, seq: 9}, rowPtrs(rows))
	pr, err := decodePush(body)
	require.NoError(t, err)
	assert.Equal(t, pushRequest{JobID: "job-1", Computation: "count", Sender: "split/0", Session: 3, Seq: 9, Messages: []wireMessage{
		{ID: "m1", Stream: "s", Key: rows[0].Key, KeyHash: 5, Payload: rows[0].Payload, EventTS: 3, SystemTS: 4, Born: 1 << 62},
		{ID: "m2", KeyHash: 1 << 63},
	}}, pr, "a message's birth is its output chunk id")

	// Format 1 (earlier senders) has no births: its messages are of unknown birth.
	v1 := []byte{pushFormatV1}
	v1 = varbin.AppendString(v1, "job-1")
	v1 = varbin.AppendString(v1, "count")
	v1 = varbin.AppendString(v1, "")
	v1 = varbin.AppendUvarint(v1, 0)
	v1 = varbin.AppendUvarint(v1, 0)
	v1 = varbin.AppendUvarint(v1, 1)
	v1 = ytstore.AppendMessage(v1, &rows[0])
	old, err := decodePush(v1)
	require.NoError(t, err)
	require.Len(t, old.Messages, 1)
	assert.Equal(t, "m1", old.Messages[0].ID)
	assert.Zero(t, old.Messages[0].Born)

	for name, b := range map[string][]byte{
		"empty":     nil,
		"format":    append([]byte{9}, body[1:]...),
		"truncated": body[:len(body)-2],
		"trailing":  append(append([]byte{}, body...), 0),
	} {
		_, err := decodePush(b)
		assert.ErrorIs(t, err, errBadPush, name)
	}
	_, err = decodePush(body[:len(body)-2])
	assert.Contains(t, err.Error(), "job job-1: message 1 of 2 truncated")
}

// TestEpochStampsNeverGoBack: the time an epoch stamps on its outputs never goes back when
// the worker's clock does, and a job started under a @system_watermark ahead of its worker's
// clock stamps its outputs at or after it, so a reader's dedup row of them is not below the
// watermark while they can still be retransmitted.
func TestEpochStampsNeverGoBack(t *testing.T) {
	r := &runner{}
	assert.Equal(t, uint64(100), r.stamp(100))
	assert.Equal(t, uint64(100), r.stamp(40), "the clock stepped back")
	assert.Equal(t, uint64(150), r.stamp(150))
	s := &swiftSource{}
	s.start(0, nil, 500, 10)
	assert.Equal(t, uint64(500), s.stamp(100), "a swift source's stamps start at the watermark it started under")

	e := startWordCount(t)
	published := uint64(time.Now().Add(time.Hour).UnixMicro()) // a clock an hour ahead moved it
	require.NoError(t, e.store.SetSystemWatermark(e.ctx, e.leader, published))
	e.write("a b")
	e.putJob("split-0", "split", "split-p0", 0)
	e.eventually("the split to hold two words", func() bool { return e.worker.Stats()["split-0"].OutboxLen == 2 })
	ts := e.worker.runner("split-0").outbox.minSystemTS()
	assert.GreaterOrEqual(t, ts, published, "outputs stamped below the watermark the job started under")
}

// TestInboxTakesDistinctIDs: an inbox hands out each message id once at a time, whatever the
// retransmissions, so epochs can skip their own repeat check (epoch.Batch.DistinctInputs).
func TestInboxTakesDistinctIDs(t *testing.T) {
	b := newInbox(100)
	b.offer([]epoch.Input{input("a"), input("b"), input("a")})
	b.offer([]epoch.Input{input("b"), input("c")})
	first := inputIDs(b.take(10))
	assert.Equal(t, []string{"a", "b", "c"}, first, "a repeated id is buffered once")
	b.ack([]string{"a"})
	b.release([]string{"b", "c"})
	b.offer([]epoch.Input{input("a"), input("c")}) // "a" again after it was acknowledged
	seen := map[string]bool{}
	for _, id := range inputIDs(b.take(10)) {
		assert.False(t, seen[id], "id %s taken twice in one batch", id)
		seen[id] = true
	}
	assert.Equal(t, map[string]bool{"a": true, "b": true, "c": true}, seen)
}

// TestInboxTakeIntoReusesBuffer: takeInto hands out the inputs take would, in the memory of
// the buffer it is given, with nothing of what the buffer held before.
func TestInboxTakeIntoReusesBuffer(t *testing.T) {
	b := newInbox(10)
	b.offer([]epoch.Input{input("a"), input("b"), input("c")})
	buf := []epoch.Input{input("old1"), input("old2"), input("old3"), input("old4")}
	got := b.takeInto(buf, 2, -1)
	assert.Equal(t, []string{"a", "b"}, inputIDs(got))
	assert.Same(t, &buf[0], &got[0], "the inputs are taken into the buffer's memory")
	assert.Equal(t, epoch.Input{}, buf[3], "what the buffer held past the inputs taken is cleared")
	got = b.takeInto(got, 10, -1)
	assert.Equal(t, []string{"c"}, inputIDs(got), "the next epoch's inputs only")
}

// TestInboxTakeBytes: a byte limit takes inputs in arrival order while their bytes fit, stops
// at the first that does not (nothing after it is taken out of order), and takes a first input
// larger than the limit by itself.
func TestInboxTakeBytes(t *testing.T) {
	b := newInbox(10)
	sized := func(id string, n int) epoch.Input { in := input(id); in.Bytes = n; return in }
	b.offer([]epoch.Input{sized("a", 40), sized("b", 50), sized("c", 30), sized("d", 5), sized("e", 200)})
	assert.Equal(t, []string{"a", "b"}, inputIDs(b.takeInto(nil, 10, 100)), "a+b = 90 fit, c would make 120")
	assert.Equal(t, []string{"c"}, inputIDs(b.takeInto(nil, 1, 100)), "the row limit still applies")
	assert.Equal(t, []string{"d"}, inputIDs(b.takeInto(nil, 10, 100)), "e (200) after d does not fit")
	assert.Equal(t, []string{"e"}, inputIDs(b.takeInto(nil, 10, 10)), "a first input larger than the limit goes alone")
	assert.Empty(t, b.takeInto(nil, 10, 100))
}

// TestDoneRowsDeletedInBatches: an epoch deletes the finished output store rows only once
// doneBatch of them wait, once the oldest waited batch_duration, or while the job drains;
// rows left for later stay counted (held) and hold the watermark; a failed commit gives the
// taken rows back with their age, so the next epoch deletes them at once.
func TestDoneRowsDeletedInBatches(t *testing.T) {
	r := &runner{inbox: newInbox(10), outbox: newOutbox()}
	r.dyn.BatchDuration = time.Hour // age never decides here, except where set below
	var rows []ytstore.OutputRow
	for i := range doneBatch + 2 {
		rows = append(rows, ytstore.OutputRow{PartitionID: "p", Destination: "d", MessageID: fmt.Sprintf("m%02d", i), SystemTimestamp: uint64(100 + i)})
	}
	r.outbox.add(rows)

	r.outbox.finish("p", "d", []string{"m00"})
	assert.Empty(t, r.outbox.takeDoneIf(r.deleteDoneNow(false)), "one finished row waits for more")
	assert.Equal(t, doneBatch+2, r.outbox.held(), "a row waiting for deletion is still held")
	assert.Equal(t, uint64(100), r.systemWatermark(), "and holds the watermark")
	assert.Len(t, r.outbox.takeDoneIf(r.deleteDoneNow(true)), 1, "a draining job deletes at once")
	r.outbox.committed()

	var ids []string
	for _, row := range rows[1 : doneBatch+1] {
		ids = append(ids, row.MessageID)
	}
	r.outbox.finish("p", "d", ids[:doneBatch-1])
	assert.Empty(t, r.outbox.takeDoneIf(r.deleteDoneNow(false)), "%d finished rows wait for more", doneBatch-1)
	r.outbox.finish("p", "d", ids[doneBatch-1:])
	taken := r.outbox.takeDoneIf(r.deleteDoneNow(false))
	assert.Len(t, taken, doneBatch, "a batch is deleted")
	r.outbox.giveBack() // the commit failed
	assert.Equal(t, 1, r.outbox.size())
	assert.Equal(t, doneBatch+1, r.outbox.held(), "given back, still held")

	r.dyn.BatchDuration = time.Millisecond
	time.Sleep(2 * time.Millisecond)
	r.outbox.finish("p", "d", nil)
	assert.Equal(t, taken, r.outbox.takeDoneIf(func(n int, since time.Time) bool {
		return !since.IsZero() && time.Since(since) >= time.Millisecond && r.deleteDoneNow(false)(n, since)
	}), "rows given back keep their age: deleted once the oldest waited batch_duration")
	r.outbox.committed()

	last := rows[doneBatch+1].MessageID
	r.outbox.finish("p", "d", []string{last})
	time.Sleep(2 * time.Millisecond)
	assert.Equal(t, []ytstore.OutputKey{{PartitionID: "p", Destination: "d", MessageID: last}},
		r.outbox.takeDoneIf(r.deleteDoneNow(false)), "a single row is deleted once it waited batch_duration")
	r.outbox.committed()
	assert.Zero(t, r.outbox.held())
	assert.Zero(t, r.systemWatermark())
}
