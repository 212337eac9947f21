package e2e

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// Fleet is the controllers and workers of a fault test, with a supervisor's restarts: a
// controller that exited (other than the one the test killed on purpose, KilledLeader) is
// started again, and a worker that exited is replaced by a new one.
type Fleet struct {
	t          *testing.T
	rng        *rand.Rand
	controller func(name string) *Proc
	worker     func(name string) *Proc
	Ctrl       []*Proc
	Workers    map[string]*Proc
	next       int
	// KilledLeader is a controller the test killed and wants to stay dead.
	KilledLeader *Proc
}

// NewFleet starts the controllers named and n workers ("worker-0", …); rng makes the
// choices of RandomWorker reproducible under a seed.
func NewFleet(t *testing.T, rng *rand.Rand, controller, worker func(name string) *Proc, controllers []string, n int) *Fleet {
	f := &Fleet{t: t, rng: rng, controller: controller, worker: worker, Workers: map[string]*Proc{}}
	for _, name := range controllers {
		f.Ctrl = append(f.Ctrl, controller(name))
	}
	for range n {
		f.AddWorker()
	}
	return f
}

// AddWorker starts the next worker.
func (f *Fleet) AddWorker() *Proc {
	name := fmt.Sprintf("worker-%d", f.next)
	f.next++
	p := f.worker(name)
	f.Workers[name] = p
	return p
}

// RandomWorker picks a live worker, reproducibly under the seed.
func (f *Fleet) RandomWorker() (string, *Proc) {
	names := make([]string, 0, len(f.Workers))
	for n := range f.Workers {
		names = append(names, n)
	}
	slices.Sort(names)
	n := names[f.rng.IntN(len(names))]
	return n, f.Workers[n]
}

// Drop forgets a worker the test killed or froze (it is not replaced by Supervise).
func (f *Fleet) Drop(name string) { delete(f.Workers, name) }

// Supervise restarts exited controllers and replaces exited workers.
func (f *Fleet) Supervise() {
	for i, p := range f.Ctrl {
		if p.Exited() && p != f.KilledLeader {
			f.t.Logf("%s exited; restarting it", p.Name)
			f.Ctrl[i] = f.controller(p.Name + "r")
		}
	}
	for name, p := range f.Workers {
		if p.Exited() {
			f.t.Logf("%s exited; starting a replacement", name)
			delete(f.Workers, name)
			f.AddWorker()
		}
	}
}
