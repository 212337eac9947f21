package bench

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Load writes messages at a steady rate into a pipeline's input queue and polls both sinks,
// recording for every message when it was written and when it became visible. Message i
// is the word "w%04d" of i mod vocab (the same kind of input as the throughput runs). The
// count computation's outputs are running counts per word, so message i, the k-th
// occurrence of its word, is visible in a sink once that sink shows a count ≥ k for the
// word.
type Load struct {
	p     *Pipeline
	rate  float64
	vocab int

	cancel      context.CancelFunc
	wg          sync.WaitGroup
	stopWriting func()

	// start is the origin of the times below: they are offsets from it, which hold no
	// pointers (a run records hundreds of thousands, and the collector of the process the
	// pipeline runs in would scan every time.Time's location pointer at each cycle).
	start    time.Time
	words    []string // the vocabulary: words[i % vocab] is message i
	mu       sync.Mutex
	sent     []time.Duration // by message index: time just before its insert_rows call
	seen     []time.Duration // by message index: first seen in the output queue; 0 = not yet
	inTable  []time.Duration // by message index: first seen in the result table; 0 = not yet
	occ      map[string][]int
	outUpTo  map[string]int // word → occurrences visible in the output queue
	tabUpTo  map[string]int // word → occurrences visible in the result table
	arrived  int
	err      error
	overflow int // counts above what was written: a duplicate or a foreign writer
}

// StartLoad starts writing rate messages/s over vocab words (one insert_rows call every
// 10ms, catching up when a call is slow), polling the output queue every 10ms and the
// result table every 20ms. Stop the writer with the returned function; the pollers run
// until ctx ends or Close.
func StartLoad(ctx context.Context, p *Pipeline, rate float64, vocab int) (l *Load, stopWriting func()) {
	l = &Load{p: p, rate: rate, vocab: max(vocab, 1), start: time.Now(),
		occ: map[string][]int{}, outUpTo: map[string]int{}, tabUpTo: map[string]int{}}
	l.words = make([]string, l.vocab)
	for i := range l.words {
		l.words[i] = fmt.Sprintf("w%04d", i)
	}
	ctx, l.cancel = context.WithCancel(ctx)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		l.write(ctx, stop)
	}()
	l.wg.Go(func() { l.poll(ctx) })
	l.wg.Go(func() { l.pollTable(ctx) })
	var once sync.Once
	// Stopping lets a write in flight finish: a cancelled insert_rows could leave its
	// messages recorded as sent but not written.
	l.stopWriting = func() { once.Do(func() { close(stop) }); <-done }
	return l, l.stopWriting
}

// Close stops writing and polling and waits for every goroutine of the load. The
// figures stay readable.
func (l *Load) Close() {
	l.stopWriting()
	l.cancel()
	l.wg.Wait()
}

func (l *Load) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = err
	}
}

// Err is the first write or poll error, or an error when a sink showed a count above the
// number of messages written for a word.
func (l *Load) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil && l.overflow > 0 {
		return fmt.Errorf("sinks showed %d counts above what was written", l.overflow)
	}
	return l.err
}

func (l *Load) write(ctx context.Context, stop <-chan struct{}) {
	start := time.Now()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-tick.C:
		}
		due := int(l.rate * time.Since(start).Seconds())
		l.mu.Lock()
		first := len(l.sent)
		n := due - first
		if n <= 0 {
			l.mu.Unlock()
			continue
		}
		now := l.since()
		words := make([]string, n)
		for j := range words {
			i := first + j
			words[j] = l.words[i%l.vocab]
			l.sent = append(l.sent, now)
			l.seen = append(l.seen, 0)
			l.inTable = append(l.inTable, 0)
			l.occ[words[j]] = append(l.occ[words[j]], i)
		}
		l.mu.Unlock()
		if err := l.p.Write(ctx, words, first); err != nil {
			if ctx.Err() == nil {
				// The messages may or may not be in the queue: the run is void.
				l.fail(fmt.Errorf("write messages %d..%d: %w", first, first+n-1, err))
			}
			return
		}
	}
}

// since is the offset of now from the load's start; never 0 (0 marks "not yet").
func (l *Load) since() time.Duration { return max(time.Since(l.start), 1) }

// offset is t as an offset from the load's start.
func (l *Load) offset(t time.Time) time.Duration { return t.Sub(l.start) }

// mark records that word's count reached count in one sink at now. Callers hold l.mu.
func (l *Load) mark(word string, count int64, upTo map[string]int, at []time.Duration, now time.Duration, output bool) {
	occ := l.occ[word]
	if count > int64(len(occ)) {
		l.overflow++
		count = int64(len(occ))
	}
	for k := upTo[word]; k < int(count); k++ {
		if at[occ[k]] == 0 {
			at[occ[k]] = now
			if output {
				l.arrived++
			}
		}
	}
	upTo[word] = max(upTo[word], int(count))
}

func (l *Load) poll(ctx context.Context) {
	var off int64
	for ctx.Err() == nil {
		rows, err := l.p.ReadOutput(ctx, off, 10000)
		now := l.since()
		if err != nil {
			if ctx.Err() == nil {
				l.fail(fmt.Errorf("poll output at %d: %w", off, err))
			}
			return
		}
		l.mu.Lock()
		for _, r := range rows {
			off = r.Offset + 1
			l.mark(r.Word, r.Count, l.outUpTo, l.seen, now, true)
		}
		l.mu.Unlock()
		if len(rows) > 0 {
			// As a production reader does: what it has read can be trimmed.
			if err := l.p.Store.AdvanceConsumer(ctx, l.p.Output(), l.p.OutputConsumer(), 0, off); err != nil && ctx.Err() == nil {
				l.fail(fmt.Errorf("advance the output consumer to %d: %w", off, err))
				return
			}
		}
		if len(rows) == 0 {
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
}

// pollTable reads the result table (the sync sink, visible at the count computation's
// epoch commit) every 20ms.
func (l *Load) pollTable(ctx context.Context) {
	for ctx.Err() == nil {
		got, err := l.p.Totals(ctx)
		now := l.since()
		if err != nil {
			if ctx.Err() == nil {
				l.fail(fmt.Errorf("poll table: %w", err))
			}
			return
		}
		l.mu.Lock()
		for w, n := range got {
			l.mark(w, n, l.tabUpTo, l.inTable, now, false)
		}
		l.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Progress returns how many messages were written and how many of them reached the
// output queue.
func (l *Load) Progress() (sent, arrived int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.sent), l.arrived
}

// AllBeforeVisible reports whether every message written before t has reached the output
// queue, and if so the time the last of them did.
func (l *Load) AllBeforeVisible(t time.Time) (bool, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var last time.Duration
	end := l.offset(t)
	for i, s := range l.sent {
		if s >= end {
			break
		}
		if l.seen[i] == 0 {
			return false, time.Time{}
		}
		last = max(last, l.seen[i])
	}
	return true, l.start.Add(last)
}

// Latencies returns the write-to-output-queue latencies of the messages written in
// [from, to), sorted, and how many of those have not arrived.
func (l *Load) Latencies(from, to time.Time) (lat []time.Duration, missing int) {
	return l.latencies(l.seen, from, to)
}

// TableLatencies is Latencies for the result table.
func (l *Load) TableLatencies(from, to time.Time) (lat []time.Duration, missing int) {
	return l.latencies(l.inTable, from, to)
}

func (l *Load) latencies(at []time.Duration, from, to time.Time) (lat []time.Duration, missing int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lo, hi := l.offset(from), l.offset(to)
	for i, s := range l.sent {
		if s < lo || s >= hi {
			continue
		}
		if at[i] == 0 {
			missing++
			continue
		}
		lat = append(lat, at[i]-s)
	}
	slices.Sort(lat)
	return lat, missing
}

// Percentile returns the q-quantile (0 < q ≤ 1) of sorted durations, 0 when empty.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Window is a span of send times and the largest latency of the messages sent in it.
type Window struct {
	Start time.Duration // from the start of the measured span
	Max   time.Duration
}

// WorstWindows splits [from, to) by send time into windows of width and returns the n
// windows whose messages waited longest, worst first: where in the run a latency tail came
// from (a stall shows as neighbouring windows with a high maximum, a periodic one as
// windows at a steady spacing).
func (l *Load) WorstWindows(from, to time.Time, width time.Duration, n int) []Window {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ws []Window
	lo, hi := l.offset(from), l.offset(to)
	for i, s := range l.sent {
		if s < lo || s >= hi || l.seen[i] == 0 {
			continue
		}
		k := int((s - lo) / width)
		for len(ws) <= k {
			ws = append(ws, Window{Start: time.Duration(len(ws)) * width})
		}
		ws[k].Max = max(ws[k].Max, l.seen[i]-s)
	}
	slices.SortFunc(ws, func(a, b Window) int { return cmp.Compare(b.Max, a.Max) })
	return ws[:min(n, len(ws))]
}
