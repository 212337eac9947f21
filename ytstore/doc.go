// Package ytstore is the only package of yt-flow that talks to YTsaurus.
//
// A Store wraps one SDK client and one pipeline path. The client is the SDK's HTTP client
// with no compression toward a loopback proxy (codecFor) and request bodies of row commands
// sent with their length rather than chunked (transport.go); a ytlocal of the same process
// started with Config.InProcess (`yt-flow run`'s) is called directly instead (package
// internal/inproc). It creates the pipeline
// (a map node with attributes and its internal dynamic tables), reads and writes
// the pipeline attributes and the coordination tables (workers, jobs,
// partitions, job_status, controller_logs), and manages the master
// transactions the runtime is built on:
//
//   - leases: one master transaction per job, started, pinged and aborted by the
//     controller; every epoch commit of the job lists it as a prerequisite, so an
//     aborted or expired lease fences the job;
//   - sessions: master transactions pinged by the SDK in the background; a worker
//     is alive iff its session is, and the leader controller holds the exclusive
//     lock on PATH/leader_controller_lock under its session.
//
// The dedup tables are created with YTsaurus's watermark row merger; the
// controller collects their old rows by setting their watermark
// (SetDedupWatermark), or, on tables created before, by deleting them
// (CollectDedup).
//
// Errors callers branch on are the sentinels in errors.go (ErrLeaseLost,
// ErrCommitUnknown, ErrConflict, ErrNotFound, ErrTabletNotMounted); YTsaurus
// error codes are translated into them in one place, classify. No package above
// ytstore imports yt, ythttp or yterrors.
//
// The tables and the protocol between controller and workers are described in
// docs/runtime-protocol.md.
package ytstore
