// Package ordering is the pure core of input_ordering (Flow's cross-stream priority, flow-docs
// §5.4): it decides which buffered input messages of a computation with several input streams
// its function may see next, and in which order.
//
// Each input stream is a queue in arrival order: the order in which its writers produced the
// messages, which keeps the per-key lineage order within the stream. The merge compares the
// heads of the queues by their stabilized event timestamp (the event timestamp plus the
// stream's input_ordering.stream_delays entry) and releases the smallest; ties go to the
// stream listed first in Config.Streams. A head is released only when no message still to
// arrive can precede it: every input stream with nothing buffered has an event watermark
// that, plus that stream's delay, is at least the head's stabilized timestamp. A stream with
// a buffered message competes by its head instead (what arrives later on it comes after its
// head anyway).
//
// The package is pure: no clock, no I/O; the job driver feeds it the buffer and the
// published per-stream watermarks.
package ordering

import "math"

// Message is a buffered input as the merge sees it.
type Message struct {
	// Stream is the input stream id.
	Stream string
	// EventTS is the event timestamp in µs (0: none, the beginning of time).
	EventTS uint64
}

// Config is the input_ordering of a computation.
type Config struct {
	// Streams are the computation's input streams, in tie-break order (sorted ids).
	Streams []string
	// Delays are the stream_delays in µs, by stream; a stream without one has none.
	Delays map[string]uint64
}

// Stabilized is the stabilized event timestamp of m: its event timestamp plus its stream's
// delay (saturating).
func (c Config) Stabilized(m Message) uint64 { return add(m.EventTS, c.Delays[m.Stream]) }

// Release returns the indices into buffered (the untaken messages in arrival order) of the
// messages to deliver now, in delivery order, at most max of them. watermarks are the
// published event watermarks by stream (a stream without one bounds nothing yet: it holds
// everything back; math.MaxUint64: the stream has ended). With all set (the computation is
// completing: nothing more arrives) the merge releases everything in merged order without
// waiting for watermarks.
//
// Invariant: a message is released only after every message buffered before it on its stream
// (per-stream arrival order, TestReleaseKeepsStreamOrder) and only once every input stream
// with nothing buffered has a watermark, plus its delay, at or past its stabilized timestamp
// (TestReleaseWaitsForWatermarks); released messages come out by stabilized timestamp
// (TestReleaseMergesByStabilizedTime).
func (c Config) Release(buffered []Message, watermarks map[string]uint64, max int, all bool) []int {
	if max <= 0 || len(buffered) == 0 {
		return nil
	}
	rank := make(map[string]int, len(c.Streams))
	for i, s := range c.Streams {
		rank[s] = i
	}
	// queues[i] are the indices of stream i's messages in arrival order; streams not listed
	// in Config.Streams get queues after the listed ones.
	queues := make([][]int, len(c.Streams))
	names := append([]string(nil), c.Streams...)
	for i, m := range buffered {
		r, ok := rank[m.Stream]
		if !ok {
			r = len(names)
			rank[m.Stream] = r
			names = append(names, m.Stream)
			queues = append(queues, nil)
		}
		queues[r] = append(queues[r], i)
	}
	out := make([]int, 0, min(max, len(buffered)))
	for len(out) < max {
		best, bestTS := -1, uint64(0)
		for q, idx := range queues {
			if len(idx) == 0 {
				continue
			}
			if ts := c.Stabilized(buffered[idx[0]]); best < 0 || ts < bestTS {
				best, bestTS = q, ts
			}
		}
		if best < 0 {
			break // everything released
		}
		if !all && !c.passed(names, queues, watermarks, bestTS) {
			break // a stream with nothing buffered may still bring an earlier message
		}
		out = append(out, queues[best][0])
		queues[best] = queues[best][1:]
	}
	return out
}

// passed reports whether every listed stream with an empty queue has a watermark plus delay
// at or past ts.
func (c Config) passed(names []string, queues [][]int, watermarks map[string]uint64, ts uint64) bool {
	for q, s := range names[:len(c.Streams)] {
		if len(queues[q]) > 0 {
			continue
		}
		w, ok := watermarks[s]
		if !ok || add(w, c.Delays[s]) < ts {
			return false
		}
	}
	return true
}

func add(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}
