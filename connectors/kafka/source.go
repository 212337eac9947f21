package kafka

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ytflow/yt-flow/connectors/connector"
)

// ErrTopicRecreated is the sticky error of a source whose topic was deleted and created again,
// or whose partition lost offsets the pipeline already read (its offsets went backwards).
var ErrTopicRecreated = errors.New("kafka source: the topic was recreated or truncated")

// ErrMalformed is the error of a record that fails the source's unpack step under the fail
// policy.
var ErrMalformed = errors.New("kafka source: malformed record")

// Source reads one Kafka partition. Rows have Flow's schema {data: string, key: string,
// unparsed: any, partition: int64, offset: int64, sub_offset: int64, timestamp: int64 (record
// time, seconds)}; Row.Offset is the Kafka offset, the position the offset of the next record
// (connector.OffsetPosition), Row.Timestamp the record time in microseconds (the row's system
// and event time). Row.Born stays 0: a producer's record time is no cluster timestamp.
//
// A record is malformed when its value fails the unpack step. TKafkaSource's unpack keeps the
// value as it is (one row per record, sub_offset 0), as Flow's does, so with this class no
// record is malformed; the policy applies to unpack steps that can fail (see newSource).
// A null value (a tombstone) is a row with data null.
//
// Reads are served by one franz-go consumer assigned to the partition at an exact offset
// (no group membership); a read that continues where the previous one ended keeps its fetch
// position, any other read opens the consumer again at the asked offset.
type Source struct {
	topic     string
	partition int32
	groupID   string
	params    *SourceParams
	dyn       *SourceDynamicParams
	client    func(ctx context.Context) (*ClientConfig, error)
	// unpack splits a record's value into the frames that become rows; nil keeps the value as
	// it is (TKafkaSource's: one row per record).
	unpack func(value []byte) ([][]byte, error)

	h    *handles
	pool *recordPool // the consumer's record slabs
	// pos is the offset after the last record the consumer returned; from is the lowest offset
	// a read may ask for and still continue at pos (the records in [from, pos) returned no row).
	pos, from int64
	topicID   kadm.TopicID
	started   bool // the group's offset was considered (use_consumer_group_offset)
	sticky    error
}

// handles are a Source's clients; a cleanup closes them once the Source is unreachable (the
// SPI has no Close; Close closes them earlier).
type handles struct {
	mu         sync.Mutex
	admin      *kgo.Client
	consumer   *kgo.Client
	clientConf *ClientConfig
}

func (h *handles) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.consumer != nil {
		h.consumer.Close()
		h.consumer = nil
	}
	if h.admin != nil {
		h.admin.Close()
		h.admin = nil
	}
}

// NewSource returns the reader of Kafka partition partition of p.Topic; client resolves the
// connection when the reader first needs it. dyn nil means the dynamic defaults.
func NewSource(client func(ctx context.Context) (*ClientConfig, error), p *SourceParams, dyn *SourceDynamicParams, partition int64) *Source {
	return newSource(client, p, dyn, partition, nil)
}

func newSource(client func(ctx context.Context) (*ClientConfig, error), p *SourceParams, dyn *SourceDynamicParams, partition int64, unpack func([]byte) ([][]byte, error)) *Source {
	if dyn == nil {
		dyn = parseSourceDynamicDefaults()
	}
	s := &Source{topic: p.Topic, partition: int32(partition), groupID: p.GroupID, params: p, dyn: dyn, client: client, unpack: unpack, h: &handles{}, pool: &recordPool{}, pos: -1, from: -1}
	runtime.AddCleanup(s, func(h *handles) { h.close() }, s.h)
	return s
}

func parseSourceDynamicDefaults() *SourceDynamicParams {
	return &SourceDynamicParams{PollTimeout: 200e6, WatermarkUpdatePeriod: 5e9, MalformedMessagePolicy: PolicyFail}
}

// String names the partition for errors and logs.
func (s *Source) String() string {
	return fmt.Sprintf("kafka topic %s partition %d", s.topic, s.partition)
}

// Finite: a Kafka partition never completes.
func (s *Source) Finite() bool { return false }

// Close closes the reader's clients; the reader opens them again if used.
func (s *Source) Close() error {
	s.h.close()
	s.pos, s.from = -1, -1
	return nil
}

func (s *Source) admin(ctx context.Context) (*kadm.Client, error) {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	if s.h.admin != nil {
		return kadm.NewClient(s.h.admin), nil
	}
	if s.h.clientConf == nil {
		c, err := s.client(ctx)
		if err != nil {
			return nil, err
		}
		s.h.clientConf = c
	}
	opts, err := s.h.clientConf.Options()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append(opts, kgo.ClientID("yt-flow"))...)
	if err != nil {
		return nil, err
	}
	s.h.admin = cl
	return kadm.NewClient(cl), nil
}

// Read returns up to max rows of the partition starting at Kafka offset offset, waiting at most
// poll_timeout for records; an empty result means none are there yet. Rows skip the offsets
// of records that are not rows (transaction markers, aborted records: the consumer reads
// committed data only; records dropped by the malformed policy). A read below the partition's
// first retained offset starts at that offset; one above the partition's end is the sticky
// ErrTopicRecreated.
//
// Invariant: a read at offset returns the committed records from offset whatever was read
// before, and offsets that went backwards are a sticky error (TestKafkaSourceReadsOffsets,
// TestKafkaSourceRecreatedTopic, TestKafkaSourceConformance).
func (s *Source) Read(ctx context.Context, from connector.Position, max int64) ([]connector.Row, error) {
	if s.sticky != nil {
		return nil, s.sticky
	}
	offset, err := connector.PositionOffset(from)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s, err)
	}
	if s.h.consumer == nil || offset < s.from || offset > s.pos {
		if err := s.open(ctx, offset); err != nil {
			if errors.Is(err, ErrTopicRecreated) {
				s.sticky = err
			}
			return nil, err
		}
	}
	pctx, cancel := context.WithTimeout(ctx, s.dyn.PollTimeout)
	fetches := s.h.consumer.PollRecords(pctx, int(min(max, math.MaxInt32)))
	cancel()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var fetchErr error
	fetches.EachError(func(_ string, _ int32, err error) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return
		}
		if fetchErr == nil {
			fetchErr = err
		}
	})
	if fetchErr != nil {
		pos := s.pos
		s.closeConsumer()
		if errors.Is(fetchErr, kerr.OffsetOutOfRange) {
			s.sticky = fmt.Errorf("%s: reading at offset %d: %w (the partition no longer has that offset)", s, pos, ErrTopicRecreated)
			return nil, s.sticky
		}
		return nil, fmt.Errorf("%s: fetch: %w", s, fetchErr)
	}
	var rows []connector.Row
	defer func() { connector.OffsetRows(rows) }()
	if n := fetches.NumRecords(); n > 0 {
		rows = make([]connector.Row, 0, n) // a record is a row unless unpacked into frames
	}
	fetches.EachRecord(func(r *kgo.Record) {
		// The rows hold copies of what they take from r: its slab goes back to the pool.
		defer r.Recycle()
		if err != nil || r.Topic != s.topic || r.Partition != s.partition || r.Offset < s.pos {
			return
		}
		n := len(rows)
		rows, err = s.appendRows(rows, r)
		if err != nil {
			return
		}
		if len(rows) > n {
			s.from = r.Offset + 1
		}
		s.pos = r.Offset + 1
	})
	if len(rows) == 0 {
		rows = nil
	}
	if err != nil {
		// The next read opens at the asked offset again: the rows before the malformed record
		// are returned first, and a read at it fails.
		s.closeConsumer()
		if len(rows) > 0 {
			return rows, nil
		}
		return nil, err
	}
	return rows, nil
}

// appendRows appends the rows of one record to rows, following the malformed policy.
func (s *Source) appendRows(rows []connector.Row, r *kgo.Record) ([]connector.Row, error) {
	if r.Value == nil {
		return append(rows, recordRow(r, nil, false, 0, nil)), nil // a tombstone
	}
	if s.unpack == nil {
		return append(rows, recordRow(r, r.Value, true, 0, nil)), nil
	}
	frames, err := s.unpack(r.Value)
	if err != nil {
		switch s.dyn.MalformedMessagePolicy {
		case PolicyDrop:
			return rows, nil
		case PolicyKeep:
			return append(rows, recordRow(r, nil, false, 0, map[string]any{"data": string(r.Value)})), nil
		}
		return rows, fmt.Errorf("%s offset %d: %w: %v", s, r.Offset, ErrMalformed, err)
	}
	for i, f := range frames {
		rows = append(rows, recordRow(r, f, true, int64(i), nil))
	}
	return rows, nil
}

func (s *Source) closeConsumer() {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	if s.h.consumer != nil {
		s.h.consumer.Close()
		s.h.consumer = nil
	}
	s.pos, s.from = -1, -1
}

// open (re)opens the consumer at offset: it checks the topic's identity and the partition's
// bounds, and on the reader's first open adopts the group's committed offset when it is
// ahead (use_consumer_group_offset).
func (s *Source) open(ctx context.Context, offset int64) error {
	s.closeConsumer()
	adm, err := s.admin(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", s, err)
	}
	mctx, cancel := context.WithTimeout(ctx, s.params.MetadataTimeout)
	defer cancel()
	topics, err := adm.ListTopics(mctx, s.topic)
	if err != nil {
		return fmt.Errorf("%s: metadata: %w", s, err)
	}
	td, ok := topics[s.topic]
	if !ok || td.Err != nil {
		return fmt.Errorf("%s: metadata: %v", s, td.Err)
	}
	if _, ok := td.Partitions[s.partition]; !ok {
		return fmt.Errorf("%s: the topic has %d partitions", s, len(td.Partitions))
	}
	if s.topicID != (kadm.TopicID{}) && td.ID != s.topicID {
		return fmt.Errorf("%s: topic id %s, was %s: %w", s, td.ID, s.topicID, ErrTopicRecreated)
	}
	s.topicID = td.ID
	starts, err := adm.ListStartOffsets(mctx, s.topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return fmt.Errorf("%s: start offsets: %w", s, err)
	}
	ends, err := adm.ListEndOffsets(mctx, s.topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("%s: end offsets: %w", s, err)
	}
	start, _ := starts.Lookup(s.topic, s.partition)
	end, _ := ends.Lookup(s.topic, s.partition)
	if offset > end.Offset {
		return fmt.Errorf("%s: offset %d is past the partition's end %d: %w", s, offset, end.Offset, ErrTopicRecreated)
	}
	at := max(offset, start.Offset)
	if !s.started {
		committed, err := adm.FetchOffsets(mctx, s.groupID)
		if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
			return fmt.Errorf("%s: offsets of group %s: %w", s, s.groupID, err)
		}
		if c, ok := committed.Lookup(s.topic, s.partition); ok && c.Err == nil && c.At >= 0 {
			if s.params.UseConsumerGroupOffset && c.At > at && c.At <= end.Offset {
				at = c.At
			}
		}
		s.started = true
	}
	opts, err := s.h.clientConf.Options()
	if err != nil {
		return fmt.Errorf("%s: %w", s, err)
	}
	buf := int32(min(s.params.MaxBufferBytes, math.MaxInt32))
	cl, err := kgo.NewClient(append(opts,
		kgo.ClientID("yt-flow"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.topic: {s.partition: kgo.NewOffset().At(at)}}),
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxBytes(buf), kgo.FetchMaxPartitionBytes(buf),
		kgo.WithPools(s.pool),
	)...)
	if err != nil {
		return fmt.Errorf("%s: %w", s, err)
	}
	s.h.mu.Lock()
	s.h.consumer = cl
	s.h.mu.Unlock()
	s.pos, s.from = at, offset
	return nil
}

// Advance commits offset to group_id, for lag reporting only: the pipeline's own offset is
// the one in its state.
func (s *Source) Advance(ctx context.Context, pos connector.Position) error {
	offset, err := connector.PositionOffset(pos)
	if err != nil {
		return fmt.Errorf("%s: %w", s, err)
	}
	adm, err := s.admin(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", s, err)
	}
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: s.topic, Partition: s.partition, At: offset, LeaderEpoch: -1})
	resp, err := adm.CommitOffsets(ctx, s.groupID, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("%s: commit offset %d to group %s: %w", s, offset, s.groupID, err)
	}
	return nil
}
