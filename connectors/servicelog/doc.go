// Package servicelog is the service log source (TServiceLogSource): it emits every row of
// one sorted dynamic table — or of several joined by key (table_joiner/fetchers) — once per
// cycle, again and again: the full state of a table that the pipeline itself keeps, for
// instance through external state, re-emitted for periodic processing.
//
// # Partitions
//
// The tables' first key column must be a uint64 spread over [0, 2^64) (a hash): the
// source's desired_partition_count (dynamic, default 5) partitions are equal ranges of it,
// with the index count<<32 | i, so a new count makes new partitions (starting a new cycle)
// and never reads a position against other ranges. Joined tables must have the same key
// columns. A table whose first key column is not a uint64 is an error naming the table and
// the fetcher's YSON path, when the controller lists partitions and, with --check-tables,
// in `yt-flow validate`.
//
// # Cycles
//
// A partition reads its range in key order, page by page (select_rows, for either
// fetch_type), and emits the joined row of every key: the key columns, each fetcher's value
// columns (value_columns, default all) with its prefix and, with two fetchers or more, the
// list ispresent of booleans saying which fetchers had the key. A fetcher's read is tried
// attempts times, retry_timeout apart. The position, committed with the epoch, is the cycle,
// its start, the last key emitted and the number of rows emitted in the cycle; a row's offset
// (hence its message id) is cycle<<32 | ordinal, and its timestamp (system and event time) is
// the start of its cycle, the same for every row of the cycle. When a cycle is over, the next starts once
// desired_cycle_time (dynamic, default 12h) has passed since it started; a finite source
// reads one cycle and completes.
//
// Exactly once within each cycle: a re-read after a restart goes on after the last key
// committed, so every key of the range is emitted once per cycle, with the same id as long as
// no key of the range was inserted or deleted between the uncommitted read and the re-read
// (the rows are read at the latest state, not at a snapshot). Value changes are seen by the
// cycle that reads the key after them.
//
// unavailable_threshold (5m) applies: once a partition's reads have failed that long the
// runtime reports it unavailable (connector.Unavailability) rather than as a transient read
// failure. throttler_period, update_info_period and byte_size_alpha are accepted and not
// applied: a cycle reads at full speed, so there is no throttler for a period to shape.
package servicelog
