package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// SessionsLoad writes events at a steady rate into a sessions pipeline's input queue and
// records for every event when it was written and when it became visible at two points:
// committed at the sum stage (the user's "session" state, read with SumStates every 20ms)
// and delivered to the output queue as a running row (polled every 10ms; only a SumByUser
// with EmitRunningParam emits those). Event i belongs to user i mod users with amount 1.
// Both observables are counts per user: event i, the k-th event of its user, is visible
// once the state (or a running row) shows at least k events for the user.
type SessionsLoad struct {
	s     *Sessions
	rate  float64
	users int

	cancel      context.CancelFunc
	wg          sync.WaitGroup
	stopWriting func()

	mu       sync.Mutex
	sent     []time.Time // by event index: time just before its insert_rows call
	atSum    []time.Time // by event index: first seen in the sum stage's state; zero = not yet
	atOutput []time.Time // by event index: first seen in a running row of the output queue
	occ      map[string][]int
	sumUpTo  map[string]int
	outUpTo  map[string]int
	outRows  int
	err      error
	overflow int // counts above what was written: a double count or a foreign writer
}

// StartSessionsLoad starts writing rate events/s over users users (one insert_rows call
// every 10ms, catching up when a call is slow) and the pollers. Stop the writer with the
// returned function; the pollers run until ctx ends or Close.
func StartSessionsLoad(ctx context.Context, s *Sessions, rate float64, users int) (l *SessionsLoad, stopWriting func()) {
	l = &SessionsLoad{s: s, rate: rate, users: max(users, 1),
		occ: map[string][]int{}, sumUpTo: map[string]int{}, outUpTo: map[string]int{}}
	ctx, l.cancel = context.WithCancel(ctx)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		l.write(ctx, stop)
	}()
	l.wg.Go(func() { l.pollState(ctx) })
	l.wg.Go(func() { l.pollOutput(ctx) })
	var once sync.Once
	// Stopping lets a write in flight finish: a cancelled insert_rows could leave its
	// events recorded as sent but not written.
	l.stopWriting = func() { once.Do(func() { close(stop) }); <-done }
	return l, l.stopWriting
}

// Close stops writing and polling and waits for every goroutine of the load. The figures
// stay readable.
func (l *SessionsLoad) Close() {
	l.stopWriting()
	l.cancel()
	l.wg.Wait()
}

func (l *SessionsLoad) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = err
	}
}

// Err is the first write or poll error, or an error when the state or the output showed
// more events for a user than were written.
func (l *SessionsLoad) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil && l.overflow > 0 {
		return fmt.Errorf("%w: %d event counts above what was written", ErrSessionsMismatch, l.overflow)
	}
	return l.err
}

func (l *SessionsLoad) write(ctx context.Context, stop <-chan struct{}) {
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
		now := time.Now()
		events := make([]Event, n)
		for j := range events {
			i := first + j
			events[j] = Event{User: userName(i % l.users), Amount: 1}
			l.sent = append(l.sent, now)
			l.atSum = append(l.atSum, time.Time{})
			l.atOutput = append(l.atOutput, time.Time{})
			l.occ[events[j].User] = append(l.occ[events[j].User], i)
		}
		l.mu.Unlock()
		if err := l.s.Write(ctx, events); err != nil {
			if ctx.Err() == nil {
				// The events may or may not be in the queue: the run is void.
				l.fail(fmt.Errorf("write events %d..%d: %w", first, first+n-1, err))
			}
			return
		}
	}
}

// mark records that user's event count reached count at one observation point at now.
// Callers hold l.mu.
func (l *SessionsLoad) mark(user string, count int64, upTo map[string]int, at []time.Time, now time.Time) {
	occ := l.occ[user]
	if count > int64(len(occ)) {
		l.overflow++
		count = int64(len(occ))
	}
	for k := upTo[user]; k < int(count); k++ {
		if at[occ[k]].IsZero() {
			at[occ[k]] = now
		}
	}
	upTo[user] = max(upTo[user], int(count))
}

func (l *SessionsLoad) pollState(ctx context.Context) {
	for ctx.Err() == nil {
		got, err := l.s.SumStates(ctx)
		now := time.Now()
		if err != nil {
			if ctx.Err() == nil {
				l.fail(fmt.Errorf("poll sum states: %w", err))
			}
			return
		}
		l.mu.Lock()
		for u, t := range got {
			l.mark(u, t.Events, l.sumUpTo, l.atSum, now)
		}
		l.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (l *SessionsLoad) pollOutput(ctx context.Context) {
	var off int64
	for ctx.Err() == nil {
		rows, err := l.s.ReadOutput(ctx, off, 10000)
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
			l.outRows++
			l.mark(r.User, r.Events, l.outUpTo, l.atOutput, now)
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

// Progress returns how many events were written, how many of them the sum stage has
// committed, and how many rows the output queue delivered.
func (l *SessionsLoad) Progress() (sent, atSum, outputRows int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range l.atSum {
		if !t.IsZero() {
			atSum++
		}
	}
	return len(l.sent), atSum, l.outRows
}

// AllBeforeCommitted reports whether every event written before t is committed at the sum
// stage.
func (l *SessionsLoad) AllBeforeCommitted(t time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, s := range l.sent {
		if !s.Before(t) {
			break
		}
		if l.atSum[i].IsZero() {
			return false
		}
	}
	return true
}

// SumLatencies returns the write-to-sum-commit latencies of the events written in
// [from, to), sorted, and how many of those are not committed yet.
func (l *SessionsLoad) SumLatencies(from, to time.Time) (lat []time.Duration, missing int) {
	return l.latencies(l.atSum, from, to)
}

// OutputLatencies is SumLatencies for running rows in the output queue.
func (l *SessionsLoad) OutputLatencies(from, to time.Time) (lat []time.Duration, missing int) {
	return l.latencies(l.atOutput, from, to)
}

func (l *SessionsLoad) latencies(at []time.Time, from, to time.Time) (lat []time.Duration, missing int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, s := range l.sent {
		if s.Before(from) || !s.Before(to) {
			continue
		}
		if at[i].IsZero() {
			missing++
			continue
		}
		lat = append(lat, at[i].Sub(s))
	}
	slices.Sort(lat)
	return lat, missing
}
