package ytstore

import "go.ytsaurus.tech/yt/go/schema"

// Names of the data tables that jobs read and write in their epoch transactions.
// They live directly under the pipeline path.
const (
	// TableInputMessages is the full dedup index of transform inputs.
	TableInputMessages = "input_messages"
	// TableCompactInputMessages is the compact dedup index (one binary key per message).
	TableCompactInputMessages = "compact_input_messages"
	// TableOutputMessages is the per-message output store of earlier versions: runtimes
	// still deliver and delete rows found there, and write new outputs to TableOutputChunks.
	TableOutputMessages = "output_messages"
	// TableStates holds per-key user states.
	TableStates = "states"
	// TablePartitionStates holds per-partition states: source offsets, sink progress.
	TablePartitionStates = "partition_states"
	// TableTimers holds the user timers of keyed computations.
	TableTimers = "timers"
	// TablePartitionTransactions holds, per partition, the start timestamp of its last
	// committed epoch transaction; it makes commit retries safe.
	TablePartitionTransactions = "partition_transactions"
	// TableDeadLetters holds the messages and timers a computation with failure_policy
	// dead_letter set aside, written in the epoch transaction that acknowledged them.
	TableDeadLetters = "dead_letters"
)

func keyCol(name string, t schema.Type) schema.Column {
	return schema.Column{Name: name, Type: t, Required: true, SortOrder: schema.SortAscending}
}

func valCol(name string, t schema.Type) schema.Column {
	return schema.Column{Name: name, Type: t}
}

func sorted(cols ...schema.Column) schema.Schema {
	return schema.Schema{UniqueKeys: true, Columns: cols}
}

// dedupMountAttributes are the mount settings of the dedup indexes (as in Flow): the
// watermark row merger drops rows whose system_timestamp is below the watermark the
// controller stores in @custom_runtime_data (SetDedupWatermark), so no scan or delete is
// needed to collect them.
//
// They are created with a watermark of 0 (nothing to drop): ytlocal then indexes their rows by
// system_timestamp from the start, so that no merge has to read a whole table.
func dedupMountAttributes() map[string]any {
	return map[string]any{"row_merger_type": "watermark", "min_data_versions": 0, "min_data_ttl": 0,
		"custom_runtime_data": map[string]any{"watermark": map[string]any{"column_name": "system_timestamp", "watermark": uint64(0)}}}
}

// dataTables lists the internal tables owned by the job side. CreatePipeline creates
// them next to the coordination tables. All are sorted dynamic tables.
//
// Keys of user data ("key" columns) are the canonical binary YSON of the group-by key
// (a YSON list); "key_hash" is the routing hash of that key (the value that the layout's
// [lower_key, upper_key) ranges partition). Payloads and states are YSON bytes.
func dataTables() []tableDef {
	return []tableDef{
		{
			name: TableInputMessages,
			schema: sorted(
				keyCol("computation_id", schema.TypeBytes),
				keyCol("key", schema.TypeBytes),
				keyCol("message_id", schema.TypeBytes),
				valCol("system_timestamp", schema.TypeUint64),
				valCol("payload_fingerprint", schema.TypeUint64),
			),
			attributes: dedupMountAttributes(),
		},
		{
			name: TableCompactInputMessages,
			schema: sorted(
				keyCol("deduplication_message_key", schema.TypeBytes),
				valCol("system_timestamp", schema.TypeUint64),
				valCol("payload_fingerprint", schema.TypeUint64),
			),
			attributes: dedupMountAttributes(),
		},
		{
			// Earlier versions' output store, one row per (producing partition, destination,
			// message): destination is the reading computation id or the sink id. New outputs
			// go to TableOutputChunks; rows left here are delivered and deleted as before.
			name: TableOutputMessages,
			schema: sorted(
				keyCol("partition_id", schema.TypeBytes),
				keyCol("destination", schema.TypeBytes),
				keyCol("message_id", schema.TypeBytes),
				valCol("stream_id", schema.TypeBytes),
				valCol("key", schema.TypeBytes),
				valCol("key_hash", schema.TypeUint64),
				valCol("payload", schema.TypeBytes),
				valCol("event_timestamp", schema.TypeUint64),
				valCol("system_timestamp", schema.TypeUint64),
				valCol("sequence_number", schema.TypeInt64),
			),
		},
		{
			// One row per (producing partition, destination, epoch, part): the epoch's outputs
			// to that destination, encoded as in chunks.go. A chunk is deleted once every
			// message in it is acknowledged (computations) or delivered (async sinks).
			name: TableOutputChunks,
			schema: sorted(
				keyCol("partition_id", schema.TypeBytes),
				keyCol("destination", schema.TypeBytes),
				keyCol("chunk_id", schema.TypeUint64),
				keyCol("part", schema.TypeInt64),
				valCol("message_count", schema.TypeInt64),
				valCol("data", schema.TypeBytes),
			),
		},
		{
			name: TableStates,
			schema: sorted(
				keyCol("computation_id", schema.TypeBytes),
				keyCol("key_hash", schema.TypeUint64),
				keyCol("key", schema.TypeBytes),
				keyCol("name", schema.TypeBytes),
				valCol("state", schema.TypeBytes),
			),
		},
		{
			name: TablePartitionStates,
			schema: sorted(
				keyCol("partition_id", schema.TypeBytes),
				keyCol("name", schema.TypeBytes),
				valCol("state", schema.TypeBytes),
			),
		},
		{
			name: TableTimers,
			schema: sorted(
				keyCol("computation_id", schema.TypeBytes),
				keyCol("key_hash", schema.TypeUint64),
				keyCol("key", schema.TypeBytes),
				keyCol("message_id", schema.TypeBytes),
				valCol("stream_id", schema.TypeBytes),
				valCol("system_timestamp", schema.TypeUint64),
				valCol("event_timestamp", schema.TypeUint64),
				valCol("trigger_timestamp", schema.TypeUint64),
				valCol("payload", schema.TypeBytes),
			),
		},
		{
			name: TablePartitionTransactions,
			schema: sorted(
				keyCol("partition_id", schema.TypeBytes),
				valCol("last_transaction_start_timestamp", schema.TypeUint64),
			),
		},
		{
			name: TableDeadLetters,
			schema: sorted(
				keyCol("computation_id", schema.TypeBytes),
				keyCol("key_hash", schema.TypeUint64),
				keyCol("key", schema.TypeBytes),
				keyCol("message_id", schema.TypeBytes),
				valCol("stream_id", schema.TypeBytes),
				valCol("partition_id", schema.TypeBytes),
				valCol("payload", schema.TypeBytes),
				valCol("error", schema.TypeString),
				valCol("attempts", schema.TypeUint64),
				valCol("timer", schema.TypeBoolean),
				valCol("trigger", schema.TypeUint64),
				valCol("system_timestamp", schema.TypeUint64),
				valCol("event_timestamp", schema.TypeUint64),
				valCol("dead_at", schema.TypeUint64),
			),
		},
	}
}
