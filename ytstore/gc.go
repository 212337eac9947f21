package ytstore

import (
	"context"
	"fmt"
	"strconv"

	"go.ytsaurus.tech/yt/go/yterrors"
)

// DedupGCResult counts what one CollectDedup call deleted.
type DedupGCResult struct {
	// InputMessages and CompactInputMessages are the rows deleted from
	// input_messages and compact_input_messages.
	InputMessages, CompactInputMessages int
	// More is true when a table still had at least batch rows below the
	// watermark: another call will delete more.
	More bool
}

// CollectDedup deletes up to batch rows from each dedup index
// (input_messages and compact_input_messages) whose system_timestamp is below
// before (µs). It is the only place that removes dedup rows. The caller
// passes the pipeline SystemWatermark minus a safety margin: a message whose
// system timestamp is below the watermark is no longer held by any job, so
// no copy of it can reach a dedup check again. batch <= 0 means 10000.
//
// Deleting is idempotent and needs no prerequisite: the watermark only grows,
// so any leader, even a deposed one, deletes only rows that are no longer
// needed. A row re-inserted concurrently by an epoch commit conflicts with the
// delete and one of the two transactions retries.
func (s *Store) CollectDedup(ctx context.Context, before uint64, batch int) (DedupGCResult, error) {
	if batch <= 0 {
		batch = 10000
	}
	var res DedupGCResult
	if before == 0 {
		return res, nil
	}
	var err error
	var more bool
	if res.InputMessages, more, err = s.collect(ctx, TableInputMessages, []string{"computation_id", "key", "message_id"}, before, batch); err != nil {
		return res, err
	}
	res.More = more
	if res.CompactInputMessages, more, err = s.collect(ctx, TableCompactInputMessages, []string{"deduplication_message_key"}, before, batch); err != nil {
		return res, err
	}
	res.More = res.More || more
	return res, nil
}

// collect deletes up to batch rows of table with system_timestamp < before.
func (s *Store) collect(ctx context.Context, table string, keyColumns []string, before uint64, batch int) (int, bool, error) {
	p := s.child(table)
	cols := ""
	for i, c := range keyColumns {
		if i > 0 {
			cols += ", "
		}
		cols += "[" + c + "]"
	}
	q := cols + " from [" + p.String() + "] where system_timestamp < " + strconv.FormatUint(before, 10) + "u limit " + strconv.Itoa(batch)
	r, err := s.yc.SelectRows(ctx, q, nil)
	if err != nil {
		return 0, false, fmt.Errorf("ytstore: dedup gc: read %s: %w", p, classify(err))
	}
	var keys []any
	for r.Next() {
		var row map[string]any
		if err := r.Scan(&row); err != nil {
			_ = r.Close()
			return 0, false, fmt.Errorf("ytstore: dedup gc: read %s: decode row: %w", p, err)
		}
		keys = append(keys, row)
	}
	err = r.Err()
	_ = r.Close()
	if err != nil {
		return 0, false, fmt.Errorf("ytstore: dedup gc: read %s: %w", p, classify(err))
	}
	if len(keys) == 0 {
		return 0, false, nil
	}
	if err := s.yc.DeleteRows(ctx, p, keys, nil); err != nil {
		return 0, false, fmt.Errorf("ytstore: dedup gc: delete %d rows from %s: %w", len(keys), p, classify(err))
	}
	return len(keys), len(keys) >= batch, nil
}

// DedupMerger reports whether both dedup indexes are mounted with the watermark row merger
// (@row_merger_type "watermark", set by CreatePipeline since it was introduced): their
// old rows are then collected by SetDedupWatermark, not by CollectDedup.
func (s *Store) DedupMerger(ctx context.Context) (bool, error) {
	for _, table := range []string{TableInputMessages, TableCompactInputMessages} {
		var merger string
		err := s.yc.GetNode(ctx, s.child(table).Attr("row_merger_type"), &merger, nil)
		if yterrors.ContainsResolveError(err) {
			return false, nil // not set: the legacy merger
		}
		if err != nil {
			return false, fmt.Errorf("ytstore: read @row_merger_type of %s: %w", s.child(table), classify(err))
		}
		if merger != "watermark" {
			return false, nil
		}
	}
	return true, nil
}

// SetDedupWatermark stores before (µs) as the watermark of both dedup indexes
// (@custom_runtime_data, the form YT's watermark row merger reads): their rows whose
// system_timestamp is below it are dropped at compaction. Like CollectDedup it needs no
// prerequisite: the watermark only grows, and any leader passes a value below the
// pipeline's SystemWatermark.
func (s *Store) SetDedupWatermark(ctx context.Context, before uint64) error {
	data := map[string]any{"watermark": map[string]any{"column_name": "system_timestamp", "watermark": before}}
	for _, table := range []string{TableInputMessages, TableCompactInputMessages} {
		if err := s.yc.SetNode(ctx, s.child(table).Attr("custom_runtime_data"), data, nil); err != nil {
			return fmt.Errorf("ytstore: set the dedup watermark of %s: %w", s.child(table), classify(err))
		}
	}
	return nil
}

// DedupRowCounts returns the number of rows of input_messages and
// compact_input_messages (a full scan: for tests, benchmarks and status).
func (s *Store) DedupRowCounts(ctx context.Context) (full, compact int64, err error) {
	count := func(table string) (int64, error) {
		p := s.child(table)
		r, err := s.yc.SelectRows(ctx, "sum(1) as n from ["+p.String()+"] group by 1", nil)
		if err != nil {
			return 0, fmt.Errorf("ytstore: count rows of %s: %w", p, classify(err))
		}
		defer func() { _ = r.Close() }()
		var n int64
		for r.Next() {
			var row struct {
				N int64 `yson:"n"`
			}
			if err := r.Scan(&row); err != nil {
				return 0, fmt.Errorf("ytstore: count rows of %s: %w", p, err)
			}
			n += row.N
		}
		if err := r.Err(); err != nil {
			return 0, fmt.Errorf("ytstore: count rows of %s: %w", p, classify(err))
		}
		return n, nil
	}
	if full, err = count(TableInputMessages); err != nil {
		return 0, 0, err
	}
	if compact, err = count(TableCompactInputMessages); err != nil {
		return 0, 0, err
	}
	return full, compact, nil
}
