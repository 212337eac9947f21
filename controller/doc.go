// Package controller runs the yt-flow controller: leader election, the
// scheduling loop, leases and the pipeline state machine.
//
// The decisions are pure: Scheduler.Step takes a snapshot of everything the
// controller observed (specs, target state, workers and their liveness,
// partitions, jobs, job statuses, lease liveness, source partitions (listed by their connectors), the
// time) and returns a Decision (partitions and jobs to write or delete, leases
// to abort, the pipeline state to publish). Run is the driver: it elects a
// leader through ytstore, gathers the snapshot every cycle, pings and checks
// leases, and applies decisions in the order the exactly-once protocol needs —
// leases of removed jobs are aborted before any replacement job is written.
// The first assignment of a pipeline waits briefly for workers that appear
// together after the controller (WorkerSettle), so that they share it.
// After a cycle that changed the layout or the pipeline state, the leader tells
// every live worker to read the layout now (POST /layout, notify.go; best
// effort: the workers' own polls remain the fallback).
//
// After applying a decision, the leader folds the cycle's observation into the
// pipeline SystemWatermark (WatermarkTracker: the oldest message any job still
// holds, checked over two observations, never decreasing), publishes it as
// @system_watermark and collects dedup rows below it minus DedupGCMargin: it
// sets that bound as the dedup tables' watermark (their watermark row merger
// drops older rows), or, for tables without the merger, deletes the rows in
// bounded batches. It folds the jobs' event-time bounds the same way into the
// pipeline EventWatermark (NewEventWatermarkTracker, EventWatermarkBound, with
// the sources' idle_partitions and late_data_partitions rules) and
// publishes it as @event_watermark, which event_time timers follow (pipelines
// whose job_status has no event_watermark column get none). While the
// partition count of a keyed computation changes,
// new partitions get jobs only after the retiring partitions with overlapping
// key ranges have drained (strict distribution ordering).
//
// The protocol between the controller and workers is docs/runtime-protocol.md.
package controller
