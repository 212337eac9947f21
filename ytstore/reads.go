// Reads of the epoch's tables: dedup lookups, states, timers, partition states, outputs and dead letters.

package ytstore

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yt"
)

// DedupHit is what the dedup index holds for one looked-up message.
type DedupHit struct {
	Found bool
	// PayloadFingerprint is the fingerprint registered with the message (0: none).
	PayloadFingerprint uint64
}

// compactLookupKey is the key of a compact_input_messages lookup.
type compactLookupKey []byte

// MarshalYSON implements yson.StreamMarshaler.
func (k compactLookupKey) MarshalYSON(w *yson.Writer) error {
	w.BeginMap()
	w.MapKeyString("deduplication_message_key")
	w.Bytes(k)
	w.EndMap()
	return w.Err()
}

// dedupLookupRow is what a dedup lookup reads of a found row: the payload fingerprint. The
// other columns are not decoded; a row without system_timestamp (a message without one) is
// found like any other.
type dedupLookupRow struct {
	PayloadFingerprint *uint64 `yson:"payload_fingerprint"`
}

// lookup reads rows by keys with keep_missing_rows: the result has one entry per key, nil
// for a missing row.
func lookup[T any](ctx context.Context, s *Store, table string, keys []any) ([]*T, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	p := s.child(table)
	r, err := s.yc.LookupRows(ctx, p, keys, &yt.LookupRowsOptions{KeepMissingRows: true})
	if err != nil {
		return nil, fmt.Errorf("ytstore: lookup in %s: %w", p, classify(err))
	}
	defer func() { _ = r.Close() }()
	out := make([]*T, 0, len(keys))
	for r.Next() {
		var row *T
		if err := r.Scan(&row); err != nil {
			return nil, fmt.Errorf("ytstore: lookup in %s: decode row: %w", p, err)
		}
		out = append(out, row)
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("ytstore: lookup in %s: %w", p, classify(err))
	}
	if len(out) != len(keys) {
		return nil, fmt.Errorf("ytstore: lookup in %s: %d rows for %d keys", p, len(out), len(keys))
	}
	return out, nil
}

// LookupDedup reports, for each key, whether it is in the dedup index (already processed).
func (s *Store) LookupDedup(ctx context.Context, keys []DedupKey) ([]bool, error) {
	hits, err := s.LookupDedupRows(ctx, keys)
	if err != nil {
		return nil, err
	}
	found := make([]bool, len(hits))
	for i, h := range hits {
		found[i] = h.Found
	}
	return found, nil
}

// LookupDedupRows reports, per key, whether the dedup index holds the message and the payload
// fingerprint it was registered with.
func (s *Store) LookupDedupRows(ctx context.Context, keys []DedupKey) ([]DedupHit, error) {
	hits := make([]DedupHit, len(keys))
	var plain []any
	compact := make([]any, 0, len(keys))
	var plainAt []int
	compactAt := make([]int, 0, len(keys))
	for i, k := range keys {
		if k.Compact {
			compact = append(compact, compactLookupKey(k.compactKey()))
			compactAt = append(compactAt, i)
		} else {
			plain = append(plain, map[string]any{"computation_id": k.ComputationID, "key": k.Key, "message_id": k.MessageID})
			plainAt = append(plainAt, i)
		}
	}
	rows, err := lookup[dedupLookupRow](ctx, s, TableInputMessages, plain)
	if err != nil {
		return nil, err
	}
	for j, r := range rows {
		if r != nil {
			hits[plainAt[j]] = DedupHit{Found: true, PayloadFingerprint: fingerprintIn(r.PayloadFingerprint)}
		}
	}
	crows, err := lookup[dedupLookupRow](ctx, s, TableCompactInputMessages, compact)
	if err != nil {
		return nil, err
	}
	for j, r := range crows {
		if r != nil {
			hits[compactAt[j]] = DedupHit{Found: true, PayloadFingerprint: fingerprintIn(r.PayloadFingerprint)}
		}
	}
	return hits, nil
}

// quote is a query-language string literal.
func quote(s string) string { return strconv.Quote(s) }

// LoadStates reads all states of the given key hashes of a computation (the caller filters
// by exact key).
func (s *Store) LoadStates(ctx context.Context, computationID string, hashes []uint64) ([]StateRow, error) {
	if len(hashes) == 0 {
		return nil, nil
	}
	var rows []StateRow
	const chunk = 500
	for start := 0; start < len(hashes); start += chunk {
		end := min(start+chunk, len(hashes))
		lits := make([]string, 0, end-start)
		for _, h := range hashes[start:end] {
			lits = append(lits, strconv.FormatUint(h, 10)+"u")
		}
		part, err := selectAll[StateRow](ctx, s, TableStates,
			"computation_id = "+quote(computationID)+" and key_hash in ("+strings.Join(lits, ", ")+")")
		if err != nil {
			return nil, err
		}
		rows = append(rows, part...)
	}
	return rows, nil
}

// LoadTimers reads the timers of a computation whose key hash lies in [lower, upper)
// (upper 0 = 2^64).
func (s *Store) LoadTimers(ctx context.Context, computationID string, lower, upper uint64) ([]TimerRow, error) {
	where := "computation_id = " + quote(computationID) + " and key_hash >= " + strconv.FormatUint(lower, 10) + "u"
	if upper != 0 {
		where += " and key_hash < " + strconv.FormatUint(upper, 10) + "u"
	}
	return selectAll[TimerRow](ctx, s, TableTimers, where)
}

// LoadPartitionStates reads the states of a partition: name to YSON bytes.
func (s *Store) LoadPartitionStates(ctx context.Context, partitionID string) (map[string][]byte, error) {
	rows, err := selectAll[partitionStateRow](ctx, s, TablePartitionStates, "partition_id = "+quote(partitionID))
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(rows))
	for _, r := range rows {
		out[r.Name] = r.State
	}
	return out, nil
}

// LoadOutputs reads the output store rows of a partition (messages not yet acknowledged or
// delivered), ordered by destination then message id.
func (s *Store) LoadOutputs(ctx context.Context, partitionID string) ([]OutputRow, error) {
	// Rows of output_messages were written by earlier versions (one per message); they are
	// delivered and deleted like chunked ones.
	rows, err := selectAll[OutputRow](ctx, s, TableOutputMessages, "partition_id = "+quote(partitionID))
	if err != nil {
		return nil, err
	}
	chunks, err := selectAll[outputChunkRow](ctx, s, TableOutputChunks, "partition_id = "+quote(partitionID))
	if err != nil {
		return nil, err
	}
	sort.Slice(chunks, func(i, j int) bool {
		a, b := chunks[i], chunks[j]
		if a.Destination != b.Destination {
			return a.Destination < b.Destination
		}
		if a.ChunkID != b.ChunkID {
			return a.ChunkID < b.ChunkID
		}
		return a.Part < b.Part
	})
	for _, c := range chunks {
		msgs, err := decodeChunk(c.Data, c.MessageCount, c.PartitionID, c.Destination, OutputChunk{ID: c.ChunkID, Part: c.Part})
		if err != nil {
			return nil, fmt.Errorf("ytstore: read %s: %w", s.child(TableOutputChunks), err)
		}
		rows = append(rows, msgs...)
	}
	return rows, nil
}

// DeadLetters reads the rows of dead_letters, in key order.
func (s *Store) DeadLetters(ctx context.Context) ([]DeadLetterRow, error) {
	return selectAll[DeadLetterRow](ctx, s, TableDeadLetters, "")
}

// DropDeadLetters deletes letters (by their key columns) from dead_letters, in one request.
func (s *Store) DropDeadLetters(ctx context.Context, letters []DeadLetterRow) error {
	if len(letters) == 0 {
		return nil
	}
	keys := make([]any, len(letters))
	for i, l := range letters {
		keys[i] = map[string]any{"computation_id": l.ComputationID, "key_hash": l.KeyHash, "key": l.Key, "message_id": l.MessageID}
	}
	if err := s.yc.DeleteRows(ctx, s.child(TableDeadLetters), keys, nil); err != nil {
		return fmt.Errorf("ytstore: delete %d rows of %s: %w", len(keys), TableDeadLetters, classify(err))
	}
	return nil
}

// StateKey is one key that has state: its hash and encoded key.
type StateKey struct {
	KeyHash uint64 `yson:"key_hash"`
	Key     []byte `yson:"key"`
}

// ScanStateKeys reads, in key order, the distinct keys of a computation that have a state of
// one of names (any state when names is empty) with a key hash in [from, to) (to 0 = 2^64),
// reading at most limit state rows. next is where the following scan starts: to when the
// range was read to its end, else the hash of the last key read plus one. The keys of one
// hash are never split between scans (a hash whose rows pass limit is read whole).
func (s *Store) ScanStateKeys(ctx context.Context, computationID string, names []string, from, to uint64, limit int) (keys []StateKey, next uint64, err error) {
	where := "computation_id = " + quote(computationID) + " and key_hash >= " + strconv.FormatUint(from, 10) + "u"
	if to != 0 {
		where += " and key_hash < " + strconv.FormatUint(to, 10) + "u"
	}
	if len(names) > 0 {
		lits := make([]string, len(names))
		for i, n := range names {
			lits[i] = quote(n)
		}
		where += " and name in (" + strings.Join(lits, ", ") + ")"
	}
	rows, err := selectAll[StateKey](ctx, s, TableStates, where+" order by key_hash, key limit "+strconv.Itoa(limit))
	if err != nil {
		return nil, 0, err
	}
	next = to
	if len(rows) == limit && limit > 0 {
		last := rows[len(rows)-1].KeyHash
		if rows[0].KeyHash == last {
			// One hash fills the limit: read it whole.
			rows, err = selectAll[StateKey](ctx, s, TableStates, where+" and key_hash = "+strconv.FormatUint(last, 10)+"u")
			if err != nil {
				return nil, 0, err
			}
			slices.SortFunc(rows, func(a, b StateKey) int { return bytes.Compare(a.Key, b.Key) })
		} else {
			for len(rows) > 0 && rows[len(rows)-1].KeyHash == last {
				rows = rows[:len(rows)-1] // the last hash may go on past the limit: the next scan reads it
			}
			last--
		}
		next = last + 1
	}
	for _, r := range rows {
		if n := len(keys); n > 0 && keys[n-1].KeyHash == r.KeyHash && bytes.Equal(keys[n-1].Key, r.Key) {
			continue
		}
		keys = append(keys, r)
	}
	return keys, next, nil
}

// PartitionToken reads the token of the partition's last committed epoch; found is false
// when the partition never committed.
func (s *Store) PartitionToken(ctx context.Context, partitionID string) (token uint64, found bool, err error) {
	rows, err := lookup[partitionTransactionRow](ctx, s, TablePartitionTransactions, []any{map[string]any{"partition_id": partitionID}})
	if err != nil {
		return 0, false, err
	}
	if len(rows) == 0 || rows[0] == nil {
		return 0, false, nil
	}
	return rows[0].Token, true, nil
}

// GenerateTimestamp returns a fresh cluster timestamp: unique and increasing.
func (s *Store) GenerateTimestamp(ctx context.Context) (uint64, error) {
	ts, err := s.yc.GenerateTimestamp(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("ytstore: generate timestamp: %w", classify(err))
	}
	return uint64(ts), nil
}
