// Package statictable is the static table source (NStaticTableConnector::TSource): it reads
// tables into the pipeline. The arrival-order sink that writes static tables is package
// arrivalorder.
//
// # Tables
//
// The source reads the tables listed in tables, in the given order, or the children of
// tables_path, in key order, whose name matches table_name_filter (RE2; a match anywhere in
// the name, as RE2's PartialMatch: anchor it with ^ and $ to match whole names). A symlink
// child is followed unless ignore_symlinks; a child that is not a static table is an error
// unless skip_non_table_nodes. Each table has two timestamps, found by its locators:
// event_timestamp_locator (default: the table's name, iso8601) gives its rows' Timestamp,
// and system_timestamp_locator (default: the @creation_time attribute) gives the table's
// identity. Both must be strictly increasing along the table order; a table that breaks this
// is an error naming it and its predecessor (the controller keeps the partitions it has and
// retries every cycle).
//
// # Partitions
//
// A table is cut into read ranges of RangeRows(row_count, range_row_count) rows — at least
// range_row_count (default 1Mi), at most Slots ranges per table — and every range is one
// source partition with the index
//
//	index = system_timestamp_µs × Slots + range number      (Slots = 1024)
//
// The index depends only on the table's own system timestamp and row count, never on the
// other tables: a table that appears in tables_path adds its partitions and changes no
// existing one, so every cycle's Partitions lists the same indexes for the tables already
// there (a table removed from tables_path takes its partitions with it). Int64 holds
// timestamps up to the year 2255 this way; earlier than 1970 is an error.
//
// A reader of a partition finds its table again by the system timestamp (index / Slots) and
// reads rows [k×R, min((k+1)×R, row_count)) of it, k = index mod Slots. Its position is the
// row index within the range (connector.OffsetPosition), and a row's Offset is that index,
// so a re-read after a restart yields the same message ids: exactly once by read ranges,
// with the position committed in the epoch. A table must not change once listed: rows
// appended to it may be missed (a range that completed is not read again), and one that grows
// past Slots × range_row_count rows changes its range size and so its ranges.
//
// A finite source completes when every range of the tables listed is read (an empty read at
// a range's end); a table that appears after that is not read. A non-finite one keeps its
// range partitions open — one idle job per range read — and picks up the tables that appear
// in tables_path (the controller lists partitions every cycle).
//
// Paths are read on the pipeline's cluster: a rich path's attributes (<cluster=…>) are
// accepted by the spec and not honoured. A path in tables that is a link is read through it.
//
// # Dynamic parameters
//
// All of Flow's dynamic parameters are parsed strictly. min_event_timestamp and
// max_event_timestamp apply: a range of a table whose event timestamp is outside them reads
// no rows. max_rows_per_second and max_bytes_per_second apply, shared equally by the
// partitions listed when a reader opens (each reader paces itself; a read waits for its rate
// rather than return empty), with a burst of throttler_period's worth (10s: a reader idle that
// long may read ten seconds' rows at once). unavailable_threshold (5m) applies: once a
// partition's reads have failed that long the runtime reports it unavailable
// (connector.Unavailability) rather than as a transient read failure. The others
// (desired_table_process_time, restart_instant, max_partition_count, desired_partition_*,
// read_timeout) are accepted and not applied yet; watermark_delay is parsed and not applied (the runtime derives watermarks from row
// timestamps).
package statictable
