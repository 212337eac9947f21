package kafka

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	sdkyson "go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/internal/ybin"
)

// Transaction limits of the exactly-once sink (as Flow's).
const (
	MaxTxnRecords = 10_000
	MaxTxnBytes   = 16 << 20
	TxnTimeout    = time.Minute
)

// markerPartition is the partition of the sink's topic the marker group's offset is kept on.
const markerPartition = 0

// SinkConfig is what a Sink needs besides its connection.
type SinkConfig struct {
	// Name names the sink in errors ("kafka sink <id>").
	Name   string
	Params *SinkParams
	// TransactionalID is stable per (pipeline, partition, sink): a restarted instance takes it
	// over and fences the older one. It also names the marker group.
	TransactionalID string
}

// TransactionalID is the transactional id of sink sinkID in partition partitionID of the
// pipeline at pipelinePath.
func TransactionalID(pipelinePath, partitionID, sinkID string) string {
	return "ytflow:" + pipelinePath + ":" + partitionID + ":" + sinkID
}

// Sink is TKafkaSink, an async sink. With delivery_guarantee exactly_once (the default) it
// writes batches in Kafka transactions under a transactional id that survives restarts, each
// transaction also committing the progress marker (see resolveMarker); consumers must read
// with isolation.level read_committed. With at_least_once it writes with the idempotent
// producer and no transactions: a resend or a restart may write records again.
//
// A record's value is the payload column (string or bytes as they are; integers, floats and
// booleans as text; null as a Kafka null value), its key the key column likewise, and
// message_id_header, when set, names a header holding the message id.
type Sink struct {
	cfg    SinkConfig
	client func(ctx context.Context) (*ClientConfig, error)
	conf   *ClientConfig
	cl     *kgo.Client
	fenced error
	// owned holds cl for the cleanup that closes it once the Sink is unreachable (the SPI has
	// no Close; Close closes it earlier).
	owned *producer
	// dec decodes the stored rows of a delivery that ybin.Fields does not read in place (the
	// runtime calls Deliver one call at a time): rows of one sink repeat their column names,
	// and the map of a row goes back to its Spare once the row's record is built.
	dec ybin.Decoder
}

type producer struct{ cl *kgo.Client }

func (p *producer) close() {
	if p.cl != nil {
		p.cl.Close()
		p.cl = nil
	}
}

// NewSink returns the sink; client resolves the connection on the first delivery.
func NewSink(client func(ctx context.Context) (*ClientConfig, error), cfg SinkConfig) *Sink {
	s := &Sink{cfg: cfg, client: client, owned: &producer{}}
	runtime.AddCleanup(s, func(p *producer) { p.close() }, s.owned)
	return s
}

func (s *Sink) String() string {
	if s.cfg.Params.DeliveryGuarantee == AtLeastOnce {
		return fmt.Sprintf("%s (topic %s)", s.cfg.Name, s.cfg.Params.Topic)
	}
	return fmt.Sprintf("%s (topic %s, transactional id %s)", s.cfg.Name, s.cfg.Params.Topic, s.cfg.TransactionalID)
}

// Close closes the producer; a later Deliver opens a new one (which fences nothing it should
// not: it is the same instance).
func (s *Sink) Close() error {
	s.owned.close()
	s.cl = nil
	return nil
}

// Deliver writes the batches and returns how many leading ones Kafka now holds.
func (s *Sink) Deliver(ctx context.Context, batches []connector.Batch) (int, error) {
	if len(batches) == 0 {
		return 0, nil
	}
	if s.cfg.Params.DeliveryGuarantee == AtLeastOnce {
		return s.deliverIdempotent(ctx, batches)
	}
	return s.deliverTransactional(ctx, batches)
}

// open creates the producer: transactional (initialized, which fences older instances and
// ends a transaction one of them left open) or idempotent.
func (s *Sink) open(ctx context.Context, transactional bool) error {
	if s.cl != nil {
		return nil
	}
	if s.conf == nil {
		c, err := s.client(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
		s.conf = c
	}
	opts, err := s.conf.Options()
	if err != nil {
		return fmt.Errorf("%s: %w", s, err)
	}
	opts = append(opts, kgo.ClientID("yt-flow"), kgo.RequiredAcks(kgo.AllISRAcks()))
	if transactional {
		// The marker is committed with AddOffsetsToTxn and TxnOffsetCommit below v5, which
		// work with and without KIP-890 transactions.
		versions := kversion.Stable()
		versions.SetMaxKeyVersion(int16(kmsg.TxnOffsetCommit), 4)
		opts = append(opts, kgo.TransactionalID(s.cfg.TransactionalID), kgo.TransactionTimeout(TxnTimeout), kgo.MaxVersions(versions))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("%s: %w", s, err)
	}
	if transactional {
		if _, _, err := cl.ProducerID(ctx); err != nil {
			cl.Close()
			return s.failed("initialize the transactional producer", err)
		}
	}
	s.cl, s.owned.cl = cl, cl
	return nil
}

// failed wraps err of op (opErr); a fencing error makes the instance a zombie for good.
func (s *Sink) failed(op string, err error) error {
	if errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) {
		s.fenced = fmt.Errorf("%s: %s: %w: %v", s, op, ErrFenced, err)
		return s.fenced
	}
	return s.opErr(op, err)
}

// produceErr wraps the error of a produce without transactions.
func (s *Sink) produceErr(err error) error { return s.opErr("produce", err) }

// opErr names the sink and op, and for a missing topic what to do.
func (s *Sink) opErr(op string, err error) error {
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return fmt.Errorf("%s: %s: %w (the topic does not exist: create it, or correct topic)", s, op, err)
	}
	return fmt.Errorf("%s: %s: %w", s, op, err)
}

// deliverTransactional writes the records the marker does not cover in transactions of at most
// MaxTxnRecords records and MaxTxnBytes, each committing the marker after its last record.
//
// Invariant: a record is in Kafka once for every sequence number, across resends, restarts
// and zombies: the marker commits atomically with the records it covers, a (re)started
// instance reads it after fencing older ones, and skips what it covers (TestResolveMarker,
// TestKafkaSinkResendAndRestart, TestKafkaSinkZombieFenced, TestKafkaSinkConformance).
func (s *Sink) deliverTransactional(ctx context.Context, batches []connector.Batch) (int, error) {
	if s.fenced != nil {
		return 0, s.fenced
	}
	if err := s.open(ctx, true); err != nil {
		return 0, err
	}
	m, err := s.readMarker(ctx)
	if err != nil {
		s.Close()
		return 0, err
	}
	next, err := resolveMarker(m, batches[0].FirstSeq)
	if err != nil {
		return 0, fmt.Errorf("%s: marker group %q: %w", s, s.cfg.TransactionalID, err)
	}
	held := func() int { // the leading batches below next
		n := 0
		for n < len(batches) && batches[n].LastSeq < next {
			n++
		}
		return n
	}
	n := 0 // the records to write
	for _, b := range batches {
		if b.LastSeq >= next {
			n += len(b.Rows)
		}
	}
	a := newArena(n)
	txn := make([]*kgo.Record, 0, min(n, MaxTxnRecords))
	var txnBytes int
	var lastSeq int64
	flush := func() error {
		if len(txn) == 0 {
			return nil
		}
		err := s.commit(ctx, txn, lastSeq+1)
		txn, txnBytes = txn[:0], 0
		if err != nil {
			return err
		}
		next = lastSeq + 1
		return nil
	}
	for _, b := range batches {
		for i := range b.Rows {
			d := &b.Rows[i]
			if d.SequenceNumber < next {
				continue // in Kafka already
			}
			r, err := s.record(a, d)
			if err != nil {
				return held(), err
			}
			size := len(r.Key) + len(r.Value)
			if len(txn) > 0 && (len(txn) >= MaxTxnRecords || txnBytes+size > MaxTxnBytes) {
				if err := flush(); err != nil {
					return held(), err
				}
			}
			txn = append(txn, r)
			txnBytes += size
			lastSeq = d.SequenceNumber
		}
	}
	if err := flush(); err != nil {
		return held(), err
	}
	return len(batches), nil
}

// commit writes recs and the marker in one transaction. On any failure the transaction is
// aborted and the producer dropped: the next delivery opens a new one, which ends whatever
// this one left and reads the marker again (so a commit whose outcome is unknown is resolved
// by the marker).
func (s *Sink) commit(ctx context.Context, recs []*kgo.Record, markerAt int64) (err error) {
	defer func() {
		if err != nil && s.cl != nil {
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = s.cl.AbortBufferedRecords(actx)
			_ = s.cl.EndTransaction(actx, kgo.TryAbort)
			cancel()
			s.Close()
		}
	}()
	if err := s.cl.BeginTransaction(); err != nil {
		return s.failed("begin a transaction", err)
	}
	if err := s.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return s.failed("produce", err)
	}
	if err := s.commitMarker(ctx, markerAt); err != nil {
		return err
	}
	if err := s.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return s.failed("commit the transaction", err)
	}
	return nil
}

// commitMarker adds the marker group to the open transaction and commits offset at in it.
func (s *Sink) commitMarker(ctx context.Context, at int64) error {
	id, epoch, err := s.cl.ProducerID(ctx)
	if err != nil {
		return s.failed("producer id", err)
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = s.cfg.TransactionalID, id, epoch, s.cfg.TransactionalID
	addResp, err := add.RequestWith(ctx, s.cl)
	if err == nil {
		err = kerr.ErrorForCode(addResp.ErrorCode)
	}
	if err != nil {
		return s.failed("add the marker group to the transaction", err)
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = s.cfg.TransactionalID, s.cfg.TransactionalID, id, epoch
	req.Generation, req.MemberID = -1, ""
	meta := MarkerMetadata
	p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset, p.LeaderEpoch, p.Metadata = markerPartition, at, -1, &meta
	t := kmsg.NewTxnOffsetCommitRequestTopic()
	t.Topic, t.Partitions = s.cfg.Params.Topic, []kmsg.TxnOffsetCommitRequestTopicPartition{p}
	req.Topics = []kmsg.TxnOffsetCommitRequestTopic{t}
	resp, err := req.RequestWith(ctx, s.cl)
	if err == nil {
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if e := kerr.ErrorForCode(rp.ErrorCode); e != nil && err == nil {
					err = e
				}
			}
		}
	}
	if err != nil {
		return s.failed("commit the marker in the transaction", err)
	}
	return nil
}

// readMarker reads the marker group's offset, waiting out transactional commits still pending.
func (s *Sink) readMarker(ctx context.Context) (marker, error) {
	adm := kadm.NewClient(s.cl)
	for attempt := 0; ; attempt++ {
		resp, err := adm.FetchOffsets(kadm.RequireStable(ctx), s.cfg.TransactionalID)
		if errors.Is(err, kerr.GroupIDNotFound) {
			return marker{}, nil
		}
		var o kadm.OffsetResponse
		var found bool
		if err == nil {
			o, found = resp.Lookup(s.cfg.Params.Topic, markerPartition)
			if found {
				err = o.Err
			}
		}
		if errors.Is(err, kerr.UnstableOffsetCommit) && attempt < 50 {
			select {
			case <-ctx.Done():
				return marker{}, ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		if err != nil {
			return marker{}, fmt.Errorf("%s: read the marker of group %q: %w", s, s.cfg.TransactionalID, err)
		}
		if !found || o.At < 0 {
			return marker{}, nil
		}
		return marker{found: true, offset: o.At, metadata: o.Metadata}, nil
	}
}

// deliverIdempotent writes every record of batches with the idempotent producer and returns
// the leading batches whose records all succeeded.
func (s *Sink) deliverIdempotent(ctx context.Context, batches []connector.Batch) (int, error) {
	if err := s.open(ctx, false); err != nil {
		return 0, err
	}
	n := 0
	for _, b := range batches {
		n += len(b.Rows)
	}
	a := newArena(n)
	recs := make([]*kgo.Record, 0, n)
	ends := make([]int, 0, len(batches)) // index after each batch's last record
	for _, b := range batches {
		for i := range b.Rows {
			r, err := s.record(a, &b.Rows[i])
			if err != nil {
				return 0, err
			}
			recs = append(recs, r)
		}
		ends = append(ends, len(recs))
	}
	results := s.cl.ProduceSync(ctx, recs...)
	n, start := 0, 0
	for _, end := range ends {
		for _, r := range results[start:end] {
			if r.Err != nil {
				return n, s.produceErr(r.Err)
			}
		}
		n, start = n+1, end
	}
	return n, nil
}

// record builds the Kafka record of one delivery from a's blocks.
func (s *Sink) record(a *arena, d *connector.Delivery) (*kgo.Record, error) {
	if d.Encoded == nil {
		return s.recordOf(a, d, d.Row)
	}
	// The stored row is read for its two columns only: nothing of it is decoded or boxed, and
	// the values' bytes go straight into the arena (what recordOf makes of the decoded row).
	p := s.cfg.Params
	cols, n := [2]string{p.PayloadColumn, p.KeyColumn}, 1
	if p.KeyColumn != "" {
		n = 2
	}
	var vals [2]ybin.Field
	if ybin.Fields(d.Encoded, cols[:n], vals[:n]) {
		r := a.record()
		r.Topic, r.Value = p.Topic, a.field(vals[0])
		if n == 2 {
			r.Key = a.field(vals[1])
		}
		if p.MessageIDHeader != "" {
			r.Headers = a.header(p.MessageIDHeader, a.text(d.MessageID))
		}
		return r, nil
	}
	if m, ok := s.dec.DecodeMap(d.Encoded); ok {
		r, err := s.recordOf(a, d, m)
		// The record holds copies of the values (arena.bytesOf), not m: the next row reuses it.
		s.dec.Spare = append(s.dec.Spare[:0], m)
		return r, err
	}
	var row map[string]any
	if err := decodeRow(d.Encoded, &row); err != nil {
		return nil, fmt.Errorf("%s: message %s: decode the stored row: %w", s, d.MessageID, err)
	}
	return s.recordOf(a, d, row)
}

// recordOf builds the Kafka record of delivery d whose row is row.
func (s *Sink) recordOf(a *arena, d *connector.Delivery, row map[string]any) (*kgo.Record, error) {
	p := s.cfg.Params
	value, err := a.bytesOf(row[p.PayloadColumn])
	if err != nil {
		return nil, fmt.Errorf("%s: message %s: payload_column %s: %w", s, d.MessageID, p.PayloadColumn, err)
	}
	var key []byte
	if p.KeyColumn != "" {
		if key, err = a.bytesOf(row[p.KeyColumn]); err != nil {
			return nil, fmt.Errorf("%s: message %s: key_column %s: %w", s, d.MessageID, p.KeyColumn, err)
		}
	}
	r := a.record()
	r.Topic, r.Key, r.Value = p.Topic, key, value
	if p.MessageIDHeader != "" {
		r.Headers = a.header(p.MessageIDHeader, a.text(d.MessageID))
	}
	return r, nil
}

// WriteBestEffort writes rows (the at_most_once_strategy queue's) with the idempotent producer,
// one attempt; the runtime drops the rows on error.
func (s *Sink) WriteBestEffort(ctx context.Context, rows []map[string]any) error {
	if err := s.open(ctx, false); err != nil {
		return err
	}
	a := newArena(len(rows))
	recs := make([]*kgo.Record, 0, len(rows))
	for _, row := range rows {
		r, err := s.record(a, &connector.Delivery{Row: row})
		if err != nil {
			return err
		}
		recs = append(recs, r)
	}
	if err := s.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return s.produceErr(err)
	}
	return nil
}

// WriteBeforeCommit writes an epoch's messages (TAtLeastOnceKafkaSink) with the idempotent
// producer and returns once Kafka acknowledged every record: the epoch commits only then,
// and a restart before its commit writes them again (at-least-once).
func (s *Sink) WriteBeforeCommit(ctx context.Context, msgs []flow.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	if err := s.open(ctx, false); err != nil {
		return err
	}
	a := newArena(len(msgs))
	recs := make([]*kgo.Record, 0, len(msgs))
	for i := range msgs {
		r, err := s.record(a, &connector.Delivery{MessageID: msgs[i].MessageID, Row: msgs[i].Payload})
		if err != nil {
			return err
		}
		recs = append(recs, r)
	}
	if err := s.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return s.produceErr(err)
	}
	return nil
}

// decodeRow decodes a stored row (a YSON map); the SDK decoder panics on some malformed
// input, which becomes an error here.
func decodeRow(b []byte, row *map[string]any) (err error) {
	// The runtime stores rows as ybin writes them: its decoder reads them without the SDK's
	// reflection (the SDK's Unmarshal was a third of a delivery's CPU), anything else goes
	// to the SDK.
	if m, ok := ybin.DecodeMap(b); ok {
		*row = m
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed YSON: %v", r)
		}
	}()
	return sdkyson.Unmarshal(b, row)
}
