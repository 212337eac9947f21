// Replaying dead letters: the replay partitions of the output store, which the jobs of the
// letter's computation read, and the transaction that moves letters there.

package ytstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The replay partitions of the output store: pipeline-owned partitions (no job produces
// into them) holding replayed dead letters, one chunk row per letter, destination the
// letter's computation. Messages are read by the computation's jobs as inputs, timers fire
// as due timers; the job that processes one deletes its row in that epoch's commit.
const (
	ReplayPartition      = "@replay"
	ReplayTimerPartition = "@replay_timers"
)

// Replay is one dead letter to replay as a new message (or timer) with id MessageID.
type Replay struct {
	Letter    DeadLetterRow
	MessageID string
}

// ReplayMessageID is the id a letter's message gets when replayed: the letter's id with its
// replay generation, "~r1" appended on the first replay and the generation counted up on
// later ones ("m~r1" → "m~r2"). The old id is in the dedup index and would be dropped; the
// same letter replayed twice (two commands racing) gets the same id, so the reader's dedup
// keeps one.
func ReplayMessageID(letterID string) string {
	if i := strings.LastIndex(letterID, "~r"); i >= 0 {
		if n, err := strconv.ParseUint(letterID[i+2:], 10, 32); err == nil && n > 0 && letterID[i+2] != '0' {
			return letterID[:i] + "~r" + strconv.FormatUint(n+1, 10)
		}
	}
	return letterID + "~r1"
}

// ReplayRow is the output store row a replayed letter becomes in its replay partition, in
// the chunk (chunkID, part): the new message id, the letter's stream, key, payload and event
// timestamp, and systemTS (now: an old system timestamp could lie below the SystemWatermark
// the dedup collection relies on). A timer's trigger rides in SequenceNumber.
func ReplayRow(r Replay, systemTS, chunkID uint64, part int64) OutputRow {
	l := r.Letter
	row := OutputRow{
		PartitionID: ReplayPartition, Destination: l.ComputationID, MessageID: r.MessageID, StreamID: l.StreamID,
		Key: l.Key, KeyHash: l.KeyHash, Payload: l.Payload, EventTimestamp: l.EventTimestamp, SystemTimestamp: systemTS,
		Chunk: OutputChunk{ID: chunkID, Part: part},
	}
	if l.Timer {
		row.PartitionID = ReplayTimerPartition
		row.SequenceNumber = int64(l.Trigger)
	}
	return row
}

// ReplayDeadLetters writes each replay's letter as a new message (or timer) into the replay
// partitions and deletes the letter from dead_letters, in one tablet transaction: a command
// killed midway replays all of them or none. systemTS is the replayed messages' system
// timestamp (µs, the current time).
//
// Invariant: a replayed letter leaves dead_letters in the transaction that puts it into the
// replay partition, and the job that processes it deletes it there in its epoch commit, so
// it is processed exactly once (TestReplayDeadLettersExactlyOnce).
func (s *Store) ReplayDeadLetters(ctx context.Context, replays []Replay, systemTS uint64) error {
	if len(replays) == 0 {
		return nil
	}
	chunkID, err := s.GenerateTimestamp(ctx)
	if err != nil {
		return err
	}
	rows := make([]OutputRow, len(replays))
	keys := make([]any, len(replays))
	for i, r := range replays {
		rows[i] = ReplayRow(r, systemTS, chunkID, int64(i))
		l := r.Letter
		keys[i] = map[string]any{"computation_id": l.ComputationID, "key_hash": l.KeyHash, "key": l.Key, "message_id": l.MessageID}
	}
	chunks, err := chunkRows(rows)
	if err != nil {
		return err
	}
	tx, err := s.beginTabletTx(ctx)
	if err != nil {
		return err
	}
	defer tx.abort()
	if err := tx.insert(ctx, TableOutputChunks, chunks); err != nil {
		return err
	}
	if err := tx.delete(ctx, TableDeadLetters, keys); err != nil {
		return err
	}
	if err := tx.commit(ctx); err != nil {
		return fmt.Errorf("ytstore: replay %d dead letters: %w", len(replays), err)
	}
	return nil
}

// LoadReplays reads the replayed messages and timers of a computation whose key hash lies
// in [lower, upper) (upper 0 = 2^64) from the replay partitions, each with its chunk.
func (s *Store) LoadReplays(ctx context.Context, computationID string, lower, upper uint64) (messages, timers []OutputRow, err error) {
	where := "(partition_id = " + quote(ReplayPartition) + " or partition_id = " + quote(ReplayTimerPartition) + ") and destination = " + quote(computationID)
	chunks, err := selectAll[outputChunkRow](ctx, s, TableOutputChunks, where)
	if err != nil {
		return nil, nil, err
	}
	for _, c := range chunks {
		msgs, err := decodeChunk(c.Data, c.MessageCount, c.PartitionID, c.Destination, OutputChunk{ID: c.ChunkID, Part: c.Part})
		if err != nil {
			return nil, nil, fmt.Errorf("ytstore: read replays of %s in %s: %w", computationID, s.child(TableOutputChunks), err)
		}
		for _, m := range msgs {
			if m.KeyHash < lower || upper != 0 && m.KeyHash >= upper {
				continue
			}
			if c.PartitionID == ReplayTimerPartition {
				timers = append(timers, m)
			} else {
				messages = append(messages, m)
			}
		}
	}
	return messages, timers, nil
}

// CountDroppedDeadLetters adds dropped (computation → letters deleted) to the pipeline's
// @dead_letters_dropped, in a master transaction that reads and writes it. A metric only:
// the deletion itself (DropDeadLetters) does not depend on it.
func (s *Store) CountDroppedDeadLetters(ctx context.Context, dropped map[string]int64) error {
	if len(dropped) == 0 {
		return nil
	}
	tx, err := s.yc.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("ytstore: count dropped dead letters of %s: begin: %w", s.path, classify(err))
	}
	defer func() { _ = tx.Abort() }()
	attr := s.path.Attr("dead_letters_dropped")
	counts := map[string]int64{}
	if err := tx.GetNode(ctx, attr, &counts, nil); err != nil && !errors.Is(classify(err), ErrNotFound) {
		return fmt.Errorf("ytstore: read %s: %w", attr, classify(err))
	}
	for c, n := range dropped {
		counts[c] += n
	}
	if err := tx.SetNode(ctx, attr, counts, nil); err != nil {
		return fmt.Errorf("ytstore: set %s: %w", attr, classify(err))
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("ytstore: set %s: commit: %w", attr, classifyCommit(err))
	}
	return nil
}
