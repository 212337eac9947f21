// Package job is the worker side of the yt-flow runtime: Worker registers a worker in the
// pipeline (session transaction and workers row), polls the layout for its jobs, runs one
// runner per job, serves the inter-job HTTP transport and reports job statuses.
//
// A runner loops over epochs (see package job/epoch for the pure decisions): it fetches
// inputs from its inbox, due timers and source rows, drops inputs the dedup index already
// holds (acknowledging them at once), invokes the process function per key, and commits one
// tablet transaction with the job's lease as prerequisite (ytstore.CommitEpoch). Only after
// the commit are inputs acknowledged upstream, source consumers advanced, outputs pushed to
// downstream jobs and async sinks. A commit rejected because the lease is dead stops the job
// at once; an unknown outcome is resolved by re-reading the partition's commit token.
// An epoch's reads before it plans (its token, the dedup lookup, the states of its keys) run
// concurrently; a source job reads its next rows while it commits and uses them only from the
// offset that commit made durable (rows arriving meanwhile top the batch up, waited for at
// most Config.TopUpWait or as long as the read ahead took); the consumer is advanced in the
// background, in order. An idle job waits empty_batch_backoff for new work (a source job that
// just read rows, or a swift source holding undelivered rows, at most half of
// batch_duration), unless input arrives. Under load a busy job paces its epochs by their
// cost: after one whose largest batch took at least a tenth of max_rows_per_batch without
// filling it, the next starts Config.PaceFactor (4) times that epoch's wall time after it
// at the earliest, at most half of batch_duration (fewer, larger epochs; the loop works at
// most a quarter of the time, and a message waits for a few epochs' work, not a fixed
// period). The commit's writes to
// different tables go out concurrently. A keyed job keeps the states it loaded or committed
// in memory (statecache.go) and loads only keys it has not seen; it looks up in the dedup
// index only inputs that may be committed already: born (stored upstream) before it started,
// of unknown birth, or committed by itself (fresh.go). A stopping job answers the
// pushes waiting for its commits at once; a worker that lost its session stops its jobs and
// writes their last statuses under their leases.
//
// Transport: outputs of a transform stay in the output store (one chunk row per destination
// and epoch) until their readers acknowledged every message of the chunk. The sender pushes
// them in production order (HTTP POST /push on the reader's worker, a binary body, wire.go;
// in memory when the reader runs on the same worker, through the same acceptPush; routed by
// the reader's key hash through the layout) and retransmits until acknowledged;
// the receiver answers with the ids its epochs committed (or found already committed). Up to
// four pushes of at most 1000 rows are in flight per reader job; a row in flight is not sent
// again until its push answers or fails, and a round does not wait for slow readers. Inboxes
// are bounded: a full inbox accepts nothing more and the sender retries later
// (back-pressure). GET /stats serves per-job counters, among them the duplicates dropped.
// POST /layout (from the leader controller) makes the worker poll the layout at once.
//
// Job row flags apply live: a draining job stops reading sources and firing timers but keeps
// processing input and delivering outputs; a retiring job also refuses and drops its input
// (unacknowledged, so senders retransmit it to the key's new owner). job_status reports
// in_flight (buffered inputs plus undelivered outputs) and echoes the flags once applied.
// A job drained while the pipeline's @target_state is working is completing: in_flight counts
// its pending timers until none is left, and once its upstream jobs are seen drained its timer
// clock is +inf and it fires every pending timer; a job drained to stop or pause keeps its timers for the next start.
//
// Timer clocks: system_time streams follow the pipeline's @system_watermark, current_time
// ones the wall clock, event_time ones (the default) the @event_watermarks of the streams they
// wait for, each minus its streams_with_delays delay and capped by the messages the job holds
// (epoch.StreamEventClock; @event_watermark minus the largest delay while none are published).
// watermark_alignment holds a source job against its group's watermark (eventtime.go). Each job reports its event-time bound in
// job_status.event_watermark: the smallest event timestamp it holds and, for a source job, the
// largest event timestamp it read minus the watermark generator's out-of-orderness bound; a
// source computation's event_timestamp_assigner takes its outputs' event times from a payload
// column.
//
// A swift map job persists nothing: its outputs inherit their ids from their parent inputs
// (epoch.SwiftOutputID), live in memory until delivered, and a parent is acknowledged
// upstream only when all its outputs are; after a restart the upstream retransmits the
// unacknowledged parents and the readers' dedup absorbs the recomputed outputs. A message
// received again with another payload is reported (payload_mismatches), whether its first copy
// is still buffered or already committed (the dedup index keeps a payload fingerprint).
//
// A swift source job persists no outputs either: it reads rows ahead of its committed offset
// into a window bounded by Config.OutboxLimit, gives each output an id derived from its row's
// offset and its index in the row, holds the outputs in memory until delivered, and commits
// the source offset only past rows whose outputs are all delivered. A restarted job re-reads
// from that offset and the readers' dedup absorbs the recomputed outputs.
package job
