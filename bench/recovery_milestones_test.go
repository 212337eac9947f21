package bench

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/ytflow/yt-flow/ytstore"
)

// recoveryMilestones is where the time of a recovery went, each the first moment it held
// (zero: not seen):
//   - detected: the failed worker's session is dead (aborted by the controller after its
//     probes were refused, or expired), as polled by the benchmark every 10 ms;
//   - reassigned: every partition the worker held has a job on another worker (polled);
//   - started: the last of those jobs logged "job started" (the survivor's log);
//   - committed: the last of them logged "first epoch committed".
//
// The end, every message written before the failure visible in the output queue, is
// benchRecovery's.
type recoveryMilestones struct {
	detected, reassigned, started, committed time.Time
	// newJobs are the jobs that replaced the failed worker's.
	newJobs []string
}

// workerSession reads the session of worker id from the workers table.
func workerSession(ctx context.Context, st *ytstore.Store, id string) (string, error) {
	ws, err := st.Workers(ctx)
	if err != nil {
		return "", err
	}
	for _, w := range ws {
		if w.WorkerID == id {
			return w.SessionTx, nil
		}
	}
	return "", fmt.Errorf("worker %s has no row", id)
}

// recoveryWatch polls the session of the failed worker and the layout until stopped.
type recoveryWatch struct {
	cancel context.CancelFunc
	done   chan struct{}
	ms     recoveryMilestones
}

// watchRecovery starts polling: victim (with session) is about to fail, before is the layout
// before the failure.
func watchRecovery(ctx context.Context, st *ytstore.Store, victim, session string, before []ytstore.Job) *recoveryWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &recoveryWatch{cancel: cancel, done: make(chan struct{})}
	lost := map[string]bool{} // partitions of the victim
	for _, j := range before {
		if j.WorkerID == victim {
			lost[j.PartitionID] = true
		}
	}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil && (w.ms.detected.IsZero() || w.ms.reassigned.IsZero()) {
			if w.ms.detected.IsZero() {
				if alive, err := st.TxAlive(ctx, session); err == nil && !alive {
					w.ms.detected = time.Now()
				}
			}
			if w.ms.reassigned.IsZero() {
				if jobs, err := st.Jobs(ctx); err == nil {
					var moved []string
					for _, j := range jobs {
						if lost[j.PartitionID] && j.WorkerID != victim {
							moved = append(moved, j.JobID)
						}
					}
					if len(moved) == len(lost) {
						w.ms.reassigned, w.ms.newJobs = time.Now(), moved
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return w
}

// stop ends the polling and returns what it saw.
func (w *recoveryWatch) stop() *recoveryMilestones {
	w.cancel()
	<-w.done
	ms := w.ms
	return &ms
}

var logTime = regexp.MustCompile(`^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+(?:Z|[+-]\d{4}))\s`)

// fromLogs reads, from the survivor worker's log, when the new jobs started and first
// committed (the last of them for each).
func (ms *recoveryMilestones) fromLogs(survivorLog string) {
	for _, line := range strings.Split(survivorLog, "\n") {
		var at *time.Time
		switch {
		case strings.Contains(line, "\tjob started\t"):
			at = &ms.started
		case strings.Contains(line, "\tfirst epoch committed\t"):
			at = &ms.committed
		default:
			continue
		}
		mine := false
		for _, id := range ms.newJobs {
			mine = mine || strings.Contains(line, `"job": "`+id+`"`)
		}
		m := logTime.FindStringSubmatch(line)
		if !mine || m == nil {
			continue
		}
		t, err := time.Parse("2006-01-02T15:04:05.000Z0700", m[1])
		if err == nil && t.After(*at) {
			*at = t
		}
	}
}

// since is t - from in seconds, or -1 when t was not seen.
func since(t, from time.Time) float64 {
	if t.IsZero() {
		return -1
	}
	return t.Sub(from).Seconds()
}

func (ms *recoveryMilestones) describe(failed time.Time) string {
	return fmt.Sprintf("session dead +%.2fs, jobs reassigned +%.2fs, started +%.2fs, first commit +%.2fs (-1: not seen)",
		since(ms.detected, failed), since(ms.reassigned, failed), since(ms.started, failed), since(ms.committed, failed))
}

// report adds the milestones (seconds after the failure) to m, under the mode's name.
func (ms *recoveryMilestones) report(m medians, mode string, failed time.Time) {
	for _, x := range []struct {
		name string
		t    time.Time
	}{{"detect", ms.detected}, {"reassign", ms.reassigned}, {"start", ms.started}, {"commit", ms.committed}} {
		if !x.t.IsZero() {
			m.add(since(x.t, failed), mode+"_"+x.name+"_s")
		}
	}
}
