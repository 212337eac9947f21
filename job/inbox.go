// A job's inbox: the bounded buffer of received inputs that pushes offer and wait on and the
// runner takes, acknowledges and releases.

package job

import (
	"fmt"
	"reflect"
	"slices"
	"sync"

	"github.com/ytflow/yt-flow/internal/ordering"
	"github.com/ytflow/yt-flow/job/epoch"
)

// pending is one buffered input of an inbox.
type pending struct {
	in        epoch.Input
	taken     bool
	persisted bool // committed, or a known duplicate: acknowledged (ack)
	// waiters are the pushes waiting for this input (usually one; more when a sender
	// retransmitted it before the first copy's push was answered). waiters starts as a
	// slice of one over first, so the usual case allocates nothing more.
	waiters []*pushWaiter
	first   [1]*pushWaiter
}

// pushWaiter is one push waiting until all of its inputs are persisted. Its fields are
// guarded by the inbox's mutex; done is closed when left reaches zero.
type pushWaiter struct {
	left int
	done chan struct{}
}

// inbox is a job's bounded buffer of received inputs. The HTTP handlers offer and wait, the
// runner takes, acknowledges and releases.
type inbox struct {
	limit  int
	notify chan struct{}
	// stopped is closed when the job stops running (stop).
	stopped  chan struct{}
	stopOnce sync.Once

	mu    sync.Mutex
	order []*pending
	byID  map[string]*pending
	// perStream, when set (input_ordering), counts the buffered messages by stream and the
	// limit applies to each stream on its own: a stream held back behind another's watermark
	// never fills the inbox against the stream it waits for.
	perStream map[string]int
	// merge is scratch of takeOrdered.
	merge  []ordering.Message
	mergeP []*pending
	// mismatches counts received copies of a buffered message whose payload differs from
	// the first copy's (a nondeterministic swift recomputation); lastMismatch describes the
	// latest.
	mismatches   int64
	lastMismatch string
}

func newInbox(limit int) *inbox {
	return &inbox{limit: limit, notify: make(chan struct{}, 1), stopped: make(chan struct{}), byID: map[string]*pending{}}
}

// stop marks the inbox's job stopped: pushes waiting for commits are answered at once.
func (b *inbox) stop() {
	b.stopOnce.Do(func() { close(b.stopped) })
}

// offer buffers ins (a message already buffered is not buffered twice) and returns the
// accepted ones, a prefix of ins: messages beyond the limit are not accepted (back-pressure).
// The returned waiter's done is closed once every accepted message is persisted.
func (b *inbox) offer(ins []epoch.Input) (w *pushWaiter, accepted []*pending) {
	w = &pushWaiter{done: make(chan struct{})}
	accepted = make([]*pending, 0, len(ins))
	slab := make([]pending, len(ins)) // the new entries, allocated together
	b.mu.Lock()
	for i, in := range ins {
		id := in.Message.MessageID
		if p, ok := b.byID[id]; ok {
			accepted = append(accepted, p)
			w.left++
			p.waiters = append(p.waiters, w)
			// Invariant: a repeated message whose payload differs from the buffered copy is
			// reported, never silently replaced (TestInboxReportsPayloadMismatch).
			if !reflect.DeepEqual(p.in.Message.Payload, in.Message.Payload) {
				b.mismatches++
				b.lastMismatch = fmt.Sprintf("message %s on stream %s was received again with another payload "+
					"(a nondeterministic swift computation?): first %v, now %v; the first copy is kept",
					id, in.Message.StreamID, p.in.Message.Payload, in.Message.Payload)
			}
			continue
		}
		if b.perStream != nil {
			if b.perStream[in.Message.StreamID] >= b.limit {
				break
			}
			b.perStream[in.Message.StreamID]++
		} else if len(b.byID) >= b.limit {
			break
		}
		p := &slab[i]
		p.in, p.first[0] = in, w
		p.waiters = p.first[:]
		w.left++
		b.byID[id] = p
		b.order = append(b.order, p)
		accepted = append(accepted, p)
	}
	if w.left == 0 {
		close(w.done)
	}
	b.mu.Unlock()
	select {
	case b.notify <- struct{}{}:
	default:
	}
	return w, accepted
}

// persistedIDs returns the ids of the messages of ps persisted so far.
func (b *inbox) persistedIDs(ps []*pending) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	ids := make([]string, 0, len(ps))
	for _, p := range ps {
		if p.persisted {
			ids = append(ids, p.in.Message.MessageID)
		}
	}
	return ids
}

// take marks up to max untaken inputs as taken and returns them in arrival order.
func (b *inbox) take(max int) []epoch.Input { return b.takeInto(nil, max, -1) }

// takeInto is take into the memory of buf (which it clears first), of at most maxBytes bytes
// of inputs (epoch.Input.Bytes; negative: no limit) unless the first input alone is larger:
// that one is taken by itself.
func (b *inbox) takeInto(buf []epoch.Input, max int, maxBytes int64) []epoch.Input {
	clear(buf)
	b.mu.Lock()
	defer b.mu.Unlock()
	out := slices.Grow(buf[:0], min(max, len(b.byID)))
	live := b.order[:0]
	var bytes int64
	full := false
	for _, p := range b.order {
		if p.persisted {
			continue // acknowledged (drop empties order and byID together)
		}
		live = append(live, p)
		if p.taken || full || len(out) >= max {
			continue
		}
		if maxBytes >= 0 && len(out) > 0 && bytes+int64(p.in.Bytes) > maxBytes {
			full = true // keep arrival order: nothing after the first input left out
			continue
		}
		p.taken = true
		bytes += int64(p.in.Bytes)
		out = append(out, p.in)
	}
	clear(b.order[len(live):])
	b.order = live
	return out
}

// ack drops persisted inputs and wakes the pushes waiting for them.
func (b *inbox) ack(ids []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, id := range ids {
		if p, ok := b.byID[id]; ok {
			delete(b.byID, id)
			if b.perStream != nil {
				b.perStream[p.in.Message.StreamID]--
			}
			p.persisted = true
			for _, w := range p.waiters {
				if w.left--; w.left == 0 {
					close(w.done)
				}
			}
			p.waiters, p.first[0] = nil, nil
		}
	}
}

// release returns taken inputs of a failed epoch to the buffer, keeping their order.
func (b *inbox) release(ids []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, id := range ids {
		if p, ok := b.byID[id]; ok {
			p.taken = false
		}
	}
}

// drop forgets every buffered input without acknowledging it (a retiring job).
func (b *inbox) drop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.order = nil
	b.byID = map[string]*pending{}
	if b.perStream != nil {
		b.perStream = map[string]int{}
	}
}

// takeOrdered is takeInto under input_ordering: the untaken inputs released by c given the
// streams' event watermarks (ordering.Config.Release; all: release everything), in release
// order, up to max; held is the number of untaken inputs left.
func (b *inbox) takeOrdered(buf []epoch.Input, max int, c *ordering.Config, watermarks map[string]uint64, all bool) (out []epoch.Input, held int) {
	clear(buf)
	b.mu.Lock()
	defer b.mu.Unlock()
	merge, ps := b.merge[:0], b.mergeP[:0]
	live := b.order[:0]
	for _, p := range b.order {
		if p.persisted {
			continue
		}
		live = append(live, p)
		if !p.taken {
			merge = append(merge, ordering.Message{Stream: p.in.Message.StreamID, EventTS: p.in.Message.EventTimestamp})
			ps = append(ps, p)
		}
	}
	clear(b.order[len(live):])
	b.order = live
	released := c.Release(merge, watermarks, max, all)
	out = slices.Grow(buf[:0], len(released))
	for _, i := range released {
		ps[i].taken = true
		out = append(out, ps[i].in)
	}
	clear(ps)
	b.merge, b.mergeP = merge[:0], ps[:0]
	return out, len(merge) - len(released)
}

// minSystemTS is the smallest system timestamp of the buffered inputs (taken or not,
// retransmitted duplicates included); 0 when none.
func (b *inbox) minSystemTS() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	var least uint64
	for _, p := range b.order { // a slice walk: byID holds the same live entries
		if p.persisted {
			continue
		}
		if ts := p.in.Message.SystemTimestamp; ts != 0 && (least == 0 || ts < least) {
			least = ts
		}
	}
	return least
}

// minEventTS is the smallest event timestamp of the messages buffered or taken by an epoch
// not yet committed (1 for a message without one: the beginning of time); 0 when none.
func (b *inbox) minEventTS() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	var least uint64
	for _, p := range b.order {
		if p.persisted {
			continue
		}
		ts := max(p.in.Message.EventTimestamp, 1)
		if least == 0 || ts < least {
			least = ts
		}
	}
	return least
}

// reportCommittedMismatch records a message received again with another payload after its
// first copy was committed (the dedup index's payload fingerprint differs).
func (b *inbox) reportCommittedMismatch(in epoch.Input, registered uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mismatches++
	b.lastMismatch = fmt.Sprintf("message %s on stream %s was received again with another payload "+
		"(a nondeterministic swift computation?): the committed copy's payload fingerprint is %016x, this copy's %016x (payload %v); "+
		"the committed copy stands", in.Message.MessageID, in.Message.StreamID, registered, in.PayloadFingerprint, in.Message.Payload)
}

// payloadMismatches returns the number of payload mismatches seen and the latest one.
func (b *inbox) payloadMismatches() (int64, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mismatches, b.lastMismatch
}

func (b *inbox) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.byID)
}
