// Tests of the reader's ordering of a sender's pushes (pushOrder).

package job

import (
	"context"
	"sync"
	"testing"
)

// TestPushOrderOffersInSequence delivers the pushes of one session in reverse arrival order
// and checks the inbox sees them in sequence; pushes of an older session, pushes after a partly
// accepted one and pushes of an unknown session that are not its first are refused.
func TestPushOrderOffersInSequence(t *testing.T) {
	o := newPushOrder()
	ctx := context.Background()
	var mu sync.Mutex
	var offered []uint64
	var wg sync.WaitGroup
	ok := make([]bool, 6)
	for _, seq := range []uint64{5, 4, 3, 2, 1} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok[seq] = o.offerInOrder(ctx, "s", 1, seq, func() bool {
				mu.Lock()
				offered = append(offered, seq)
				mu.Unlock()
				return true
			})
		}()
	}
	wg.Wait()
	for seq := uint64(1); seq <= 5; seq++ {
		if !ok[seq] {
			t.Fatalf("push %d refused", seq)
		}
		if offered[seq-1] != seq {
			t.Fatalf("offer order %v, want 1..5", offered)
		}
	}

	never := func() bool { t.Fatal("offered a push that must be refused"); return false }
	if o.offerInOrder(ctx, "s", 1, 3, never) {
		t.Fatal("a repeated sequence number was accepted")
	}
	if o.offerInOrder(ctx, "other", 1, 2, never) {
		t.Fatal("push 2 of an unknown session was accepted")
	}
	// Session 2 replaces session 1; a late push of session 1 is refused.
	if !o.offerInOrder(ctx, "s", 2, 1, func() bool { return false }) { // partly accepted
		t.Fatal("first push of session 2 refused")
	}
	if o.offerInOrder(ctx, "s", 2, 2, never) {
		t.Fatal("a push after a partly accepted one was accepted")
	}
	if o.offerInOrder(ctx, "s", 1, 1, never) {
		t.Fatal("a push of a replaced session was accepted")
	}
	if !o.offerInOrder(ctx, "s", 3, 1, func() bool { return true }) {
		t.Fatal("a new session after a broken one was refused")
	}
	// Pushes without a session are offered at once.
	n := 0
	o.offerInOrder(ctx, "", 0, 0, func() bool { n++; return true })
	if n != 1 {
		t.Fatal("an unordered push was not offered")
	}
}

// TestPushOrderLostPredecessor refuses a push whose predecessor never arrives, and every later
// push of its session.
func TestPushOrderLostPredecessor(t *testing.T) {
	o := newPushOrder()
	ctx := context.Background()
	if !o.offerInOrder(ctx, "s", 1, 1, func() bool { return true }) {
		t.Fatal("push 1 refused")
	}
	never := func() bool { t.Fatal("offered a push whose predecessor is lost"); return false }
	if o.offerInOrder(ctx, "s", 1, 3, never) { // push 2 is lost: waits pushOrderWait, then refuses
		t.Fatal("push 3 accepted without push 2")
	}
	if o.offerInOrder(ctx, "s", 1, 2, never) {
		t.Fatal("the session was not broken by the lost push")
	}
}

// TestPushOrderWaitsForSessionStart: a push that arrives before the first push of its session
// waits for it instead of breaking the session, which used to happen whenever concurrent
// pushes raced at a session's start.
func TestPushOrderWaitsForSessionStart(t *testing.T) {
	o := newPushOrder()
	ctx := context.Background()
	var mu sync.Mutex
	var offered []uint64
	record := func(seq uint64) func() bool {
		return func() bool { mu.Lock(); offered = append(offered, seq); mu.Unlock(); return true }
	}
	done := make(chan bool, 1)
	go func() { done <- o.offerInOrder(ctx, "new", 1, 2, record(2)) }()
	// Push 2 is waiting once it has put its sender's stream in place (a push that returns
	// first was refused at once).
	for waiting := false; !waiting; {
		select {
		case ok := <-done:
			t.Fatalf("push 2 returned %v before push 1 arrived", ok)
		default:
		}
		o.mu.Lock()
		waiting = o.streams["new"] != nil
		o.mu.Unlock()
	}
	if !o.offerInOrder(ctx, "new", 1, 1, record(1)) {
		t.Fatal("push 1 refused")
	}
	if !<-done {
		t.Fatal("push 2, which arrived first, was refused")
	}
	if len(offered) != 2 || offered[0] != 1 || offered[1] != 2 {
		t.Fatalf("offered %v, want [1 2]", offered)
	}
	// A session whose first push never comes is refused, and nothing of it is offered.
	if o.offerInOrder(ctx, "lost", 1, 2, func() bool { t.Fatal("offered"); return false }) {
		t.Fatal("push 2 of a session that never started was accepted")
	}
}
