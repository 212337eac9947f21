package epoch

import "time"

// Pace is the shortest time from the start of a busy epoch that took took to the start of
// the next: factor times took, at most limit. A negative factor is the fixed pace: limit
// whatever the epoch cost. Pacing by cost keeps the share of time the epoch loop works
// (and so the per-commit costs per message) at most 1/factor while never holding a cheap
// epoch's successor back longer than needed, so a message waits about factor epochs' work
// for its epoch to start, not a fixed period.
func Pace(took time.Duration, factor int, limit time.Duration) time.Duration {
	if factor < 0 {
		return limit
	}
	if took <= 0 || factor == 0 {
		return 0
	}
	if took >= limit/time.Duration(factor) {
		return limit
	}
	return took * time.Duration(factor)
}
