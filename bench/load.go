package bench

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Load writes uniquely numbered messages ("m<index>", each its own word and key) at a
// steady rate into a pipeline's input queue and polls the output queue, recording for
// every message when it was written and when its output became visible.
type Load struct {
	p    *Pipeline
	rate float64

	mu      sync.Mutex
	sent    []time.Time // by message index: time just before the insert_rows call
	seen    []time.Time // by message index: time the poller first saw its output; zero = not yet
	inTable []time.Time // by message index: time the table poller first saw its count row
	arrived int
	err     error
}

// StartLoad starts writing rate messages/s (in one insert_rows call every 10ms, catching
// up when a call is slow) and polling the output queue every 10ms. Stop the writer with
// the returned stop function; the poller runs until ctx ends.
func StartLoad(ctx context.Context, p *Pipeline, rate float64) (l *Load, stopWriting func()) {
	l = &Load{p: p, rate: rate}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.write(wctx)
	}()
	go l.poll(ctx)
	go l.pollTable(ctx)
	return l, func() { stop(); <-done }
}

func (l *Load) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = err
	}
}

// Err is the first write or poll error.
func (l *Load) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

func (l *Load) write(ctx context.Context) {
	start := time.Now()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
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
		now := time.Now()
		for range n {
			l.sent = append(l.sent, now)
			l.seen = append(l.seen, time.Time{})
			l.inTable = append(l.inTable, time.Time{})
		}
		l.mu.Unlock()
		words := make([]string, n)
		for i := range words {
			words[i] = "m" + strconv.Itoa(first+i)
		}
		if err := l.p.Write(ctx, words, first); err != nil {
			if ctx.Err() == nil {
				l.fail(fmt.Errorf("write messages %d..%d: %w", first, first+n-1, err))
			}
			l.mu.Lock()
			l.sent, l.seen, l.inTable = l.sent[:first], l.seen[:first], l.inTable[:first] // not written
			l.mu.Unlock()
			if ctx.Err() != nil {
				return
			}
		}
	}
}

func (l *Load) poll(ctx context.Context) {
	var off int64
	for ctx.Err() == nil {
		rows, err := l.p.ReadOutput(ctx, off, 10000)
		now := time.Now()
		if err != nil {
			if ctx.Err() == nil {
				l.fail(fmt.Errorf("poll output at %d: %w", off, err))
			}
			return
		}
		l.mu.Lock()
		for _, r := range rows {
			off = r.Offset + 1
			i, err := strconv.Atoi(strings.TrimPrefix(r.Word, "m"))
			if err != nil || i < 0 || i >= len(l.seen) {
				continue
			}
			if l.seen[i].IsZero() {
				l.seen[i] = now
				l.arrived++
			}
		}
		l.mu.Unlock()
		if len(rows) == 0 {
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
}

// pollTable looks every 20ms for the count rows of messages not yet seen in the result
// table (the sync sink, visible at the count computation's epoch commit), at most 500
// per query.
func (l *Load) pollTable(ctx context.Context) {
	for ctx.Err() == nil {
		l.mu.Lock()
		var pending []string
		for i := range l.inTable {
			if l.inTable[i].IsZero() {
				pending = append(pending, strconv.Quote("m"+strconv.Itoa(i)))
				if len(pending) == 500 {
					break
				}
			}
		}
		l.mu.Unlock()
		if len(pending) > 0 {
			rows, err := l.p.Store.SelectRows(ctx, fmt.Sprintf("word FROM [%s] WHERE word IN (%s)", l.p.Counts(), strings.Join(pending, ", ")))
			now := time.Now()
			if err != nil {
				if ctx.Err() == nil {
					l.fail(fmt.Errorf("poll table: %w", err))
				}
				return
			}
			l.mu.Lock()
			for _, r := range rows {
				w, _ := r["word"].(string)
				if i, err := strconv.Atoi(strings.TrimPrefix(w, "m")); err == nil && i >= 0 && i < len(l.inTable) && l.inTable[i].IsZero() {
					l.inTable[i] = now
				}
			}
			l.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TableLatencies returns the write-to-result-table latencies of the messages written in
// [from, to) that the table poller saw, sorted.
func (l *Load) TableLatencies(from, to time.Time) []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var lat []time.Duration
	for i, s := range l.sent {
		if !s.Before(from) && s.Before(to) && !l.inTable[i].IsZero() {
			lat = append(lat, l.inTable[i].Sub(s))
		}
	}
	slices.Sort(lat)
	return lat
}

// Progress returns how many messages were written and how many of them reached the sink.
func (l *Load) Progress() (sent, arrived int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.sent), l.arrived
}

// AllBeforeVisible reports whether every message written before t has reached the sink,
// and if so the time the last of them did.
func (l *Load) AllBeforeVisible(t time.Time) (bool, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var last time.Time
	for i, s := range l.sent {
		if !s.Before(t) {
			break
		}
		if l.seen[i].IsZero() {
			return false, time.Time{}
		}
		if l.seen[i].After(last) {
			last = l.seen[i]
		}
	}
	return true, last
}

// Latencies returns the write-to-visibility latencies of the messages written in
// [from, to), sorted, and how many of those have not arrived.
func (l *Load) Latencies(from, to time.Time) (lat []time.Duration, missing int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, s := range l.sent {
		if s.Before(from) || !s.Before(to) {
			continue
		}
		if l.seen[i].IsZero() {
			missing++
			continue
		}
		lat = append(lat, l.seen[i].Sub(s))
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
