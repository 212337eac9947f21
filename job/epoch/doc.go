// Package epoch is the pure core of one job's epoch: it turns what an epoch fetched (inputs from
// upstream jobs, due timers, source rows) and what the dedup index knows into per-key
// invocations, turns the invocations' results into the write set of one epoch commit, and
// decides what to do after a commit attempt.
//
// It does no I/O, reads no clock and starts no goroutines: time (Batch.Now) and the epoch's
// unique sequence number (Batch.SeqNo) are inputs. The driver in package job fetches, invokes
// user code, commits through ytstore and applies the effects.
//
// A Planner plans epochs and builds their commits in the memory of the previous epoch's (a
// driver runs one epoch at a time); what it gives is what PlanEpoch and BuildCommit give
// (TestPlannerReusesMemory).
//
// The exactly-once rules it implements, each proved by the named test:
//
//   - Invariant: an input found in the dedup index (or repeated within the batch) is not
//     processed again and is acknowledged at once (TestPlanDropsDuplicates).
//   - Invariant: in at_least_once_consistent mode nothing is looked up or registered in the
//     dedup index, everything else is unchanged (TestAtLeastOnceSkipsDedup).
//   - Invariant: per key, due timers are passed before messages, messages in arrival order
//     (TestPlanGroupsTimersFirst).
//   - Invariant: transform output ids are unique per epoch and their string order is the
//     production order (TestTransformIDsOrdered); source output ids derive only from the source
//     offsets, so a recomputation yields the same ids (TestSourceIDsDeterministic).
//   - Invariant: a fired timer is deleted in the same commit that holds its results
//     (TestTimerDeletedWithResults).
//   - Invariant: a commit rejected because the lease is dead stops the job; an unknown outcome
//     is resolved by re-reading the partition's last commit token, so an epoch is applied at
//     most once and retried only when it did not apply (TestAfterCommit, TestSimulationExactlyOnce).
package epoch
