// Package controller runs the yt-flow controller: leader election, the
// scheduling loop, leases and the pipeline state machine.
//
// The decisions are pure: Scheduler.Step takes a snapshot of everything the
// controller observed (specs, target state, workers and their liveness,
// partitions, jobs, job statuses, lease liveness, source tablet counts, the
// time) and returns a Decision (partitions and jobs to write or delete, leases
// to abort, the pipeline state to publish). Run is the driver: it elects a
// leader through ytstore, gathers the snapshot every cycle, pings and checks
// leases, and applies decisions in the order the exactly-once protocol needs —
// leases of removed jobs are aborted before any replacement job is written.
//
// The protocol between the controller and workers is docs/runtime-protocol.md.
package controller
