// Restart backoff of partitions whose jobs keep failing.

package controller

// backoff delays the restart of a partition whose jobs keep failing, so that
// a poison input does not spin jobs and leases every cycle.
type backoff struct {
	count     int
	notBefore uint64 // µs
}

// Restart backoff after the n-th consecutive failure of a partition's job:
// FailureBackoffBase * 2^(n-1), at most FailureBackoffMax.
const (
	FailureBackoffBase = 1_000_000  // µs
	FailureBackoffMax  = 30_000_000 // µs
)

func backoffDelay(n int) uint64 {
	d := uint64(FailureBackoffBase)
	for i := 1; i < n && d < FailureBackoffMax; i++ {
		d *= 2
	}
	return min(d, FailureBackoffMax)
}
