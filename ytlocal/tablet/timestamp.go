package tablet

import (
	"time"

	"github.com/ytflow/yt-flow/ytlocal/ts"
)

// Timestamp is a YTsaurus timestamp (see package ts): bits 30–61 hold unix
// seconds, bits 0–29 a counter within that second.
type Timestamp uint64

const (
	timestampCounterBits = 30

	// SyncLastCommitted asks a read for the latest committed state.
	SyncLastCommitted = Timestamp(ts.SyncLastCommitted)
	// AsyncLastCommitted is treated as SyncLastCommitted.
	AsyncLastCommitted = Timestamp(ts.AsyncLastCommitted)
	// MaxTimestamp is the largest timestamp an oracle generates.
	MaxTimestamp = Timestamp(ts.Max)
)

// Time returns the wall-clock second the timestamp was generated in.
func (t Timestamp) Time() time.Time { return ts.Time(uint64(t)) }
