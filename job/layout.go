// The layout as the senders see it: where the reader job of a key runs (layout, route).

package job

import (
	"sync"

	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/ytstore"
)

// route is where a reader job of a computation runs.
type route struct {
	jobID        string
	lower, upper uint64
	address      string
	workerID     string
}

// layout is the latest snapshot of the jobs and workers tables, shared read-only by the
// senders of all runners; the worker's poll loop replaces it.
type layout struct {
	mu     sync.Mutex
	routes map[string][]route // computation id -> jobs
	// jobs holds the id of every job of the snapshot, retiring or not; nil before the first.
	jobs map[string]bool
}

func (l *layout) update(jobs []ytstore.Job, workers []ytstore.Worker) {
	addr := map[string]string{}
	for _, w := range workers {
		addr[w.WorkerID] = w.Address
	}
	routes := map[string][]route{}
	ids := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		ids[j.JobID] = true
		a, ok := addr[j.WorkerID]
		if !ok || a == "" || j.Retiring {
			continue // a retiring job accepts no new messages; the new owner gets them
		}
		routes[j.ComputationID] = append(routes[j.ComputationID], route{jobID: j.JobID, lower: j.LowerKey, upper: j.UpperKey, address: a, workerID: j.WorkerID})
	}
	l.mu.Lock()
	l.routes = routes
	l.jobs = ids
	l.mu.Unlock()
}

// removed reports whether job id is not in the layout any more (false before the first
// snapshot). The controller aborts a job's lease before it deletes its row: a removed job
// commits nothing more.
func (l *layout) removed(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.jobs != nil && !l.jobs[id]
}

// find returns the job of computation owning keyHash; ok is false when none is known.
func (l *layout) find(computation string, keyHash uint64) (route, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.routes[computation] {
		if epoch.InRange(keyHash, r.lower, r.upper) {
			return r, true
		}
	}
	return route{}, false
}

// jobsOf returns the jobs of computation (a copy).
func (l *layout) jobsOf(computation string) []route {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]route(nil), l.routes[computation]...)
}
