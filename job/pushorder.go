// Push ordering.
//
// A sender keeps several pushes in flight per reader job, but the reader must offer their
// messages to its inbox in the order the sender produced them: derived messages of one key
// are processed in production order (flow-docs §5.4). Concurrent HTTP requests may arrive in
// any order, so each push carries its sender (the job id, unique per incarnation), a push
// session (1, 2, … per sender; a later session replaces every earlier one) and a sequence
// number within the session (1, 2, …). The reader offers push n of a session only after push n-1 of the
// same session was offered completely; a push that arrives before the first push of its (new)
// session waits for it too. A push whose predecessor does not arrive in time, a push of a
// session older than the sender's latest, or any push after one that was only partly accepted
// (full inbox) is refused and marks the session broken. The sender then
// waits until none of its pushes to that reader is in flight and starts a new session, which
// sends every unacknowledged row again, in production order. A reader that restarts knows no
// session, so pushes that were in flight towards its previous incarnation cannot overtake
// the retransmission either.
//
// Invariant: messages of one sender are offered to a reader's inbox in production order,
// whatever order concurrent pushes arrive in (TestPushOrderOffersInSequence,
// TestSwiftSessionsUnderFaults per-user running totals).

package job

import (
	"context"
	"errors"
	"sync"
	"time"
)

// pushOrderWait bounds how long a push waits for its predecessor to be offered, and
// pushSessionStartWait how long it waits for the first push of its session: that one left
// the sender together with it, unless it was refused before it was ordered (its job was not
// running yet), so a long wait would only hold the sender's new session back.
const (
	pushOrderWait        = 2 * time.Second
	pushSessionStartWait = 500 * time.Millisecond
)

// readerStream is the reader-side state of one sender's push session.
type readerStream struct {
	session uint64
	// next is the sequence number of the push to offer next; 0 when the session is broken.
	next uint64
	// changed is closed (and replaced) whenever next or session changes.
	changed chan struct{}
}

// pushOrder is a reader job's push ordering state, keyed by sender.
type pushOrder struct {
	mu      sync.Mutex
	streams map[string]*readerStream
}

func newPushOrder() *pushOrder { return &pushOrder{streams: map[string]*readerStream{}} }

// errOutOfOrder is the refusal of a push that cannot be offered in sequence.
const errOutOfOrder = "out of sequence; start a new push session"

// errPushOutOfSequence is the sender's error for a push refused with errOutOfOrder: its
// session broke (an earlier push of it failed or was refused); the sender starts a new one
// once its pushes in flight ended, without backing off for it.
var errPushOutOfSequence = errors.New("push out of sequence")

// offerInOrder waits until push seq of (sender, session) is next, then calls offer (under the
// ordering lock, so no later push of the session is offered before it ends). offer reports
// whether it accepted every message; if not, the session is broken. It returns false (with
// nothing offered) when the push cannot be offered in sequence. A push without a session (0)
// is offered at once (single pushes of tools and tests).
func (o *pushOrder) offerInOrder(ctx context.Context, sender string, session, seq uint64, offer func() bool) bool {
	if session == 0 {
		offer()
		return true
	}
	deadline := time.NewTimer(pushOrderWait)
	defer deadline.Stop()
	var startDeadline <-chan time.Time
	o.mu.Lock()
	for {
		st := o.streams[sender]
		if st == nil {
			st = &readerStream{changed: make(chan struct{})} // session 0: none started yet
			o.streams[sender] = st
		}
		if seq == 1 && st.session < session {
			// A new session replaces the sender's earlier ones: pushes of an old session
			// still waiting are refused when they wake, late ones when they arrive.
			close(st.changed)
			st = &readerStream{session: session, next: 1, changed: make(chan struct{})}
			o.streams[sender] = st
		}
		if session < st.session || (session == st.session && (st.next == 0 || seq < st.next)) {
			o.mu.Unlock()
			return false
		}
		if session == st.session && seq == st.next {
			complete := offer()
			if complete {
				st.next++
			} else {
				st.next = 0
			}
			close(st.changed)
			st.changed = make(chan struct{})
			o.mu.Unlock()
			return true
		}
		// A predecessor of this push, or the first push of its session, is still to come.
		starting := session > st.session
		if starting && startDeadline == nil {
			t := time.NewTimer(pushSessionStartWait)
			defer t.Stop()
			startDeadline = t.C
		}
		changed := st.changed
		o.mu.Unlock()
		select {
		case <-changed:
		case <-startDeadline:
			if starting {
				return false // the session never started here: nothing of it was offered
			}
		case <-deadline.C:
			o.mu.Lock()
			if st := o.streams[sender]; st != nil && st.session == session && st.next != 0 && st.next < seq {
				// The predecessor is lost: nothing after it may be offered in this session.
				st.next = 0
				close(st.changed)
				st.changed = make(chan struct{})
			}
			o.mu.Unlock()
			return false
		case <-ctx.Done():
			return false
		}
		o.mu.Lock()
	}
}

// senderStream is the sender-side state of its push session towards one reader job.
type senderStream struct {
	session uint64
	seq     uint64
	// broken is set when a push failed or was refused: no new push starts until the pushes in
	// flight end, then a new session begins.
	broken bool
}
