package peers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Result is one measured run of one job.
type Result struct {
	Peer      string
	Round     int
	MsgsPerS  float64
	P50, P99  time.Duration
	CPUPerMsg time.Duration // process CPU time per measured message
	// Records read from the output, and how many of them repeat a (key, count) already read.
	Records, Duplicates int
	// Err is why the run or its verification failed; nil is PASS.
	Err error
	// Parts is where a yt-flow job's time went over the measured run, by computation.
	Parts []Breakdown
	// Requests is a yt-flow job's requests to its server per committed epoch (of all
	// computations) over the measured run, by command.
	Requests map[string]float64
}

// runOne runs peer p once on b with round r's input and measures and verifies it.
func runOne(ctx context.Context, b *broker, c Config, p peer, round int) Result {
	res := Result{Peer: p.name, Round: round}
	prefix := fmt.Sprintf("%s-r%d-", p.name, round)
	defer b.deleteTopicsWithPrefix(context.WithoutCancel(ctx), prefix)
	e := env{Brokers: b.brokers(), In: prefix + "in", Out: prefix + "out", Group: prefix + "group", Partitions: c.Partitions, probe: &probe{}}
	if err := b.createTopics(ctx, c.Partitions, e.In, e.Out); err != nil {
		res.Err = err
		return res
	}
	in := newInput(c, round)

	rd, err := newReader(e.Brokers, e.Out)
	if err != nil {
		res.Err = err
		return res
	}
	rctx, rcancel := context.WithCancel(ctx)
	rdone := make(chan struct{})
	go func() {
		defer close(rdone)
		_ = rd.Run(rctx)
	}()
	defer func() {
		rcancel()
		<-rdone
	}()

	jctx, jcancel := context.WithCancel(ctx)
	jdone := make(chan error, 1)
	go func() { jdone <- p.run(jctx, e) }()
	jobStopped := false
	stopJob := func() error {
		if jobStopped {
			return nil
		}
		jobStopped = true
		jcancel()
		err := <-jdone
		if err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("%s stopped with: %w", p.name, err)
		}
		return nil
	}
	defer func() { _ = stopJob() }()

	prod, err := kgo.NewClient(kgo.SeedBrokers(e.Brokers...))
	if err != nil {
		res.Err = fmt.Errorf("peers: producer: %w", err)
		return res
	}
	defer prod.Close()
	topic := e.In
	if p.direct {
		topic = e.Out
	}
	// wait for target at the output, or fail when the job stops or timeout passes.
	wait := func(target int64, timeout time.Duration, what string) (mark, error) {
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case m := <-rd.await(target):
			return m, nil
		case err := <-jdone:
			jobStopped = true
			return mark{}, fmt.Errorf("%s: %s stopped: %v", what, p.name, err)
		case <-t.C:
			return mark{}, fmt.Errorf("%s: the output did not reach %d counts within %s", what, target, timeout)
		case <-ctx.Done():
			return mark{}, ctx.Err()
		}
	}

	// Warm-up: one record per key, until every key's first count is readable.
	if err := feed(ctx, prod, topic, in.warmup, p.direct, 0, nil); err != nil {
		res.Err = fmt.Errorf("peers: produce the warm-up to %s: %w", topic, err)
		return res
	}
	if _, err := wait(int64(len(in.warmup)), c.WarmupTimeout, "warm-up"); err != nil {
		res.Err = err
		return res
	}

	at := produced{}
	parts0, reqs0 := e.probe.snapshot(), e.probe.requestsSnapshot()
	t0, cpu0 := time.Now(), cpuTime()
	fed := make(chan error, 1)
	fctx, fcancel := context.WithCancel(ctx)
	defer fcancel()
	go func() { fed <- feed(fctx, prod, topic, in.measured, p.direct, c.Rate, at) }()
	end, err := wait(int64(len(in.warmup)+len(in.measured)), c.RunTimeout, "run")
	fcancel()
	ferr := <-fed // at is complete once feed returned
	if err != nil {
		res.Err = err
		return res
	}
	if ferr != nil {
		res.Err = fmt.Errorf("peers: produce the input to %s: %w", topic, ferr)
		return res
	}
	if parts0 != nil {
		parts1 := e.probe.snapshot()
		res.Parts = breakdown(parts0, parts1, time.Since(t0))
		var epochs int64
		for comp, p := range parts1 {
			epochs += p.epochs
			if q := parts0[comp]; q != nil {
				epochs -= q.epochs
			}
		}
		res.Requests = perEpoch(reqs0, e.probe.requestsSnapshot(), epochs)
	}
	res.MsgsPerS = float64(len(in.measured)) / end.at.Sub(t0).Seconds()
	res.CPUPerMsg = (end.cpu - cpu0) / time.Duration(len(in.measured))

	if err := stopJob(); err != nil {
		res.Err = err
		return res
	}
	// Whatever the job committed before it stopped (a duplicate, say) is read too.
	qctx, qcancel := context.WithTimeout(ctx, time.Minute)
	defer qcancel()
	if err := rd.quiet(qctx); err != nil {
		res.Err = fmt.Errorf("peers: read the rest of %s: %w", e.Out, err)
		return res
	}
	rcancel()
	<-rdone

	v := verify(rd.counts, rd.bad, in.want, p.exact)
	res.Records, res.Duplicates, res.Err = v.records, v.dups, v.err
	res.P50, res.P99 = latencies(rd.firstAt, at)
	return res
}

// verification is what verify found.
type verification struct {
	records, dups int
	err           error
}

// verify checks the output read (counts per key in read order) against want (final count
// per key). Every key must reach exactly its final count, and every count 1..final must be
// there. With exact the counts of each key must be exactly 1, 2, …, final in that order: no
// count twice (duplicate), none missing, none out of order.
func verify(counts map[string][]int64, bad []string, want map[string]int64, exact bool) verification {
	var v verification
	problems := slices.Clone(bad)
	for k, cs := range counts {
		v.records += len(cs)
		if _, ok := want[k]; !ok {
			problems = append(problems, fmt.Sprintf("key %s: not in the input", k))
		}
	}
	for k, n := range want {
		cs := counts[k]
		seen := make(map[int64]bool, len(cs))
		for _, c := range cs {
			if seen[c] {
				v.dups++
			}
			seen[c] = true
		}
		if len(cs) == 0 {
			problems = append(problems, fmt.Sprintf("key %s: no output, want a count of %d", k, n))
			continue
		}
		if m := slices.Max(cs); m != n {
			problems = append(problems, fmt.Sprintf("key %s: count reaches %d, want %d", k, m, n))
		}
		for c := int64(1); c <= n; c++ {
			if !seen[c] {
				problems = append(problems, fmt.Sprintf("key %s: count %d missing", k, c))
				break
			}
		}
		if exact {
			for i, c := range cs {
				if c != int64(i+1) {
					problems = append(problems, fmt.Sprintf("key %s: record %d of the key has count %d, want %d (duplicate or out of order)", k, i+1, c, i+1))
					break
				}
			}
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		more := ""
		if len(problems) > 5 {
			more = fmt.Sprintf(" … and %d more", len(problems)-5)
			problems = problems[:5]
		}
		v.err = fmt.Errorf("%w: %s%s", ErrVerification, strings.Join(problems, "; "), more)
	}
	return v
}

// ErrVerification is a job's output that is not the exact count of its input.
var ErrVerification = errors.New("peers: output verification failed")

// latencies returns p50 and p99 over the measured records of the time from a record's
// production (at) to the first read of the count it made.
func latencies(firstAt map[string]map[int64]time.Time, at produced) (p50, p99 time.Duration) {
	var ls []time.Duration
	for k, ts := range at {
		for c, t := range ts {
			if t.IsZero() {
				continue
			}
			if r, ok := firstAt[k][int64(c)]; ok {
				ls = append(ls, r.Sub(t))
			}
		}
	}
	if len(ls) == 0 {
		return 0, 0
	}
	slices.Sort(ls)
	return ls[len(ls)*50/100], ls[min(len(ls)*99/100, len(ls)-1)]
}
