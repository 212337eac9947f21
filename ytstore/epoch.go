package ytstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"go.ytsaurus.tech/library/go/core/log"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yt"

	"github.com/ytflow/yt-flow/internal/fingerprint"
)

// ErrNotApplied wraps an epoch commit that failed before its commit request was sent: the
// transaction was aborted and nothing of it is visible. The epoch may be retried.
var ErrNotApplied = errors.New("epoch not applied")

// DedupKey identifies one input message in the dedup index of a computation.
type DedupKey struct {
	ComputationID string
	// Key is the encoded group-by key, KeyHash its routing hash (the first key column when
	// it is a uint64 hash).
	Key     []byte
	KeyHash uint64
	// MessageID is the message's unique id.
	MessageID string
	// Compact selects compact_input_messages instead of input_messages.
	Compact bool
}

// compactKey is the compact index row key: computation id, a zero byte, the big-endian key
// hash and the two big-endian halves of the message id's 128-bit fingerprint.
func (k DedupKey) compactKey() []byte {
	return k.appendCompactKey(make([]byte, 0, k.compactKeyLen()))
}

// compactKeyLen is the length of compactKey().
func (k DedupKey) compactKeyLen() int { return len(k.ComputationID) + 1 + 8 + 16 }

// appendCompactKey appends compactKey() to b.
func (k DedupKey) appendCompactKey(b []byte) []byte {
	b = append(b, k.ComputationID...)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint64(b, k.KeyHash)
	lo, hi := fingerprint.String128(k.MessageID)
	b = binary.BigEndian.AppendUint64(b, hi)
	b = binary.BigEndian.AppendUint64(b, lo)
	return b
}

type inputMessageRow struct {
	ComputationID      string  `yson:"computation_id"`
	Key                []byte  `yson:"key"`
	MessageID          string  `yson:"message_id"`
	SystemTimestamp    uint64  `yson:"system_timestamp,omitempty"`
	PayloadFingerprint *uint64 `yson:"payload_fingerprint,omitempty"`
}

type compactInputMessageRow struct {
	DedupKey           []byte  `yson:"deduplication_message_key"`
	SystemTimestamp    uint64  `yson:"system_timestamp,omitempty"`
	PayloadFingerprint *uint64 `yson:"payload_fingerprint,omitempty"`
}

// fingerprintOf is the payload_fingerprint column value of fp: absent (null) for 0.
func fingerprintOf(fp uint64) *uint64 {
	if fp == 0 {
		return nil
	}
	return &fp
}

// fingerprintIn reads a payload_fingerprint column value (0 for null).
func fingerprintIn(fp *uint64) uint64 {
	if fp == nil {
		return 0
	}
	return *fp
}

func (d DedupRow) row() any {
	k := d.DedupKey
	if k.Compact {
		return compactInputMessageRow{DedupKey: k.compactKey(), SystemTimestamp: d.SystemTimestamp, PayloadFingerprint: fingerprintOf(d.PayloadFingerprint)}
	}
	return inputMessageRow{ComputationID: k.ComputationID, Key: k.Key, MessageID: k.MessageID, SystemTimestamp: d.SystemTimestamp, PayloadFingerprint: fingerprintOf(d.PayloadFingerprint)}
}

// DedupRow registers one processed input in the dedup index.
type DedupRow struct {
	DedupKey
	// SystemTimestamp is the message's system timestamp; rows below the system watermark
	// are garbage-collected.
	SystemTimestamp uint64
	// PayloadFingerprint is the FarmHash fingerprint of the message's YSON payload (0: not
	// known). A later copy of the message with another fingerprint is a nondeterministic
	// recomputation, which the reader reports.
	PayloadFingerprint uint64
}

// StateRow is one named state of one key; a nil State deletes the row when written.
type StateRow struct {
	ComputationID string `yson:"computation_id"`
	KeyHash       uint64 `yson:"key_hash"`
	Key           []byte `yson:"key"`
	Name          string `yson:"name"`
	State         []byte `yson:"state"`
}

func (r StateRow) key() any {
	return map[string]any{"computation_id": r.ComputationID, "key_hash": r.KeyHash, "key": r.Key, "name": r.Name}
}

// TimerRow is one stored timer.
type TimerRow struct {
	ComputationID    string `yson:"computation_id"`
	KeyHash          uint64 `yson:"key_hash"`
	Key              []byte `yson:"key"`
	MessageID        string `yson:"message_id"`
	StreamID         string `yson:"stream_id"`
	SystemTimestamp  uint64 `yson:"system_timestamp"`
	EventTimestamp   uint64 `yson:"event_timestamp"`
	TriggerTimestamp uint64 `yson:"trigger_timestamp"`
	Payload          []byte `yson:"payload"`
}

func (r TimerRow) key() any {
	return map[string]any{"computation_id": r.ComputationID, "key_hash": r.KeyHash, "key": r.Key, "message_id": r.MessageID}
}

// OutputRow is one message in the output store, addressed to one destination (a reading
// computation or an asynchronous sink).
type OutputRow struct {
	PartitionID     string `yson:"partition_id"`
	Destination     string `yson:"destination"`
	MessageID       string `yson:"message_id"`
	StreamID        string `yson:"stream_id"`
	Key             []byte `yson:"key"`
	KeyHash         uint64 `yson:"key_hash"`
	Payload         []byte `yson:"payload"`
	EventTimestamp  uint64 `yson:"event_timestamp"`
	SystemTimestamp uint64 `yson:"system_timestamp"`
	// SequenceNumber orders rows for asynchronous queue sinks (producer seqNo); 0 otherwise.
	SequenceNumber int64 `yson:"sequence_number"`
	// Chunk is the output store chunk holding the message (AssignChunks); zero for a row
	// of the per-message table output_messages written by an earlier version.
	Chunk OutputChunk `yson:"-"`
	// Born is the birth of a message held only in memory (swift outputs): a cluster timestamp
	// before which it cannot have been delivered, the same on every recomputation; 0 when not
	// known. Not stored. See Birth.
	Born uint64 `yson:"-"`
	// Mem is the payload as the epoch produced it, when Payload decodes to a map equal to it
	// type for type (ybin.Decoded) and no other row holds it: a reader in the same process
	// may take it instead of decoding Payload. Not stored; nil for rows read back.
	Mem map[string]any `yson:"-"`
	// MemKey is Key decoded (its values of the types decoding gives), set with Mem.
	MemKey []any `yson:"-"`
}

// Birth is the cluster timestamp before which the message cannot have reached any reader:
// its chunk id (the token of the epoch that stored it, drawn before that epoch committed and
// so before the message could be sent) for a stored message, else Born; 0 when not known.
func (r *OutputRow) Birth() uint64 {
	if r.Chunk.ID != 0 {
		return r.Chunk.ID
	}
	return r.Born
}

// OutputKey identifies an output store row: a chunk (Chunk set, MessageID empty) or a
// per-message row of output_messages (zero Chunk).
type OutputKey struct {
	PartitionID, Destination, MessageID string
	Chunk                               OutputChunk
}

// StoreKey is the output store row that holds r.
func (r *OutputRow) StoreKey() OutputKey {
	if r.Chunk.ID != 0 {
		return OutputKey{PartitionID: r.PartitionID, Destination: r.Destination, Chunk: r.Chunk}
	}
	return OutputKey{PartitionID: r.PartitionID, Destination: r.Destination, MessageID: r.MessageID}
}

func (k OutputKey) key() any {
	if k.Chunk.ID != 0 {
		return map[string]any{"partition_id": k.PartitionID, "destination": k.Destination, "chunk_id": k.Chunk.ID, "part": k.Chunk.Part}
	}
	return map[string]any{"partition_id": k.PartitionID, "destination": k.Destination, "message_id": k.MessageID}
}

type partitionStateRow struct {
	PartitionID string `yson:"partition_id"`
	Name        string `yson:"name"`
	State       []byte `yson:"state"`
}

type partitionTransactionRow struct {
	PartitionID string `yson:"partition_id"`
	Token       uint64 `yson:"last_transaction_start_timestamp"`
}

// DeadLetterRow is a row of dead_letters: a message (or a due timer) a computation's
// process function kept failing on, set aside by the epoch that acknowledged it.
type DeadLetterRow struct {
	ComputationID string `yson:"computation_id"`
	KeyHash       uint64 `yson:"key_hash"`
	// Key is the encoded key (epoch.EncodeKey); MessageID the message id, or a timer's id.
	Key       []byte `yson:"key"`
	MessageID string `yson:"message_id"`
	StreamID  string `yson:"stream_id"`
	// PartitionID is the partition of the job that set it aside.
	PartitionID string `yson:"partition_id"`
	// Payload is the message's payload as YSON (a timer's payload, if any).
	Payload []byte `yson:"payload"`
	// Error is the error of its last failed invocation; Attempts how many attempts of its
	// epoch failed before it was set aside.
	Error    string `yson:"error"`
	Attempts uint64 `yson:"attempts"`
	Timer    bool   `yson:"timer"`
	// Trigger is a timer's trigger (µs); 0 for a message.
	Trigger         uint64 `yson:"trigger"`
	SystemTimestamp uint64 `yson:"system_timestamp"`
	EventTimestamp  uint64 `yson:"event_timestamp"`
	// DeadAt is the token (a cluster timestamp) of the epoch that set it aside.
	DeadAt uint64 `yson:"dead_at"`
}

// SinkWrite writes rows to a user table inside the epoch transaction: an insert (upsert for
// sorted tables, append for ordered tables) or, with Delete, a deletion by key.
type SinkWrite struct {
	Path   string
	Rows   []map[string]any
	Delete bool
}

// EpochWrite is everything one epoch commits atomically.
type EpochWrite struct {
	// PartitionID is the job's partition; Lease its lease transaction (prerequisite).
	PartitionID string
	Lease       string
	// Token identifies this attempt; it is stored in partition_transactions and compared by
	// PartitionToken after an unknown outcome. Use a fresh GenerateTimestamp per attempt.
	Token uint64
	// Dedup registers processed inputs.
	Dedup []DedupRow
	// States: rows with a nil State are deleted, others inserted.
	States []StateRow
	// TimersFired are deleted, TimersSet inserted.
	TimersFired, TimersSet []TimerRow
	// OutputsAdd are inserted into the output store, one chunk row per destination and part
	// (rows not stamped by AssignChunks are stamped with Token in place); OutputsDone are
	// deleted from it (chunk keys, or message keys of output_messages).
	OutputsAdd  []OutputRow
	OutputsDone []OutputKey
	// PartitionStates: name to new YSON bytes; nil deletes.
	PartitionStates map[string][]byte
	// Sinks are synchronous sink writes.
	Sinks []SinkWrite
	// DeadLetters are inserted into dead_letters: the messages and timers the epoch
	// acknowledges without processing them (failure_policy dead_letter).
	DeadLetters []DeadLetterRow
	// Tx, when set, is the tablet transaction to commit in, begun ahead with BeginEpochTx
	// (a transaction serves one commit attempt; a used or nil Tx makes CommitEpoch begin
	// its own).
	Tx *EpochTx
}

// CommitEpoch commits w in one tablet transaction whose prerequisite is the lease.
//
// Errors: ErrLeaseLost — the lease is dead (the job must stop, nothing was written);
// ErrCommitUnknown — the outcome is unknown (call PartitionToken); ErrNotApplied — the
// transaction failed before the commit request and was aborted; any other error means the
// commit was rejected and did not apply.
//
// Invariant: dedup rows, states, timers, outputs, partition state, sink writes and the
// partition token commit together or not at all (TestCommitEpochAtomic, TestZombieCommitRejected).
func (s *Store) CommitEpoch(ctx context.Context, w *EpochWrite) error {
	var tx *tableTx
	if w.Tx.take() {
		tx = w.Tx.tx
	} else {
		var err error
		if tx, err = s.beginTabletTx(ctx); err != nil {
			return fmt.Errorf("%w: partition %s: %w", ErrNotApplied, w.PartitionID, err)
		}
	}
	defer tx.abort()
	if err := s.writeEpoch(ctx, tx, w); err != nil {
		return fmt.Errorf("%w: partition %s: %w", ErrNotApplied, w.PartitionID, err)
	}
	if err := tx.commit(ctx, w.Lease); err != nil {
		return fmt.Errorf("ytstore: commit epoch of partition %s under lease %s: %w", w.PartitionID, w.Lease, err)
	}
	return nil
}

// dedupFingerprints reports whether the pipeline's dedup tables have the payload_fingerprint
// column. A pipeline created before the column existed keeps working without it (copies of
// committed messages are then not compared); a failed check counts as "no column".
func (s *Store) dedupFingerprints(ctx context.Context) bool {
	s.fingerprintsOnce.Do(func() {
		var sc schema.Schema
		if err := s.yc.GetNode(ctx, s.child(TableCompactInputMessages).Attr("schema"), &sc, nil); err != nil {
			s.logger.Warn("dedup index schema unreadable: payload fingerprints are not stored", log.Error(err))
			return
		}
		for _, c := range sc.Columns {
			if c.Name == "payload_fingerprint" {
				s.fingerprints = true
			}
		}
		if !s.fingerprints {
			s.logger.Warn("the dedup index has no payload_fingerprint column (pipeline created by an older version): payload fingerprints are not stored")
		}
	})
	return s.fingerprints
}

// writeEpoch writes the rows of w in tx. The writes to different tables are independent and
// run concurrently (a tablet transaction applies all of them at commit or none); the writes
// to one table keep their order.
func (s *Store) writeEpoch(ctx context.Context, tx *tableTx, w *EpochWrite) error {
	var plain []any
	withFingerprints := len(w.Dedup) == 0 || s.dedupFingerprints(ctx)
	compact := compactDedupRows{rows: w.Dedup, fingerprints: withFingerprints}
	for _, d := range w.Dedup {
		if d.Compact {
			continue
		}
		if !withFingerprints {
			d.PayloadFingerprint = 0 // omitted from the row
		}
		plain = append(plain, d.row())
	}
	var putStates, delStates []any
	for i := range w.States {
		st := &w.States[i] // by pointer: a StateRow boxed as a value would be copied to the heap
		if st.State == nil {
			delStates = append(delStates, st.key())
		} else {
			if putStates == nil {
				putStates = make([]any, 0, len(w.States)-i)
			}
			putStates = append(putStates, st)
		}
	}
	var firedKeys []any
	for _, t := range w.TimersFired {
		firedKeys = append(firedKeys, t.key())
	}
	var doneChunks, doneLegacy []any
	for _, k := range w.OutputsDone {
		if k.Chunk.ID != 0 {
			doneChunks = append(doneChunks, k.key())
		} else {
			doneLegacy = append(doneLegacy, k.key())
		}
	}
	if len(w.OutputsAdd) > 0 && w.OutputsAdd[0].Chunk.ID == 0 {
		AssignChunks(w.OutputsAdd, w.Token)
	}
	chunks, err := chunkRows(w.OutputsAdd)
	if err != nil {
		return err
	}
	var putPS, delPS []any
	for name, st := range w.PartitionStates {
		if st == nil {
			delPS = append(delPS, map[string]any{"partition_id": w.PartitionID, "name": name})
		} else {
			putPS = append(putPS, partitionStateRow{PartitionID: w.PartitionID, Name: name, State: st})
		}
	}
	sinks := map[string][]SinkWrite{} // by table, in order
	var sinkOrder []string
	for _, sw := range w.Sinks {
		if len(sw.Rows) == 0 {
			continue
		}
		if _, ok := sinks[sw.Path]; !ok {
			sinkOrder = append(sinkOrder, sw.Path)
		}
		sinks[sw.Path] = append(sinks[sw.Path], sw)
	}

	// Only the tables the epoch writes to get a write: a small epoch writes three or four
	// of them, and each write that runs beside the others costs a goroutine (whose stack
	// grows through the SDK's call chain), so empty ones must not.
	var g writeGroup
	if len(plain) > 0 {
		g.add(func(ctx context.Context) error { return tx.insert(ctx, TableInputMessages, plain) })
	}
	if len(w.Dedup) > len(plain) { // the rest are compact
		g.add(func(ctx context.Context) error { return tx.insertList(ctx, TableCompactInputMessages, compact) })
	}
	if len(putStates)+len(delStates) > 0 {
		g.add(func(ctx context.Context) error {
			if err := tx.insert(ctx, TableStates, putStates); err != nil {
				return err
			}
			return tx.delete(ctx, TableStates, delStates)
		})
	}
	if len(firedKeys)+len(w.TimersSet) > 0 {
		g.add(func(ctx context.Context) error {
			if err := tx.delete(ctx, TableTimers, firedKeys); err != nil {
				return err
			}
			return tx.insert(ctx, TableTimers, toAny(w.TimersSet))
		})
	}
	if len(doneChunks)+len(chunks) > 0 {
		g.add(func(ctx context.Context) error {
			if err := tx.delete(ctx, TableOutputChunks, doneChunks); err != nil {
				return err
			}
			return tx.insert(ctx, TableOutputChunks, chunks)
		})
	}
	if len(doneLegacy) > 0 {
		g.add(func(ctx context.Context) error { return tx.delete(ctx, TableOutputMessages, doneLegacy) })
	}
	if len(putPS)+len(delPS) > 0 {
		g.add(func(ctx context.Context) error {
			if err := tx.insert(ctx, TablePartitionStates, putPS); err != nil {
				return err
			}
			return tx.delete(ctx, TablePartitionStates, delPS)
		})
	}
	for _, path := range sinkOrder {
		g.add(func(ctx context.Context) error {
			for _, sw := range sinks[path] {
				if err := s.writeSink(ctx, tx, sw); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if len(w.DeadLetters) > 0 {
		g.add(func(ctx context.Context) error { return tx.insert(ctx, TableDeadLetters, toAny(w.DeadLetters)) })
	}
	g.add(func(ctx context.Context) error {
		return tx.insert(ctx, TablePartitionTransactions, []any{partitionTransactionRow{PartitionID: w.PartitionID, Token: w.Token}})
	})
	err = g.wait(ctx)
	s.writeGoroutines.Add(int64(g.spawned))
	// Every insert has returned: its rows are encoded, the chunks' data is read no more.
	releaseChunks(chunks)
	return err
}

// writeGroup runs the writes of an epoch concurrently and keeps the first error: every
// write but the last in a goroutine of its own, the last in the caller's.
type writeGroup struct {
	fs      []func(context.Context) error
	spawned int // goroutines started by wait
	wg      sync.WaitGroup
	mu      sync.Mutex
	first   error
}

// add queues f; wait runs it.
func (g *writeGroup) add(f func(context.Context) error) { g.fs = append(g.fs, f) }

// wait runs the queued writes and returns the first error once all have returned.
func (g *writeGroup) wait(ctx context.Context) error {
	for i, f := range g.fs {
		if i == len(g.fs)-1 {
			g.do(ctx, f)
			break
		}
		g.spawned++
		g.wg.Go(func() { g.do(ctx, f) })
	}
	g.wg.Wait()
	return g.first
}

func (g *writeGroup) do(ctx context.Context, f func(context.Context) error) {
	if err := f(ctx); err != nil {
		g.mu.Lock()
		if g.first == nil {
			g.first = err
		}
		g.mu.Unlock()
	}
}

func (s *Store) writeSink(ctx context.Context, tx *tableTx, sw SinkWrite) error {
	if len(sw.Rows) == 0 {
		return nil
	}
	p := ypath.Path(sw.Path)
	rows := make([]any, len(sw.Rows))
	for i, r := range sw.Rows {
		rows[i] = sinkRow(r)
	}
	if sw.Delete {
		if err := s.yc.DeleteRows(ctx, p, rows, &yt.DeleteRowsOptions{TransactionOptions: tx.opts()}); err != nil {
			return fmt.Errorf("ytstore: delete from sink table %s: %w", p, classify(err))
		}
		return nil
	}
	opts := &yt.InsertRowsOptions{TransactionOptions: tx.opts()}
	buf := getRowBuffer()
	defer putRowBuffer(buf)
	if body, ok := appendSinkRows(*buf, sw.Rows); ok {
		*buf = body
		batch, ok, err := s.rowBatch(body)
		if err != nil {
			return fmt.Errorf("ytstore: write to sink table %s: %w", p, err)
		}
		if ok {
			// A sink table may be ordered (a queue), where rows sent again would be appended
			// twice: a panic fails the write instead (insertBatch).
			if err := s.insertBatch(ctx, p, batch, opts, nil); err != nil {
				return fmt.Errorf("ytstore: write to sink table %s: %w", p, classify(err))
			}
			return nil
		}
	}
	if err := s.yc.InsertRows(ctx, p, rows, opts); err != nil {
		return fmt.Errorf("ytstore: write to sink table %s: %w", p, classify(err))
	}
	return nil
}
