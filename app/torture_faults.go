package app

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/ytflow/yt-flow/internal/torture"
)

// tortured runs the pipeline on a fresh server while it feeds the input over --duration and
// injects a fault about every --fault-interval; then it lets the pipeline settle and
// returns its outputs.
func (t *tortureRun) tortured(ctx context.Context, bin, dir string, plan *torturePlan, rows map[string][]map[string]any) (map[string][]map[string]any, error) {
	c, err := t.launch(ctx, bin, dir, plan)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	t.injected = map[torture.Kind]int{}
	f := newFeeder(rows)
	sched := torture.NewSchedule(t.kinds, t.o.seed)
	begin := time.Now()
	nextFault := begin.Add(time.Duration(float64(t.o.interval) * sched.Jitter()))
	nextProgress := begin.Add(t.o.progress)
	perQueue := 0
	for _, r := range rows {
		perQueue = max(perQueue, len(r))
	}
	var lastRead int64
	lastAt := begin
	for {
		now := time.Now()
		elapsed := now.Sub(begin)
		if elapsed >= t.o.duration {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := c.supervise(); err != nil {
			return nil, err
		}
		t.thaw(ctx, c, begin, false)
		due := int(float64(perQueue) * elapsed.Seconds() / t.o.duration.Seconds())
		if err := f.feed(ctx, c.st, due); err != nil {
			t.say("[%5.1fs] feed: %v (retrying)", elapsed.Seconds(), err)
		}
		if !now.Before(nextFault) {
			if kind, ok := sched.Next(); ok && !t.inject(ctx, c, sched, kind, begin) {
				if t.lost != nil {
					return nil, t.lost
				}
				sched.Again(kind) // no victim this time: the same kind comes next
			}
			nextFault = time.Now().Add(time.Duration(float64(t.o.interval) * sched.Jitter()))
		}
		if !now.Before(nextProgress) {
			read := int64(-1)
			if attrs, err := c.st.Attributes(ctx); err == nil {
				if p := readSourceProgress(ctx, c.st, attrs); p.ok {
					read = p.read
				}
			}
			line := fmt.Sprintf("[%5.1fs] fed %d/%d rows", elapsed.Seconds(), f.fedRows(), f.total)
			if read >= 0 {
				line += fmt.Sprintf(", read %d (%.0f rows/s)", read, float64(read-lastRead)/now.Sub(lastAt).Seconds())
				lastRead, lastAt = read, now
			}
			t.say("%s, %d workers, %d controllers, %d faults", line, len(c.liveWorkers()), len(c.ctrl), t.total())
			nextProgress = now.Add(t.o.progress)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.thaw(ctx, c, begin, true)
	t.say("[%5.1fs] faults end; feeding the rest and draining", time.Since(begin).Seconds())
	settleStart := time.Now()
	if err := t.settle(ctx, c, f); err != nil {
		return nil, err
	}
	out, err := c.readOutputs(ctx, plan.sinks)
	if err != nil {
		return nil, err
	}
	t.say("tortured run: %d rows processed in %.1fs (settled %.1fs after the faults ended), %s", f.fedRows(), time.Since(begin).Seconds(), time.Since(settleStart).Seconds(), t.faultSummary())
	return out, nil
}

func (t *tortureRun) total() int {
	n := 0
	for _, v := range t.injected {
		n += v
	}
	return n
}

// inject injects one fault of kind and prints one line about it ("[T] fault N: KIND: …"); a
// fault that finds no victim (no live worker, no known leader) is reported as skipped, not
// counted, and inject returns false.
func (t *tortureRun) inject(ctx context.Context, c *tortureCluster, sched *torture.Schedule, kind torture.Kind, begin time.Time) bool {
	at := time.Since(begin).Seconds()
	done := func(format string, args ...any) {
		t.injected[kind]++
		t.say("[%5.1fs] fault %d: %s: %s", at, t.total(), kind, fmt.Sprintf(format, args...))
	}
	skip := func(why string) { t.say("[%5.1fs] fault skipped: %s: %s", at, kind, why) }
	switch kind {
	case torture.Kill:
		names := c.liveWorkers()
		if t.frozen != nil { // the frozen worker stays frozen until thaw
			names = slices.DeleteFunc(names, func(n string) bool { return n == t.frozen.name })
		}
		if len(names) == 0 {
			skip("no live worker")
			return false
		}
		name := names[sched.Pick(len(names))]
		p := c.workers[name]
		p.Kill()
		delete(c.workers, name)
		nw, err := c.addWorker()
		if err != nil {
			skip(err.Error())
			return false
		}
		done("kill -9 %s (pid %d); %s replaces it", name, p.Pid(), nw.Name)
	case torture.Freeze:
		if t.frozen != nil {
			skip(t.frozen.name + " is frozen still")
			return false
		}
		names := c.liveWorkers()
		if len(names) == 0 {
			skip("no live worker")
			return false
		}
		name := names[sched.Pick(len(names))]
		p := c.workers[name]
		fr := &frozenWorker{name: name, p: p, since: time.Now()}
		if ws, err := c.st.Workers(ctx); err == nil {
			for _, w := range ws {
				if w.WorkerID == name {
					fr.session = w.SessionTx
				}
			}
		}
		if err := p.Freeze(); err != nil {
			skip(err.Error())
			return false
		}
		t.frozen = fr
		done("SIGSTOP %s (pid %d) until the controller has replaced it (at most %s)", name, p.Pid(), maxFreeze)
	case torture.Failover:
		leader := c.leader(ctx)
		if leader == nil || len(c.ctrl) < 2 {
			skip("no leading controller with a standby known")
			return false
		}
		leader.Kill()
		killed := time.Now()
		// A new controller takes the place of the killed one, as a standby.
		if err := c.supervise(); err != nil {
			skip(err.Error())
			return false
		}
		var next string
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(100 * time.Millisecond) {
			_ = c.supervise()
			if l := c.leader(ctx); l != nil && l != leader {
				next = fmt.Sprintf("%s (pid %d) leads after %.1fs", l.Name, l.Pid(), time.Since(killed).Seconds())
				break
			}
		}
		switch {
		case next != "":
		case ctx.Err() != nil:
			next = "interrupted before a new leader was seen"
		default:
			next = "no new leader within 30s"
		}
		done("kill -9 leading controller %s (pid %d); %s", leader.Name, leader.Pid(), next)
	case torture.Store:
		pid := c.local.Pid()
		pause := time.Duration(float64(time.Second) * sched.Jitter())
		if err := c.restartLocal(ctx, pause); err != nil {
			// Without its server the run cannot go on: the loop ends it with this error.
			t.lost = fmt.Errorf("restart of the embedded YTsaurus after a store fault: %w", err)
			return false
		}
		done("kill -9 the embedded YTsaurus (pid %d), restarted after %.1fs on %s (pid %d) with its data in %s",
			pid, pause.Seconds(), c.proxy, c.local.Pid(), filepath.Join(c.dir, "ytlocal"))
	}
	return true
}

// maxFreeze bounds how long a worker stays frozen.
const maxFreeze = 30 * time.Second

// frozenWorker is a worker stopped with SIGSTOP by a freeze fault.
type frozenWorker struct {
	name, session string
	p             *torture.Proc
	since         time.Time
}

// thaw resumes the frozen worker once it is fenced (its session is gone and it holds no
// job: the controller has replaced it, so that the resumed worker is a zombie), after
// maxFreeze, or at once with force; it prints a line when it resumes it.
func (t *tortureRun) thaw(ctx context.Context, c *tortureCluster, begin time.Time, force bool) {
	fr := t.frozen
	if fr == nil {
		return
	}
	fenced := fr.session != "" && t.fenced(ctx, c, fr)
	if !fenced && !force && time.Since(fr.since) < maxFreeze {
		return
	}
	_ = fr.p.Resume()
	t.frozen = nil
	how := "its session outlived the freeze"
	if fenced {
		how = "its session had expired and its jobs had moved: the resumed worker is a zombie"
	}
	t.say("[%5.1fs] SIGCONT %s (pid %d) after %.1fs; %s", time.Since(begin).Seconds(), fr.name, fr.p.Pid(), time.Since(fr.since).Seconds(), how)
}

// fenced tells whether the frozen worker's session is gone and no job is assigned to it.
func (t *tortureRun) fenced(ctx context.Context, c *tortureCluster, fr *frozenWorker) bool {
	alive, err := c.st.TxAlive(ctx, fr.session)
	if err != nil || alive {
		return false
	}
	jobs, err := c.st.Jobs(ctx)
	if err != nil {
		return false
	}
	for _, j := range jobs {
		if j.WorkerID == fr.name {
			return false
		}
	}
	return true
}
