// Fast detection of dead workers: the pure core that folds connection attempts to the
// workers' transport endpoints into verdicts (deathWatch); probe_run.go dials.

package controller

import (
	"sort"

	"github.com/ytflow/yt-flow/ytstore"
)

// ProbeOutcome is the result of one connection attempt to a worker's transport endpoint.
type ProbeOutcome int

const (
	// ProbeAccepted: the connection was established. A process that is frozen (SIGSTOP)
	// still gets its connections accepted by the kernel: it is not dead by this measure.
	ProbeAccepted ProbeOutcome = iota
	// ProbeRefused: the host answered that nothing listens on the port (ECONNREFUSED): the
	// process that listened there is gone.
	ProbeRefused
	// ProbeUnknown: anything else (timeout, host or network unreachable, too many open
	// files): says nothing about the process, and breaks a run of refusals.
	ProbeUnknown
)

// DefaultProbeRefusals is how many consecutive refused connection attempts declare a worker
// dead (Config.ProbeRefusals).
const DefaultProbeRefusals = 3

// ProbeTarget is one registration of a worker to probe: the endpoint its row publishes
// under the session it registered with.
type ProbeTarget struct {
	WorkerID, Session, Address string
}

// deathWatch decides, from the outcomes of connection attempts to the workers' endpoints,
// which workers are dead: the verdict that lets the controller abort a worker's session at
// once instead of waiting for it to time out. It is pure (no I/O, no clock); the driver
// (probeLoop) dials and applies its verdicts.
//
// A registration is declared dead after refusals consecutive ProbeRefused outcomes, and
// only if an earlier attempt of the same registration (worker id, session, address) was
// accepted: an endpoint that never answered (a worker listening on loopback of another
// host, a test's placeholder address) is never taken for a dead one. An accepted or
// unknown outcome ends the run of refusals. Each registration is declared dead at most once.
type deathWatch struct {
	refusals int
	regs     map[string]*probeState // by worker id
}

type probeState struct {
	target    ProbeTarget
	reachable bool // an attempt of this registration was accepted
	refused   int  // consecutive refusals since then
	declared  bool // reported dead
}

func newDeathWatch(refusals int) *deathWatch {
	if refusals <= 0 {
		refusals = DefaultProbeRefusals
	}
	return &deathWatch{refusals: refusals, regs: map[string]*probeState{}}
}

// Targets takes the workers of an observation (the rows of the workers table and whether
// each session is alive) and returns the registrations to probe next, by worker id: every
// live worker with an address that is not declared dead yet. A worker whose session or
// address changed starts afresh; workers no longer live are forgotten.
func (d *deathWatch) Targets(workers []ytstore.Worker, alive map[string]bool) []ProbeTarget {
	live := map[string]bool{}
	for _, w := range workers {
		if !alive[w.WorkerID] || w.Address == "" {
			continue
		}
		live[w.WorkerID] = true
		t := ProbeTarget{WorkerID: w.WorkerID, Session: w.SessionTx, Address: w.Address}
		if st, ok := d.regs[w.WorkerID]; !ok || st.target != t {
			d.regs[w.WorkerID] = &probeState{target: t}
		}
	}
	for id := range d.regs {
		if !live[id] {
			delete(d.regs, id)
		}
	}
	var out []ProbeTarget
	for _, st := range d.regs {
		if !st.declared {
			out = append(out, st.target)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].WorkerID < out[b].WorkerID })
	return out
}

// Record folds the outcome of one attempt at t into the watch and reports whether it
// declares t's registration dead (true once per registration). An outcome for a
// registration the watch no longer tracks (its session changed since) is ignored.
func (d *deathWatch) Record(t ProbeTarget, o ProbeOutcome) (dead bool) {
	st, ok := d.regs[t.WorkerID]
	if !ok || st.target != t || st.declared {
		return false
	}
	switch o {
	case ProbeAccepted:
		st.reachable, st.refused = true, 0
	case ProbeRefused:
		if !st.reachable {
			return false
		}
		st.refused++
		if st.refused >= d.refusals {
			st.declared = true
			return true
		}
	default:
		st.refused = 0
	}
	return false
}
