package torture

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
)

// Kind is a kind of fault.
type Kind string

// The fault kinds, in the order Kinds lists them.
const (
	// Kill is SIGKILL of a random worker; a new worker replaces it.
	Kill Kind = "kill"
	// Freeze is SIGSTOP of a random worker for a while (past its session), then SIGCONT.
	Freeze Kind = "freeze"
	// Failover is SIGKILL of the leading controller while a standby runs.
	Failover Kind = "failover"
	// Store is SIGKILL of the embedded YTsaurus server and its restart on its data folder.
	Store Kind = "store"
)

// Kinds are all fault kinds.
var Kinds = []Kind{Kill, Freeze, Failover, Store}

// ErrBadFaults is wrapped by ParseKinds' errors.
var ErrBadFaults = errors.New("bad fault list")

// ParseKinds parses a comma-separated list of fault kinds ("kill,freeze"; "all" is every
// kind; "none" or "" is no fault). Repeats are errors, so are unknown kinds: the error names
// the item and its position.
func ParseKinds(s string) ([]Kind, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "", "none":
		return nil, nil
	case "all":
		return append([]Kind(nil), Kinds...), nil
	}
	var out []Kind
	seen := map[Kind]bool{}
	for i, item := range strings.Split(s, ",") {
		k := Kind(strings.TrimSpace(item))
		known := false
		for _, x := range Kinds {
			known = known || x == k
		}
		switch {
		case !known:
			return nil, fmt.Errorf("%w: item %d %q: want one of kill, freeze, failover, store (or all, none)", ErrBadFaults, i+1, item)
		case seen[k]:
			return nil, fmt.Errorf("%w: item %d %q: listed twice", ErrBadFaults, i+1, item)
		}
		seen[k] = true
		out = append(out, k)
	}
	return out, nil
}

// Schedule chooses the faults of a run, reproducibly under its seed: every kind in turn (in
// an order shuffled by the seed, so that a short run still sees each kind once), the next
// round in a new order, and so on. It is pure: the driver asks it for the next fault and for
// the pause before it.
type Schedule struct {
	kinds []Kind
	rng   *rand.Rand
	round []Kind
}

// NewSchedule returns the schedule of kinds under seed; with no kinds Next reports none.
func NewSchedule(kinds []Kind, seed uint64) *Schedule {
	return &Schedule{kinds: kinds, rng: rand.New(rand.NewPCG(seed, 35))}
}

// Next returns the next fault kind; false when the schedule has no kinds.
func (s *Schedule) Next() (Kind, bool) {
	if len(s.kinds) == 0 {
		return "", false
	}
	if len(s.round) == 0 {
		s.round = append(s.round[:0], s.kinds...)
		s.rng.Shuffle(len(s.round), func(i, j int) { s.round[i], s.round[j] = s.round[j], s.round[i] })
	}
	k := s.round[0]
	s.round = s.round[1:]
	return k, true
}

// Again makes k the next fault again: a fault that found no victim is not lost from the
// round.
func (s *Schedule) Again(k Kind) { s.round = append([]Kind{k}, s.round...) }

// Pick returns a reproducible index below n (the victim among n candidates sorted by name).
func (s *Schedule) Pick(n int) int {
	if n <= 1 {
		return 0
	}
	return s.rng.IntN(n)
}

// Jitter returns a reproducible fraction in [0.5, 1.5) to spread the pauses between faults.
func (s *Schedule) Jitter() float64 { return 0.5 + s.rng.Float64() }
