package tablet

import (
	"sync"
	"time"
)

// Timestamp is a YTsaurus timestamp: bits 30–61 hold unix seconds, bits 0–29 a
// counter within that second.
type Timestamp uint64

const (
	timestampCounterBits = 30

	// SyncLastCommitted asks a read for the latest committed state.
	SyncLastCommitted Timestamp = 0x3fffffffffffff01
	// AsyncLastCommitted is treated as SyncLastCommitted.
	AsyncLastCommitted Timestamp = 0x3fffffffffffff04
	// MaxTimestamp is the largest timestamp the oracle may generate.
	MaxTimestamp Timestamp = 0x3fffffffffffff00
)

// Time returns the wall-clock second the timestamp was generated in.
func (t Timestamp) Time() time.Time {
	return time.Unix(int64(t>>timestampCounterBits), 0)
}

// Oracle generates unique, strictly increasing timestamps. The zero value is
// not usable; create it with NewOracle.
type Oracle struct {
	mu    sync.Mutex
	clock func() time.Time
	last  Timestamp
}

// NewOracle returns an oracle reading wall time from clock (time.Now if nil).
func NewOracle(clock func() time.Time) *Oracle {
	if clock == nil {
		clock = time.Now
	}
	return &Oracle{clock: clock}
}

// Next returns a timestamp greater than every timestamp returned or observed
// before. When the clock stands still or goes back, the counter bits advance.
func (o *Oracle) Next() Timestamp {
	o.mu.Lock()
	defer o.mu.Unlock()
	candidate := Timestamp(o.clock().Unix()) << timestampCounterBits
	if candidate <= o.last {
		candidate = o.last + 1
	}
	o.last = candidate
	return candidate
}

// Observe makes every later Next greater than ts (used after replay).
func (o *Oracle) Observe(ts Timestamp) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ts > o.last && ts <= MaxTimestamp {
		o.last = ts
	}
}

// Last returns the largest timestamp generated or observed.
func (o *Oracle) Last() Timestamp {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.last
}
