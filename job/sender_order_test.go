// The sender waits for its pushes to a key's previous owner before it pushes to the new one.

package job

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytstore"
)

// recordingReader is a reader endpoint that records the message ids of each push; while hold
// is open, pushes block until it is closed and then fail.
type recordingReader struct {
	mu       sync.Mutex
	pushes   [][]string
	arrived  chan struct{}
	hold     chan struct{}
	holdOnce sync.Once
}

func newRecordingReader(t *testing.T, hold bool) (*recordingReader, string) {
	rr := &recordingReader{arrived: make(chan struct{}, 100)}
	if hold {
		rr.hold = make(chan struct{})
	}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		pr, err := decodePush(body)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		ids := make([]string, len(pr.Messages))
		for i, m := range pr.Messages {
			ids[i] = m.ID
		}
		rr.mu.Lock()
		rr.pushes = append(rr.pushes, ids)
		rr.mu.Unlock()
		rr.arrived <- struct{}{}
		if rr.hold != nil {
			<-rr.hold
			http.Error(rw, "reader gone", http.StatusServiceUnavailable)
			return
		}
		_ = json.NewEncoder(rw).Encode(pushResponse{Acked: ids})
	}))
	t.Cleanup(func() { rr.release(); srv.Close() })
	return rr, srv.Listener.Addr().String()
}

func (rr *recordingReader) release() {
	if rr.hold != nil {
		rr.holdOnce.Do(func() { close(rr.hold) })
	}
}

func (rr *recordingReader) received() [][]string {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return append([][]string(nil), rr.pushes...)
}

// TestSenderWaitsForPushesToPreviousOwner moves a key range to a new reader job while a push
// to its previous owner hangs: the sender pushes nothing to the new owner until that push
// ended, then sends everything unacknowledged in production order.
func TestSenderWaitsForPushesToPreviousOwner(t *testing.T) {
	oldReader, oldAddr := newRecordingReader(t, true)
	newReader, newAddr := newRecordingReader(t, false)
	w := NewWorker(Config{PushTimeout: 300 * time.Millisecond})
	r := &runner{w: w, job: ytstore.Job{JobID: "src#1", PartitionID: "src"}, comp: &spec.Computation{ID: "src"},
		inbox: newInbox(100), outbox: newOutbox(), order: newPushOrder(), log: w.log}
	setRoute := func(jobID, addr string) {
		w.layout.mu.Lock()
		w.layout.routes = map[string][]route{"count": {{jobID: jobID, lower: 0, upper: 0, address: addr}}}
		w.layout.mu.Unlock()
	}
	rows := func(ids ...string) []ytstore.OutputRow {
		out := make([]ytstore.OutputRow, len(ids))
		for i, id := range ids {
			out[i] = ytstore.OutputRow{PartitionID: "src", Destination: "count", MessageID: id, StreamID: "s", KeyHash: 7}
		}
		return out
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := newSender(r)
	t.Cleanup(func() { cancel(); oldReader.release(); s.wg.Wait() })

	setRoute("count#old", oldAddr)
	r.outbox.add(rows("m1", "m2"))
	s.round(ctx)
	select { // the push to the old owner hangs
	case <-oldReader.arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("no push reached the old owner")
	}

	setRoute("count#new", newAddr)
	r.outbox.add(rows("m3", "m4"))
	s.round(ctx)
	s.mu.Lock()
	started := s.pushes["count#new"]
	s.mu.Unlock()
	if started != 0 {
		t.Fatalf("%d pushes to the new owner started while m1, m2 were in flight to the old one", started)
	}

	oldReader.release() // the old push fails
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		flying := len(s.inFlight["count"])
		s.mu.Unlock()
		if flying == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the failed push never ended")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for r.outbox.size() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("rows never delivered to the new owner: %v", newReader.received())
		}
		s.mu.Lock()
		s.retryAt = map[string]time.Time{}
		s.mu.Unlock()
		s.round(ctx)
		time.Sleep(5 * time.Millisecond)
	}
	var got []string
	for _, p := range newReader.received() {
		got = append(got, p...)
	}
	want := []string{"m1", "m2", "m3", "m4"}
	if len(got) != len(want) {
		t.Fatalf("new owner received %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("new owner received %v, want %v in production order", got, want)
		}
	}
}

// TestSenderEndsPushesToRemovedJobs moves a key range to a new reader job while a push to
// its previous owner hangs (a frozen worker: the kernel accepts, nothing answers), and the
// layout no longer has the previous owner (its lease was aborted before it was removed): the
// sender ends that push at once instead of waiting for its timeout, and sends everything
// unacknowledged to the new owner in production order. The hanging push is never released.
func TestSenderEndsPushesToRemovedJobs(t *testing.T) {
	oldReader, oldAddr := newRecordingReader(t, true)
	newReader, newAddr := newRecordingReader(t, false)
	// A push timeout far beyond the test's deadline: only ending the push lets it pass.
	w := NewWorker(Config{PushTimeout: time.Hour})
	r := &runner{w: w, job: ytstore.Job{JobID: "src#1", PartitionID: "src"}, comp: &spec.Computation{ID: "src"},
		inbox: newInbox(100), outbox: newOutbox(), order: newPushOrder(), log: w.log}
	setRoute := func(jobID, addr string) {
		w.layout.mu.Lock()
		w.layout.routes = map[string][]route{"count": {{jobID: jobID, lower: 0, upper: 0, address: addr}}}
		w.layout.jobs = map[string]bool{jobID: true}
		w.layout.mu.Unlock()
	}
	rows := func(ids ...string) []ytstore.OutputRow {
		out := make([]ytstore.OutputRow, len(ids))
		for i, id := range ids {
			out[i] = ytstore.OutputRow{PartitionID: "src", Destination: "count", MessageID: id, StreamID: "s", KeyHash: 7}
		}
		return out
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := newSender(r)
	t.Cleanup(func() { cancel(); oldReader.release(); s.wg.Wait() })

	setRoute("count#old", oldAddr)
	r.outbox.add(rows("m1", "m2"))
	s.round(ctx)
	select { // the push to the old owner hangs
	case <-oldReader.arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("no push reached the old owner")
	}

	setRoute("count#new", newAddr) // count#old is gone from the layout
	r.outbox.add(rows("m3", "m4"))
	deadline := time.Now().Add(30 * time.Second)
	for r.outbox.size() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("rows never delivered to the new owner while the push to the removed one hangs: %v", newReader.received())
		}
		s.mu.Lock()
		s.retryAt = map[string]time.Time{}
		s.mu.Unlock()
		s.round(ctx)
		time.Sleep(5 * time.Millisecond)
	}
	var got []string
	for _, p := range newReader.received() {
		got = append(got, p...)
	}
	want := []string{"m1", "m2", "m3", "m4"}
	if len(got) != len(want) {
		t.Fatalf("new owner received %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("new owner received %v, want %v in production order", got, want)
		}
	}
	if n := len(oldReader.received()); n != 1 {
		t.Errorf("the removed owner got %d pushes, want the 1 that hangs", n)
	}
}
