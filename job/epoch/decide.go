package epoch

// Outcome is what a commit attempt reported.
type Outcome int

const (
	// Committed: the commit succeeded.
	Committed Outcome = iota
	// LeaseLost: the commit was rejected because the job's lease is dead.
	LeaseLost
	// Unknown: the commit may or may not have been applied (timeout, connection cut).
	Unknown
	// Rejected: the commit definitely did not apply for another reason (conflict, tablet
	// not mounted, ...); it may be retried.
	Rejected
)

// Next is what the driver does after a commit attempt.
type Next int

const (
	// Proceed: the epoch is durable; apply its effects (acks, consumer advance, sends).
	Proceed Next = iota
	// Stop: the job is a zombie; stop at once without writing anything else.
	Stop
	// Recheck: read the partition's last commit token and call AfterRecheck.
	Recheck
	// Retry: the epoch did not apply; drop it and recompute it from durable state (the
	// dedup index and the states may have changed, e.g. by a conflicting writer).
	Retry
)

// AfterCommit decides what follows a commit attempt.
//
// Invariant: a dead lease stops the job, an unknown outcome is never treated as success or
// failure without re-reading (TestAfterCommit).
func AfterCommit(o Outcome) Next {
	switch o {
	case Committed:
		return Proceed
	case LeaseLost:
		return Stop
	case Unknown:
		return Recheck
	default:
		return Retry
	}
}

// AfterRecheck decides an unknown outcome from the partition_transactions row: the attempt
// applied iff the row holds the attempt's token (its start timestamp).
//
// Invariant: an epoch whose unknown commit did apply is not applied again
// (TestSimulationExactlyOnce).
func AfterRecheck(attempt, stored uint64, found bool) Next {
	if found && stored == attempt {
		return Proceed
	}
	return Retry
}

// NeedCommit reports whether an epoch must commit: it writes something, or the last commit
// is older than leaseCheckPeriod (an almost empty commit then proves the lease).
func NeedCommit(c *Commit, pendingDeletes int, now, lastCommit, leaseCheckPeriod uint64) bool {
	if !c.Empty() || pendingDeletes > 0 {
		return true
	}
	return now-lastCommit >= leaseCheckPeriod
}
