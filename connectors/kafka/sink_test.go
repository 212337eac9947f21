package kafka

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/internal/ybin"
)

// TestResolveMarker: which sequence numbers a (re)started sink still writes, and when it stops.
func TestResolveMarker(t *testing.T) {
	for _, tc := range []struct {
		name     string
		m        marker
		firstSeq int64
		want     int64
		lost     string
	}{
		{name: "fresh sink", m: marker{}, firstSeq: 0, want: 0},
		{name: "marker covers the offered batches", m: marker{found: true, offset: 30, metadata: MarkerMetadata}, firstSeq: 10, want: 30},
		{name: "marker at the first offered", m: marker{found: true, offset: 10, metadata: MarkerMetadata}, firstSeq: 10, want: 10},
		{name: "marker ahead of everything offered", m: marker{found: true, offset: 99, metadata: MarkerMetadata}, firstSeq: 0, want: 99},
		{name: "lost after acknowledged batches", m: marker{}, firstSeq: 10, lost: "no offset"},
		{name: "reset by hand", m: marker{found: true, offset: 10, metadata: ""}, firstSeq: 10, lost: "metadata"},
		{name: "moved backwards", m: marker{found: true, offset: 5, metadata: MarkerMetadata}, firstSeq: 10, lost: "below"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resolveMarker(tc.m, tc.firstSeq)
			if tc.lost != "" {
				require.ErrorIs(t, err, ErrMarkerLost)
				require.ErrorContains(t, err, tc.lost)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// batch makes a batch of the sequence numbers first..last whose payload "id" is the sequence
// number; encoded rows go as the runtime stores them (a YSON map).
func batch(first, last int64) connector.Batch {
	b := connector.Batch{FirstSeq: first, LastSeq: last}
	for i := first; i <= last; i++ {
		d := connector.Delivery{MessageID: fmt.Sprintf("m%06d", i), SequenceNumber: i}
		if i%2 == 0 {
			d.Row = map[string]any{"id": uint64(i), "k": fmt.Sprint("key", i%3)}
		} else {
			d.Encoded = []byte(fmt.Sprintf(`{id=%du;k="key%d"}`, i, i%3))
		}
		b.Rows = append(b.Rows, d)
	}
	b.FirstID, b.LastID = b.Rows[0].MessageID, b.Rows[len(b.Rows)-1].MessageID
	return b
}

func (c *testCluster) sink(topic, txnID string, guarantee string) *Sink {
	return NewSink(c.resolve, SinkConfig{Name: "kafka sink out", TransactionalID: txnID,
		Params: &SinkParams{Topic: topic, PayloadColumn: "id", KeyColumn: "k", MessageIDHeader: "flow-id", DeliveryGuarantee: guarantee}})
}

// readCommitted reads every committed record of topic with a read_committed consumer: the
// value of each, in the order of each partition.
func (c *testCluster) readCommitted(topic string) []*kgo.Record {
	c.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.brokers, ",")...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	require.NoError(c.t, err)
	defer cl.Close()
	var out []*kgo.Record
	for empty := 0; empty < 3; {
		pctx, cancel := context.WithTimeout(ctx(c.t), 300*time.Millisecond)
		f := cl.PollFetches(pctx)
		cancel()
		if n := f.NumRecords(); n == 0 {
			empty++
			continue
		}
		empty = 0
		out = append(out, f.Records()...)
	}
	return out
}

func values(rs []*kgo.Record) []int {
	var out []int
	for _, r := range rs {
		n, _ := strconv.Atoi(string(r.Value))
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func seq(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// TestKafkaSinkResendAndRestart: a read_committed consumer sees each record once across a
// resend of the same batches, a restart of the sink (a new instance with the same
// transactional id, offered batches it already wrote) and a batch larger than one
// transaction; records carry the key and the message id header.
func TestKafkaSinkResendAndRestart(t *testing.T) {
	c := newCluster(t)
	topic := c.topic(3)
	s := c.sink(topic, "ytflow:test:p1:out", ExactlyOnce)
	defer s.Close()
	n, err := s.Deliver(ctx(t), []connector.Batch{batch(0, 4), batch(5, 9)})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	n, err = s.Deliver(ctx(t), []connector.Batch{batch(0, 4), batch(5, 9)}) // the acknowledgement was lost
	require.NoError(t, err)
	require.Equal(t, 2, n)

	restarted := c.sink(topic, "ytflow:test:p1:out", ExactlyOnce)
	defer restarted.Close()
	n, err = restarted.Deliver(ctx(t), []connector.Batch{batch(5, 9), batch(10, 14)})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	big := batch(15, 15+MaxTxnRecords+500) // two transactions
	n, err = restarted.Deliver(ctx(t), []connector.Batch{big})
	require.NoError(t, err)
	require.Equal(t, 1, n)

	recs := c.readCommitted(topic)
	require.Equal(t, seq(0, 15+MaxTxnRecords+500), values(recs))
	for _, r := range recs {
		id, _ := strconv.Atoi(string(r.Value))
		require.Equal(t, fmt.Sprint("key", id%3), string(r.Key))
		require.Equal(t, []kgo.RecordHeader{{Key: "flow-id", Value: []byte(fmt.Sprintf("m%06d", id))}}, r.Headers)
	}
	committed, err := c.adm.FetchOffsets(ctx(t), "ytflow:test:p1:out")
	require.NoError(t, err)
	o, ok := committed.Lookup(topic, 0)
	require.True(t, ok)
	require.Equal(t, int64(16+MaxTxnRecords+500), o.At)
	require.Equal(t, MarkerMetadata, o.Metadata)
}

// TestKafkaSinkZombieFenced: a second instance with the same transactional id fences the
// first; the zombie's next delivery fails with ErrFenced for good and writes nothing.
func TestKafkaSinkZombieFenced(t *testing.T) {
	c := newCluster(t)
	topic := c.topic(1)
	zombie := c.sink(topic, "ytflow:test:p2:out", ExactlyOnce)
	defer zombie.Close()
	_, err := zombie.Deliver(ctx(t), []connector.Batch{batch(0, 4)})
	require.NoError(t, err)

	live := c.sink(topic, "ytflow:test:p2:out", ExactlyOnce)
	defer live.Close()
	n, err := live.Deliver(ctx(t), []connector.Batch{batch(0, 4), batch(5, 9)})
	require.NoError(t, err)
	require.Equal(t, 2, n)

	n, err = zombie.Deliver(ctx(t), []connector.Batch{batch(10, 14)})
	require.ErrorIs(t, err, ErrFenced)
	require.Zero(t, n)
	_, err = zombie.Deliver(ctx(t), []connector.Batch{batch(10, 14)})
	require.ErrorIs(t, err, ErrFenced, "a zombie stays fenced")

	n, err = live.Deliver(ctx(t), []connector.Batch{batch(10, 14)})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, seq(0, 14), values(c.readCommitted(topic)))
}

// TestKafkaSinkLostMarker: once the marker group's offsets are deleted while batches are
// pending, delivery fails with an error naming the sink instead of writing possible
// duplicates, in the running instance and in a restarted one; so does a marker reset by hand.
func TestKafkaSinkLostMarker(t *testing.T) {
	c := newCluster(t)
	topic := c.topic(1)
	const txnID = "ytflow:test:p3:out"
	s := c.sink(topic, txnID, ExactlyOnce)
	defer s.Close()
	_, err := s.Deliver(ctx(t), []connector.Batch{batch(0, 4), batch(5, 9)})
	require.NoError(t, err)

	resp, err := c.adm.DeleteOffsets(ctx(t), txnID, kadm.TopicsSet{topic: {0: {}}})
	require.NoError(t, err)
	require.NoError(t, resp.Error())
	pending := []connector.Batch{batch(10, 14)}
	n, err := s.Deliver(ctx(t), pending)
	require.ErrorIs(t, err, ErrMarkerLost)
	require.ErrorContains(t, err, "kafka sink out")
	require.Zero(t, n)
	restarted := c.sink(topic, txnID, ExactlyOnce)
	defer restarted.Close()
	_, err = restarted.Deliver(ctx(t), pending)
	require.ErrorIs(t, err, ErrMarkerLost)

	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: topic, Partition: 0, At: 10, LeaderEpoch: -1})
	_, err = c.adm.CommitOffsets(ctx(t), txnID, os)
	require.NoError(t, err)
	_, err = restarted.Deliver(ctx(t), pending)
	require.ErrorIs(t, err, ErrMarkerLost)
	require.ErrorContains(t, err, "metadata")
	require.Equal(t, seq(0, 9), values(c.readCommitted(topic)))
}

// TestKafkaSinkAtLeastOnce: delivery_guarantee = at_least_once writes with the idempotent
// producer and no marker; a resend writes the records again.
func TestKafkaSinkAtLeastOnce(t *testing.T) {
	c := newCluster(t)
	topic := c.topic(2)
	s := c.sink(topic, "", AtLeastOnce)
	defer s.Close()
	for range 2 {
		n, err := s.Deliver(ctx(t), []connector.Batch{batch(0, 2), batch(3, 5)})
		require.NoError(t, err)
		require.Equal(t, 2, n)
	}
	require.Equal(t, []int{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5}, values(c.readCommitted(topic)))
	require.NoError(t, s.WriteBestEffort(ctx(t), []map[string]any{{"id": "x", "k": nil}}))
}

// TestKafkaSinkMissingTopic: a sink whose topic does not exist fails its delivery with an
// error naming the sink, the topic and what to do, and writes nothing, under either guarantee.
func TestKafkaSinkMissingTopic(t *testing.T) {
	c := newCluster(t)
	for _, g := range []string{ExactlyOnce, AtLeastOnce} {
		s := c.sink("no-such-topic", "ytflow:test:p9:out", g)
		n, err := s.Deliver(ctx(t), []connector.Batch{batch(0, 4)})
		require.Zero(t, n, g)
		require.ErrorContains(t, err, "kafka sink out (topic no-such-topic", g)
		require.ErrorContains(t, err, "UNKNOWN_TOPIC_OR_PARTITION", g)
		require.ErrorContains(t, err, "(the topic does not exist: create it, or correct topic)", g)
		s.Close()
	}
}

// TestKafkaSinkDecodesStoredRows: rows stored as the runtime encodes them go through one
// decoder whose maps are reused row after row; a row without the key column gets a null key,
// not the key of the row before it, and every record carries its own row's payload.
func TestKafkaSinkDecodesStoredRows(t *testing.T) {
	c := newCluster(t)
	topic := c.topic(1)
	s := c.sink(topic, "ytflow:test:p4:out", ExactlyOnce)
	defer s.Close()
	b := connector.Batch{FirstSeq: 0, LastSeq: 9}
	for i := int64(0); i <= 9; i++ {
		row := map[string]any{"id": uint64(i)}
		if i%3 != 2 {
			row["k"] = fmt.Sprint("key", i%3)
		}
		enc, ok := ybin.AppendMap(nil, row)
		require.True(t, ok)
		b.Rows = append(b.Rows, connector.Delivery{MessageID: fmt.Sprintf("m%06d", i), SequenceNumber: i, Encoded: enc})
	}
	b.FirstID, b.LastID = b.Rows[0].MessageID, b.Rows[9].MessageID
	n, err := s.Deliver(ctx(t), []connector.Batch{b})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	recs := c.readCommitted(topic)
	require.Equal(t, seq(0, 9), values(recs))
	for _, r := range recs {
		id, _ := strconv.Atoi(string(r.Value))
		if id%3 == 2 {
			require.Nil(t, r.Key, "record %d", id)
		} else {
			require.Equal(t, fmt.Sprint("key", id%3), string(r.Key), "record %d", id)
		}
	}
}
