package ytstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yt"
)

// What the administrative commands (yt-flow get-/set-/remove-pipeline-spec, read-states,
// delete-states, show-logs) read and change besides what the runtime uses.

// ChangeSpec replaces the static spec (@spec), or the dynamic spec (@dynamic_spec) when
// dynamic is set, and increments its version, in one master transaction. Inside it the
// version attribute is locked (a concurrent ChangeSpec of the same spec conflicts instead
// of overwriting), the attributes are read and handed to change, which returns the new
// spec: nil removes the attribute. An error from change aborts the transaction, nothing is
// written, and ChangeSpec returns that error as is (so that the caller can branch on it).
// It returns the new version.
func (s *Store) ChangeSpec(ctx context.Context, dynamic bool, change func(a *Attributes) (yson.RawValue, error)) (int64, error) {
	name, versionName := "spec", "spec_version"
	if dynamic {
		name, versionName = "dynamic_spec", "dynamic_spec_version"
	}
	tx, err := s.yc.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("ytstore: change %s/@%s: begin: %w", s.path, name, classify(err))
	}
	defer func() { _ = tx.Abort() }()
	if _, err := tx.LockNode(ctx, s.path, yt.LockShared, &yt.LockNodeOptions{AttributeKey: &versionName}); err != nil {
		return 0, fmt.Errorf("ytstore: lock %s/@%s: %w", s.path, versionName, classify(err))
	}
	var a Attributes
	if err := tx.GetNode(ctx, s.path.Attrs(), &a, &yt.GetNodeOptions{Attributes: attributeNames}); err != nil {
		return 0, fmt.Errorf("ytstore: read attributes of %s: %w", s.path, classify(err))
	}
	cur, version := a.Spec, a.SpecVersion
	if dynamic {
		cur, version = a.DynamicSpec, a.DynamicSpecVersion
	}
	v, err := change(&a)
	if err != nil {
		return 0, err
	}
	version++
	switch {
	case v != nil:
		if err := tx.SetNode(ctx, s.path.Attr(name), v, nil); err != nil {
			return 0, fmt.Errorf("ytstore: set %s/@%s: %w", s.path, name, classify(err))
		}
	case len(cur) > 0:
		if err := tx.RemoveNode(ctx, s.path.Attr(name), nil); err != nil {
			return 0, fmt.Errorf("ytstore: remove %s/@%s: %w", s.path, name, classify(err))
		}
	}
	if err := tx.SetNode(ctx, s.path.Attr(versionName), version, nil); err != nil {
		return 0, fmt.Errorf("ytstore: set %s/@%s: %w", s.path, versionName, classify(err))
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("ytstore: change %s/@%s: commit: %w", s.path, name, classifyCommit(err))
	}
	return version, nil
}

// StateFilter selects rows of the states table; zero fields select everything.
type StateFilter struct {
	// ComputationID selects one computation.
	ComputationID string
	// Key selects one key, in its stored form (the canonical binary YSON list, as the
	// job encodes it). With HasKeyHash the read is a range of the key, without it a scan.
	Key        []byte
	KeyHash    uint64
	HasKeyHash bool
	// Name selects one state name.
	Name string
	// Limit caps the rows returned, the first ones in key order (0: all).
	Limit int
}

func (f StateFilter) where() string {
	var conds []string
	if f.ComputationID != "" {
		conds = append(conds, "computation_id = "+quote(f.ComputationID))
	}
	if f.HasKeyHash {
		conds = append(conds, "key_hash = "+strconv.FormatUint(f.KeyHash, 10)+"u")
	}
	if f.Name != "" {
		conds = append(conds, "name = "+quote(f.Name))
	}
	return strings.Join(conds, " and ")
}

// ReadStates reads the key states that f selects, in key order. The key itself (binary
// bytes) is compared here, not in the query; without a key, a limit is part of the query.
func (s *Store) ReadStates(ctx context.Context, f StateFilter) ([]StateRow, error) {
	where := f.where()
	if f.Limit > 0 && f.Key == nil {
		if where == "" {
			where = "true"
		}
		where += " order by computation_id, key_hash, key, name limit " + strconv.Itoa(f.Limit)
	}
	rows, err := selectAll[StateRow](ctx, s, TableStates, where)
	if err != nil {
		return nil, err
	}
	out := rows[:0]
	for _, r := range rows {
		if f.Key != nil && string(r.Key) != string(f.Key) {
			continue
		}
		out = append(out, r)
		if f.Limit > 0 && len(out) == f.Limit {
			break
		}
	}
	return out, nil
}

// PartitionState is a row of the partition_states table: one named state of a partition
// (a source offset, a sink's progress).
type PartitionState struct {
	PartitionID string `yson:"partition_id"`
	Name        string `yson:"name"`
	State       []byte `yson:"state"`
}

// ReadPartitionStates reads the partition states of one partition (all when partitionID is
// ""), with one name (all when name is ""), at most limit rows (0: all), in key order.
func (s *Store) ReadPartitionStates(ctx context.Context, partitionID, name string, limit int) ([]PartitionState, error) {
	var conds []string
	if partitionID != "" {
		conds = append(conds, "partition_id = "+quote(partitionID))
	}
	if name != "" {
		conds = append(conds, "name = "+quote(name))
	}
	rows, err := selectAll[PartitionState](ctx, s, TablePartitionStates, strings.Join(conds, " and "))
	if err != nil {
		return nil, err
	}
	if limit > 0 && len(rows) > limit {
		rows = rows[:limit]
	}
	return rows, nil
}

// DeleteStates deletes the given key states and partition states in one tablet
// transaction: all of them or, on error, none.
func (s *Store) DeleteStates(ctx context.Context, keys []StateRow, partitions []PartitionState) error {
	tx, err := s.beginTabletTx(ctx)
	if err != nil {
		return err
	}
	defer tx.abort()
	keyRows := make([]any, len(keys))
	for i, r := range keys {
		keyRows[i] = r.key()
	}
	if err := tx.delete(ctx, TableStates, keyRows); err != nil {
		return err
	}
	partRows := make([]any, len(partitions))
	for i, r := range partitions {
		partRows[i] = map[string]any{"partition_id": r.PartitionID, "name": r.Name}
	}
	if err := tx.delete(ctx, TablePartitionStates, partRows); err != nil {
		return err
	}
	return tx.commit(ctx)
}

// PutStates writes key states (rows of the states table, keys in their stored form) in one
// tablet transaction: all of them or, on error, none. It is for a pipeline that does not run
// (`yt-flow run`'s setup seeds states before the start): a running job's state cache would
// not see the rows.
func (s *Store) PutStates(ctx context.Context, rows []StateRow) error {
	tx, err := s.beginTabletTx(ctx)
	if err != nil {
		return err
	}
	defer tx.abort()
	out := make([]any, len(rows))
	for i, r := range rows {
		out[i] = r
	}
	if err := tx.insert(ctx, TableStates, out); err != nil {
		return err
	}
	return tx.commit(ctx)
}

// IndexedLogRecord is a controller log record with its row index in controller_logs.
type IndexedLogRecord struct {
	Index int64 `yson:"$row_index"`
	LogRecord
}

// ControllerLogRange reads up to count records of controller_logs (all when count <= 0)
// from row index offset on, oldest first; a negative offset counts from the end (-10: the
// last ten). It reads only the rows it returns (and, for a negative offset, the largest row
// index).
func (s *Store) ControllerLogRange(ctx context.Context, offset int64, count int) ([]IndexedLogRecord, error) {
	table := "[" + s.child(TableControllerLogs).String() + "]"
	if offset < 0 {
		last, err := queryLog[struct {
			Max int64 `yson:"last"`
		}](ctx, s, "max([$row_index]) as last from "+table+" group by 1")
		if err != nil {
			return nil, err
		}
		if len(last) == 0 {
			return nil, nil
		}
		offset = max(0, last[0].Max+1+offset)
	}
	q := "[$row_index], time, host, data from " + table + " where [$row_index] >= " + strconv.FormatInt(offset, 10)
	if count > 0 {
		q += " limit " + strconv.Itoa(count)
	}
	rows, err := queryLog[struct {
		Index int64  `yson:"$row_index"`
		Time  uint64 `yson:"time"`
		Host  string `yson:"host"`
		Data  string `yson:"data"`
	}](ctx, s, q)
	if err != nil {
		return nil, err
	}
	recs := make([]IndexedLogRecord, len(rows))
	for i, r := range rows {
		recs[i] = IndexedLogRecord{Index: r.Index, LogRecord: LogRecord{Time: r.Time, Host: r.Host, Data: r.Data}}
	}
	return recs, nil
}

// queryLog runs a query of the controller log and returns its rows.
func queryLog[T any](ctx context.Context, s *Store, q string) ([]T, error) {
	r, err := s.yc.SelectRows(ctx, q, nil)
	if err != nil {
		return nil, fmt.Errorf("ytstore: read %s: %w", s.child(TableControllerLogs), classify(err))
	}
	defer func() { _ = r.Close() }()
	var rows []T
	for r.Next() {
		var row T
		if err := r.Scan(&row); err != nil {
			return nil, fmt.Errorf("ytstore: read %s: decode row: %w", s.child(TableControllerLogs), err)
		}
		rows = append(rows, row)
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("ytstore: read %s: %w", s.child(TableControllerLogs), classify(err))
	}
	return rows, nil
}

// StateCounts counts the rows of the states table per computation (an aggregating query,
// not a read of the states).
func (s *Store) StateCounts(ctx context.Context) (map[string]int64, error) {
	q := "computation_id, sum(1) as row_count from [" + s.child(TableStates).String() + "] group by computation_id"
	r, err := s.yc.SelectRows(ctx, q, nil)
	if err != nil {
		return nil, fmt.Errorf("ytstore: count states in %s: %w", s.child(TableStates), classify(err))
	}
	defer func() { _ = r.Close() }()
	out := map[string]int64{}
	for r.Next() {
		var row struct {
			ComputationID string `yson:"computation_id"`
			Count         int64  `yson:"row_count"`
		}
		if err := r.Scan(&row); err != nil {
			return nil, fmt.Errorf("ytstore: count states in %s: decode row: %w", s.child(TableStates), err)
		}
		out[row.ComputationID] = row.Count
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("ytstore: count states in %s: %w", s.child(TableStates), classify(err))
	}
	return out, nil
}
