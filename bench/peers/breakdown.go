package peers

import (
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/ytflow/yt-flow/job"
)

// probe reads the job counters of a running yt-flow pipeline (bench.Runtime.Stats); a job
// that has none leaves it unset.
type probe struct {
	mu    sync.Mutex
	stats func() []map[string]job.JobStats
	// requests counts the requests the job's server serves, by command (nil: not counted).
	requests *requestCounter
}

func (p *probe) setRequests(c *requestCounter) {
	p.mu.Lock()
	p.requests = c
	p.mu.Unlock()
}

// requestsSnapshot is the requests counted so far by command (nil when not counted).
func (p *probe) requestsSnapshot() map[string]int64 {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	c := p.requests
	p.mu.Unlock()
	return c.snapshot()
}

func (p *probe) set(f func() []map[string]job.JobStats) {
	p.mu.Lock()
	p.stats = f
	p.mu.Unlock()
}

// snapshot sums the counters of every job by computation (nil when unset).
func (p *probe) snapshot() map[string]*parts {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	f := p.stats
	p.mu.Unlock()
	if f == nil {
		return nil
	}
	out := map[string]*parts{}
	for _, w := range f() {
		for _, st := range w {
			c := out[st.ComputationID]
			if c == nil {
				c = &parts{ns: map[string]int64{}}
				out[st.ComputationID] = c
			}
			c.jobs++
			c.epochs += st.Epochs
			c.messages += st.Messages
			c.deliveries += st.Deliveries
			c.pushes += st.PushesLocal + st.PushesInProcess + st.PushesHTTP
			for k, v := range st.EpochParts {
				c.ns[k] += v
			}
			c.ns["pace"] += st.PaceNs
			c.ns["push"] += st.PushNs
			c.ns["deliver"] += st.DeliverNs
		}
	}
	return out
}

// parts are the summed counters of one computation's jobs.
type parts struct {
	jobs                                 int
	epochs, messages, deliveries, pushes int64
	ns                                   map[string]int64
}

// breakdownParts are the columns of the breakdown: the epoch parts (job.EpochPartNames)
// in the order of an epoch, "pace" (the part of idle a busy job waited between epochs), and
// the sender's pushes and deliveries, which run beside the epochs.
var breakdownParts = []string{"input_fetch", "prepare", "process", "commit", "idle", "pace", "push", "deliver"}

// Breakdown is where one computation's jobs spent a measured run: per epoch part, the mean
// time per epoch and the share of the jobs' wall time.
type Breakdown struct {
	Computation       string
	Jobs              int
	Epochs, Messages  int64
	Pushes, Delivered int64
	// PerEpoch is each part's time per committed epoch; Share its share of the jobs' summed
	// wall time over the run (push and deliver overlap the epochs).
	PerEpoch map[string]time.Duration
	Share    map[string]float64
}

// breakdown is the difference of two snapshots over a run of wall time d, by computation.
func breakdown(before, after map[string]*parts, d time.Duration) []Breakdown {
	var out []Breakdown
	for comp, a := range after {
		b := before[comp]
		if b == nil {
			b = &parts{ns: map[string]int64{}}
		}
		bd := Breakdown{Computation: comp, Jobs: a.jobs, Epochs: a.epochs - b.epochs, Messages: a.messages - b.messages,
			Pushes: a.pushes - b.pushes, Delivered: a.deliveries - b.deliveries,
			PerEpoch: map[string]time.Duration{}, Share: map[string]float64{}}
		for _, k := range breakdownParts {
			v := a.ns[k] - b.ns[k]
			if bd.Epochs > 0 {
				bd.PerEpoch[k] = time.Duration(v / bd.Epochs)
			}
			if d > 0 && a.jobs > 0 {
				bd.Share[k] = float64(v) / float64(d) / float64(a.jobs)
			}
		}
		out = append(out, bd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Computation > out[j].Computation })
	return out
}

// writeBreakdown prints bds as a table: per computation, epochs, messages per epoch, and per
// part the mean ms per epoch with its share of the wall time.
func writeBreakdown(w io.Writer, label string, bds []Breakdown) {
	if len(bds) == 0 {
		return
	}
	fmt.Fprintf(w, "epoch parts, %s (ms per epoch, share of the jobs' wall time):\n", label)
	fmt.Fprint(w, "| computation | jobs | epochs | msgs/epoch |")
	for _, k := range breakdownParts {
		fmt.Fprintf(w, " %s |", k)
	}
	fmt.Fprint(w, " pushes | deliveries |\n|---|---|---|---|")
	for range breakdownParts {
		fmt.Fprint(w, "---|")
	}
	fmt.Fprintln(w, "---|---|")
	for _, b := range bds {
		per := 0.0
		if b.Epochs > 0 {
			per = float64(b.Messages) / float64(b.Epochs)
		}
		fmt.Fprintf(w, "| %s | %d | %d | %.0f |", b.Computation, b.Jobs, b.Epochs, per)
		for _, k := range breakdownParts {
			fmt.Fprintf(w, " %.2f (%.0f%%) |", float64(b.PerEpoch[k])/float64(time.Millisecond), 100*b.Share[k])
		}
		fmt.Fprintf(w, " %d | %d |\n", b.Pushes, b.Delivered)
	}
}
