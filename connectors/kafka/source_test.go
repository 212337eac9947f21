package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ytflow/yt-flow/connectors/connector"
)

func sourceParams(topic string) *SourceParams {
	return &SourceParams{Topic: topic, GroupID: "g-" + topic, MetadataTimeout: 10 * time.Second, MaxBufferBytes: 1 << 20, UseConsumerGroupOffset: true}
}

func dynParams(policy string) *SourceDynamicParams {
	return &SourceDynamicParams{PollTimeout: 300 * time.Millisecond, WatermarkUpdatePeriod: time.Second, MalformedMessagePolicy: policy}
}

// readAll reads from offset until a read comes back empty, as the runtime does.
func readAll(t *testing.T, s *Source, offset, max int64) []connector.Row {
	t.Helper()
	var out []connector.Row
	for empty := 0; empty < 2; {
		rows, err := s.Read(ctx(t), connector.OffsetPosition(offset), max)
		require.NoError(t, err)
		if len(rows) == 0 {
			empty++
			continue
		}
		require.LessOrEqual(t, int64(len(rows)), max)
		out = append(out, rows...)
		offset = rows[len(rows)-1].Offset + 1
	}
	return out
}

func offsets(rows []connector.Row) []int64 {
	var out []int64
	for _, r := range rows {
		out = append(out, r.Offset)
	}
	return out
}

// TestKafkaSourceReadsOffsets: rows carry the Kafka offsets and Flow's columns (a tombstone has
// data null, a record without a key has key null, timestamp is the record time in seconds);
// a read that continues where the last ended goes on, any other read re-seeks to the asked
// offset; nothing at the end is an empty read within poll_timeout.
func TestKafkaSourceReadsOffsets(t *testing.T) {
	c := newCluster(t)
	topic := c.topic(2)
	at := time.Unix(1_700_000_000, 0)
	for i := range 10 {
		r := &kgo.Record{Topic: topic, Partition: 1, Value: []byte(fmt.Sprint("v", i)), Timestamp: at.Add(time.Duration(i) * time.Second)}
		if i%2 == 0 {
			r.Key = []byte(fmt.Sprint("k", i))
		}
		if i == 7 {
			r.Value = nil
		}
		c.produce(r)
	}
	s := NewSource(c.resolve, sourceParams(topic), dynParams(PolicyFail), 1)
	defer s.Close()

	rows, err := s.Read(ctx(t), connector.OffsetPosition(0), 4)
	require.NoError(t, err)
	require.Equal(t, []int64{0, 1, 2, 3}, offsets(rows))
	require.Equal(t, map[string]any{"data": "v0", "key": "k0", "unparsed": nil, "partition": int64(1), "offset": int64(0),
		"sub_offset": int64(0), "timestamp": int64(1_700_000_000)}, rows[0].Columns)
	require.Nil(t, rows[1].Columns["key"])
	require.Equal(t, uint64(1_700_000_000_000_000), rows[0].Timestamp, "Row.Timestamp is the record time in microseconds")
	require.Zero(t, rows[0].Born, "a record time is no cluster timestamp")
	require.Equal(t, connector.OffsetPosition(1), rows[0].Next, "the position after a row is the next offset")

	rest := readAll(t, s, 4, 100)
	require.Equal(t, []int64{4, 5, 6, 7, 8, 9}, offsets(rest))
	require.Nil(t, rest[3].Columns["data"], "a tombstone is a row with data null")
	require.Equal(t, "k6", rest[2].Columns["key"])

	// A read elsewhere re-seeks (e.g. after an epoch failed and the runtime reads again).
	rows, err = s.Read(ctx(t), connector.OffsetPosition(2), 3)
	require.NoError(t, err)
	require.Equal(t, []int64{2, 3, 4}, offsets(rows))
	rows, err = s.Read(ctx(t), connector.OffsetPosition(9), 3)
	require.NoError(t, err)
	require.Equal(t, []int64{9}, offsets(rows))

	start := time.Now()
	rows, err = s.Read(ctx(t), connector.OffsetPosition(10), 3)
	require.NoError(t, err)
	require.Empty(t, rows)
	require.Less(t, time.Since(start), 5*time.Second)

	// New records after an empty read arrive at the next read.
	c.produce(&kgo.Record{Topic: topic, Partition: 1, Value: []byte("v10")})
	require.Equal(t, []int64{10}, offsets(readAll(t, s, 10, 5)))
	require.False(t, s.Finite())
}

// TestKafkaSourceMalformedPolicy: a record whose value fails the unpack step fails the read (fail),
// is skipped (drop) or becomes a row with data null and the raw value in unparsed (keep);
// an unpack step with several frames gives one row per frame with sub_offset.
func TestKafkaSourceMalformedPolicy(t *testing.T) {
	c := newCluster(t)
	topic := c.topic(1)
	for _, v := range []string{"a", "bad1", "b|c", "bad2", "d"} {
		c.produce(&kgo.Record{Topic: topic, Value: []byte(v)})
	}
	unpack := func(v []byte) ([][]byte, error) {
		if strings.HasPrefix(string(v), "bad") {
			return nil, errors.New("cannot unpack")
		}
		var out [][]byte
		for _, f := range strings.Split(string(v), "|") {
			out = append(out, []byte(f))
		}
		return out, nil
	}
	data := func(rows []connector.Row) []string {
		var out []string
		for _, r := range rows {
			d, _ := r.Columns["data"].(string)
			if u, ok := r.Columns["unparsed"].(map[string]any); ok {
				d = fmt.Sprint("unparsed:", u["data"])
			}
			out = append(out, fmt.Sprintf("%d.%d:%s", r.Offset, r.Columns["sub_offset"], d))
		}
		return out
	}

	fail := newSource(c.resolve, sourceParams(topic), dynParams(PolicyFail), 0, unpack)
	defer fail.Close()
	rows, err := fail.Read(ctx(t), connector.OffsetPosition(0), 100) // the rows before the malformed record come first
	require.NoError(t, err)
	require.Equal(t, []string{"0.0:a"}, data(rows))
	for range 2 {
		_, err = fail.Read(ctx(t), connector.OffsetPosition(1), 100)
		require.ErrorIs(t, err, ErrMalformed)
		require.Contains(t, err.Error(), "offset 1")
	}

	drop := newSource(c.resolve, sourceParams(topic), dynParams(PolicyDrop), 0, unpack)
	defer drop.Close()
	require.Equal(t, []string{"0.0:a", "2.0:b", "2.1:c", "4.0:d"}, data(readAll(t, drop, 0, 100)))

	keep := newSource(c.resolve, sourceParams(topic), dynParams(PolicyKeep), 0, unpack)
	defer keep.Close()
	require.Equal(t, []string{"0.0:a", "1.0:unparsed:bad1", "2.0:b", "2.1:c", "3.0:unparsed:bad2", "4.0:d"}, data(readAll(t, keep, 0, 100)))
}

// TestKafkaSourceRecreatedTopic: a partition whose offsets went backwards (the topic was deleted
// and created again with fewer records) is a sticky error of the reader.
func TestKafkaSourceRecreatedTopic(t *testing.T) {
	c := newCluster(t)
	topic := c.topic(1)
	for i := range 5 {
		c.produce(&kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i))})
	}
	s := NewSource(c.resolve, sourceParams(topic), dynParams(PolicyFail), 0)
	defer s.Close()
	require.Len(t, readAll(t, s, 0, 100), 5)
	require.NoError(t, s.Advance(ctx(t), connector.OffsetPosition(5)))

	_, err := c.adm.DeleteTopics(ctx(t), topic)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		resp, err := c.adm.CreateTopic(context.Background(), 1, 1, nil, topic)
		return err == nil && resp.Err == nil
	}, 10*time.Second, 100*time.Millisecond)
	c.cl.PurgeTopicsFromClient(topic)
	c.produce(&kgo.Record{Topic: topic, Value: []byte("new")})

	// The same reader re-opens at an offset the new topic does not have.
	_, err = s.Read(ctx(t), connector.OffsetPosition(3), 100)
	require.ErrorIs(t, err, ErrTopicRecreated)
	_, err = s.Read(ctx(t), connector.OffsetPosition(0), 100)
	require.ErrorIs(t, err, ErrTopicRecreated, "the error is sticky")
}

// TestKafkaSourceConsumerGroupOffset: Advance commits the offset to group_id; a reader that starts
// below an offset the group holds starts there with use_consumer_group_offset, and at the
// asked offset without it.
func TestKafkaSourceConsumerGroupOffset(t *testing.T) {
	c := newCluster(t)
	topic := c.topic(1)
	for i := range 8 {
		c.produce(&kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i))})
	}
	p := sourceParams(topic)
	first := NewSource(c.resolve, p, dynParams(PolicyFail), 0)
	require.NoError(t, first.Advance(ctx(t), connector.OffsetPosition(5)))
	first.Close()
	committed, err := c.adm.FetchOffsets(ctx(t), p.GroupID)
	require.NoError(t, err)
	o, ok := committed.Lookup(topic, 0)
	require.True(t, ok)
	require.Equal(t, int64(5), o.At)

	adopt := NewSource(c.resolve, p, dynParams(PolicyFail), 0)
	defer adopt.Close()
	require.Equal(t, []int64{5, 6, 7}, offsets(readAll(t, adopt, 0, 100)))

	own := *p
	own.UseConsumerGroupOffset = false
	ignore := NewSource(c.resolve, &own, dynParams(PolicyFail), 0)
	defer ignore.Close()
	require.Len(t, readAll(t, ignore, 0, 100), 8)
}

// TestKafkaSourcePartitions: one Flow partition per Kafka partition, as partition_filter admits;
// ends are the partitions' end offsets; a missing topic is ErrNoTopic.
func TestKafkaSourcePartitions(t *testing.T) {
	c := newCluster(t)
	topic := c.topic(4)
	c.produce(&kgo.Record{Topic: topic, Partition: 2, Value: []byte("x")}, &kgo.Record{Topic: topic, Partition: 2, Value: []byte("y")})
	p := sourceParams(topic)
	adm := kadm.NewClient(c.cl)
	got, err := partitions(ctx(t), adm, p)
	require.NoError(t, err)
	require.Equal(t, []int64{0, 1, 2, 3}, got)
	p.PartitionFilter = [][2]int64{{1, 2}, {3, 10}}
	got, err = partitions(ctx(t), adm, p)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 3}, got)
	e, err := ends(ctx(t), adm, p)
	require.NoError(t, err)
	require.Equal(t, map[int64]int64{0: 0, 1: 0, 2: 2, 3: 0}, e)

	// A topic that does not exist is named, with what to do.
	_, err = partitions(ctx(t), adm, sourceParams(topic+"-missing"))
	require.ErrorIs(t, err, ErrNoTopic)
	require.EqualError(t, err, "kafka topic "+topic+"-missing: no such topic: create it, or correct topic")
}

// TestKafkaSourceRecyclesRecords: the consumer's record slabs go back to the source's pool once
// their records are rows, and later fetches decode into them, while every row read keeps its
// own key and data (the rows hold copies, not the recycled records).
func TestKafkaSourceRecyclesRecords(t *testing.T) {
	c := newCluster(t)
	topic := c.topic(1)
	const batches, per = 6, 50
	for b := range batches { // one produce per batch: a record batch each
		var rs []*kgo.Record
		for i := range per {
			n := b*per + i
			rs = append(rs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint("k", n)), Value: []byte(fmt.Sprint("value ", n))})
		}
		c.produce(rs...)
	}
	s := NewSource(c.resolve, sourceParams(topic), dynParams(PolicyFail), 0)
	defer s.Close()
	rows := readAll(t, s, 0, 30)
	require.Len(t, rows, batches*per)
	for i, r := range rows {
		require.Equal(t, int64(i), r.Offset)
		require.Equal(t, fmt.Sprint("k", i), r.Columns["key"], "row %d", i)
		require.Equal(t, fmt.Sprint("value ", i), r.Columns["data"], "row %d", i)
	}
	require.Positive(t, s.pool.puts.Load(), "record slabs given back")
}
