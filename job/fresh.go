// Which inputs of a keyed job need no dedup lookup (freshInputs), by their birth.

package job

import (
	"github.com/ytflow/yt-flow/internal/fingerprint"
	"github.com/ytflow/yt-flow/job/epoch"
)

// freshInputs decides which inputs of a keyed exactly-once job need no lookup in the dedup
// index because no job can have committed them yet.
//
// Every stored output carries its birth: the token (cluster timestamp) of the epoch that
// produced it, drawn before that epoch committed and therefore before the output could be
// delivered anywhere (epoch.Input.Born; 0 when unknown). The controller aborts the Lease of
// every earlier job of a key range before it writes a job that overlaps it, and a commit
// needs its job's live Lease; a job draws its floor, the token of its first epoch, after it
// was written. So an input born after the floor reached no earlier job before that job's
// Lease was gone, and none of them committed it. Of the jobs alive since, only this one
// owns the key, and it remembers what it committed. Hence:
//
// Invariant: an input is committed already only if it was born at or before the floor, or
// this job committed it; only those are looked up (TestFreshInputsRemembersAndForgets;
// TestFreshInputsSkipLookup, also for the job that replaces it after a restart; the e2e
// fault tests and TestWordCountUnderNetworkFaults count every message exactly once with it
// on).
//
// What this job committed is kept as 64-bit fingerprints of the ids (no pointers for the
// garbage collector to scan; a collision only costs a lookup), per epoch; when there are
// more than limit, the oldest epochs are forgotten and the floor rises above every birth
// they held, so their inputs are looked up again if they ever come back.
type freshInputs struct {
	floor  uint64 // 0 until the first epoch's token: everything is looked up
	limit  int
	recent map[uint64]uint32 // id fingerprint -> how many remembered epochs hold it
	epochs []freshEpoch
	held   int
	spare  []uint64 // the ids array of the last forgotten epoch, for the next one
}

type freshEpoch struct {
	maxBorn uint64
	ids     []uint64
}

// defaultFreshLimit bounds the ids a job remembers (8 bytes each in two places).
const defaultFreshLimit = 1 << 16

// newFreshInputs remembers up to limit ids; limit < 0 disables it (nil: look every input up).
func newFreshInputs(limit int) *freshInputs {
	if limit < 0 {
		return nil
	}
	return &freshInputs{limit: limit, recent: map[uint64]uint32{}}
}

// needLookup reports whether in may already be committed.
func (f *freshInputs) needLookup(in *epoch.Input) bool {
	if f.floor == 0 || in.Born <= f.floor {
		return true
	}
	_, mine := f.recent[fingerprint.String64(in.Message.MessageID)]
	return mine
}

// started sets the floor from the token of the job's first epoch.
func (f *freshInputs) started(token uint64) {
	if f.floor == 0 {
		f.floor = token
	}
}

// committed records the inputs an applied epoch committed.
func (f *freshInputs) committed(ins []epoch.Input) {
	e := freshEpoch{ids: f.spare[:0]}
	f.spare = nil
	if cap(e.ids) < len(ins) {
		e.ids = make([]uint64, 0, len(ins)) // one array, not one per doubling
	}
	for i := range ins {
		in := &ins[i]
		if in.Born <= f.floor {
			continue // looked up anyway
		}
		fp := fingerprint.String64(in.Message.MessageID)
		f.recent[fp]++
		e.ids = append(e.ids, fp)
		e.maxBorn = max(e.maxBorn, in.Born)
	}
	if len(e.ids) == 0 {
		f.spare = e.ids
		return
	}
	f.epochs = append(f.epochs, e)
	f.held += len(e.ids)
	for f.held > f.limit && len(f.epochs) > 0 {
		old := f.epochs[0]
		f.epochs[0] = freshEpoch{}
		f.epochs = f.epochs[1:]
		f.held -= len(old.ids)
		f.floor = max(f.floor, old.maxBorn)
		for _, fp := range old.ids {
			if f.recent[fp] <= 1 {
				delete(f.recent, fp)
			} else {
				f.recent[fp]--
			}
		}
		if cap(old.ids) > cap(f.spare) {
			f.spare = old.ids
		}
	}
}

// swiftBirth is the birth of a swift output: the earliest birth of its parents (it cannot
// be delivered before any of them was), the same on every recomputation since a swift output's
// id names its parents; 0 when it has none or a parent's birth is not known. born maps a
// parent id to its birth.
func swiftBirth(parents []string, born map[string]uint64) uint64 {
	var least uint64
	for _, p := range parents {
		b := born[p]
		if b == 0 {
			return 0
		}
		if least == 0 || b < least {
			least = b
		}
	}
	return least
}
