// Package arrivalorder is the arrival-order table sink (TArrivalOrderTableSink): an async
// sink that writes a computation's output into time-sliced static tables in
// output_directory, one table per table_period slot, named by table_name_format (strftime:
// %Y %m %d %H %M %S %y %j %%) applied to the slot's start in UTC.
//
// A row goes to the table of the slot holding its system timestamp. Each delivery commits
// in one master transaction that takes an exclusive lock on the directory, appends the
// rows to their slot tables (creating those that are missing, with @table_timestamp = the
// slot's start and @expiration_time = max(slot, creation) + table_ttl) and rewrites the
// directory's @progress:
//
//	{owner = {pipeline; computation; sink};
//	 tables = [{name; timestamp}; ...];            # the table sequence, by slot
//	 partitions = {<partition> = {system_timestamp; message_id; sequence_number}}}
//
// The per-partition frontier is the last row the tables hold; rows are compared by the
// sequence number the runtime fixes for each output at the commit (increasing per partition
// and sink), so the sink needs no order of message ids from its computation (the spec still
// allows it one input stream, as Flow does). A delivery repeated after a
// failure or a restart skips the rows at or below its partition's frontier, so a replay
// that is partly covered writes only the uncovered tail, and the runtime acknowledges a
// batch (deletes it from the output store) only after its transaction committed and with
// the following epoch commit. Partitions that deliver at once take turns on the lock
// (retrying with a backoff up to retry_backoff). A directory whose @progress names another
// owner is refused (ErrOwned), and so is a slot table that exists without
// @table_timestamp (ytstore.ErrForeignNode): the sink writes only tables it made.
//
// When a new slot table is later than the sequence's last one, the slots in between that
// have ended and are within table_ttl of now get empty tables, as Flow creates them (Flow
// also waits for the input's system watermark; this sink creates them when a later row
// arrives). Tables past their TTL leave the sequence; removing them is the cluster's
// expiration (ytlocal keeps @expiration_time and does not remove nodes).
//
// Dynamic parameters: max_row_count (10000) and max_data_weight (1 GiB) cap one transaction
// (a delivery of more takes several, never splitting a batch); a row weighs the value of the
// static data_weight_column (an int64 or uint64 input column; when unset or null, the bytes
// of the row's YSON); retry_backoff (1s) caps the wait for the lock; transaction_timeout (5m)
// is the timeout of the master transactions (a process killed mid-commit holds the
// directory's lock until its transaction expires).
package arrivalorder
