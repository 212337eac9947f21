// Package ts is the timestamp oracle shared by every part of ytlocal.
//
// A timestamp is a uint64 laid out as in YTsaurus: bits 30..61 hold unix seconds and
// bits 0..29 a counter within that second. The oracle hands out strictly increasing
// values; transaction start and commit timestamps and generate_timestamp all come from
// one Oracle, so they are totally ordered.
package ts

import (
	"sync"
	"time"
)

const (
	counterBits = 30
	counterMask = 1<<counterBits - 1

	// SyncLastCommitted asks a read for the latest committed state.
	SyncLastCommitted uint64 = 0x3fffffffffffff01
	// AsyncLastCommitted is treated like SyncLastCommitted by ytlocal.
	AsyncLastCommitted uint64 = 0x3fffffffffffff04
	// Max is the largest timestamp the oracle will ever generate.
	Max uint64 = 0x3fffffffffffff00
)

// Oracle generates timestamps. The zero value is ready to use and reads the wall clock.
// It is safe for concurrent use.
type Oracle struct {
	// Now returns the current time; nil means time.Now.
	Now func() time.Time

	mu   sync.Mutex
	last uint64
}

// Next returns a timestamp strictly greater than every timestamp returned or observed before.
func (o *Oracle) Next() uint64 {
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	wall := uint64(now().Unix()) << counterBits
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.last + 1
	if wall > t {
		t = wall
	}
	o.last = t
	return t
}

// Observe makes every later Next greater than t. Replay of a log calls it with the
// timestamps found there, so a restarted server never reissues a timestamp.
func (o *Oracle) Observe(t uint64) {
	if t >= Max {
		return
	}
	o.mu.Lock()
	if t > o.last {
		o.last = t
	}
	o.mu.Unlock()
}

// Last returns the largest timestamp generated or observed so far (0 if none).
func (o *Oracle) Last() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.last
}

// Time returns the wall-clock second encoded in t.
func Time(t uint64) time.Time {
	return time.Unix(int64(t>>counterBits), 0)
}
