package job

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	farm "github.com/dgryski/go-farm"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/internal/ybin"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/ytstore"
)

// wireMessage is one message on the inter-job transport. Key and Payload are YSON bytes.
type wireMessage struct {
	ID       string `json:"id"`
	Stream   string `json:"stream"`
	Key      []byte `json:"key"`
	KeyHash  uint64 `json:"key_hash"`
	Payload  []byte `json:"payload"`
	EventTS  uint64 `json:"event_ts,omitempty"`
	SystemTS uint64 `json:"system_ts,omitempty"`
	// Born is the message's birth (ytstore.OutputRow.Birth); 0 when not known
	// (epoch.Input.Born).
	Born uint64 `json:"born,omitempty"`
	// mem is Payload (and Key, when mem.key is set) decoded already, for a push within the
	// process (outbox.takeFlying): the producer's own, equal to what the bytes decode to.
	// Never sent.
	mem memMsg
}

// maxPushBytes bounds a /push request body.
const maxPushBytes = 256 << 20

// pushRequest carries messages for one reader job.
type pushRequest struct {
	JobID       string        `json:"job_id"`
	Computation string        `json:"computation"`
	Messages    []wireMessage `json:"messages"`
	// Sender, Session and Seq order the pushes of one sender (pushorder.go); Session 0 means
	// unordered.
	Sender  string `json:"sender,omitempty"`
	Session uint64 `json:"session,omitempty"`
	Seq     uint64 `json:"seq,omitempty"`
}

// pushResponse lists the ids the reader persisted (committed, or found already committed).
// The sender retransmits every other id later.
type pushResponse struct {
	Acked []string `json:"acked"`
	// Refused says why nothing was accepted (unknown job, full inbox, out of sequence), for
	// logs.
	Refused string `json:"refused,omitempty"`
	// Reset tells the sender its push session is broken (not every message was accepted):
	// later pushes of the session will be refused, so it must start a new one.
	Reset bool `json:"reset,omitempty"`
}

func fromWire(m wireMessage, dec *ybin.Decoder) (epoch.Input, error) {
	// An empty key decodes to nil: only a non-empty one is taken as it is.
	key := flow.Key(m.mem.key)
	if len(key) == 0 {
		var err error
		if key, err = epoch.DecodeKey(m.Key); err != nil {
			return epoch.Input{}, fmt.Errorf("message %s: key: %w", m.ID, err)
		}
	}
	var payload flow.Row
	if m.mem.payload != nil {
		payload = m.mem.payload
	} else if len(m.Payload) > 0 {
		var err error
		if payload, err = decodePayload(m.Payload, dec); err != nil {
			return epoch.Input{}, fmt.Errorf("message %s: payload: %w", m.ID, err)
		}
	}
	in := epoch.Input{Message: flow.Message{StreamID: m.Stream, MessageID: m.ID, Key: key, Payload: payload, EventTimestamp: m.EventTS, SystemTimestamp: m.SystemTS}, Born: m.Born}
	if len(m.Payload) > 0 {
		in.PayloadFingerprint = farm.Fingerprint64(m.Payload)
	}
	return in, nil
}

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
		if len(b.byID) >= b.limit {
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
func (b *inbox) take(max int) []epoch.Input { return b.takeInto(nil, max) }

// takeInto is take into the memory of buf (which it clears first).
func (b *inbox) takeInto(buf []epoch.Input, max int) []epoch.Input {
	clear(buf)
	b.mu.Lock()
	defer b.mu.Unlock()
	out := slices.Grow(buf[:0], min(max, len(b.byID)))
	live := b.order[:0]
	for _, p := range b.order {
		if p.persisted {
			continue // acknowledged (drop empties order and byID together)
		}
		live = append(live, p)
		if !p.taken && len(out) < max {
			p.taken = true
			out = append(out, p.in)
		}
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

// serveHTTP is the worker's transport endpoint.
func (w *Worker) serveHTTP(rw http.ResponseWriter, req *http.Request) {
	switch req.URL.Path {
	case "/push":
		w.handlePush(rw, req)
	case "/layout":
		// The controller changed the layout: read it now rather than at the next poll. The
		// request carries nothing; the layout is read from YTsaurus as at every poll.
		if req.Method != http.MethodPost {
			http.Error(rw, "layout: POST only", http.StatusMethodNotAllowed)
			return
		}
		w.wakeStatus()
		rw.WriteHeader(http.StatusNoContent)
	case "/stats":
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(w.Stats())
	default:
		http.NotFound(rw, req)
	}
}

// readBody reads a push request or response body from r (already limited to maxPushBytes);
// a known length sizes the buffer at once instead of doubling it.
func readBody(r io.Reader, length int64) ([]byte, error) {
	var buf bytes.Buffer
	if length > 0 && length <= maxPushBytes {
		buf.Grow(int(length) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(r)
	return buf.Bytes(), err
}

func (w *Worker) handlePush(rw http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		http.Error(rw, "push: POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := readBody(http.MaxBytesReader(rw, req.Body, maxPushBytes), req.ContentLength)
	if err != nil {
		http.Error(rw, "push: read request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	var pr pushRequest
	if req.Header.Get("Content-Type") == pushContentType {
		pr, err = decodePush(body)
	} else {
		err = json.Unmarshal(body, &pr) // senders of earlier versions
	}
	if err != nil {
		http.Error(rw, "push: bad request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	resp, err := w.acceptPush(req.Context(), pr)
	switch {
	case err == nil && req.Header.Get("Accept") == ackContentType:
		body := encodeAcks(resp)
		rw.Header().Set("Content-Type", ackContentType)
		rw.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = rw.Write(body)
	case err == nil:
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(resp)
	case req.Context().Err() != nil:
		// The sender gave up on the request: nothing to answer.
	default:
		http.Error(rw, "push: "+err.Error(), http.StatusBadRequest)
	}
}

// acceptPush offers the messages of pr to its reader job and waits until they are persisted
// (committed, or known duplicates), the job stops, the push timeout passes or ctx ends; it
// returns the acknowledged ids. Both the /push endpoint and pushes between jobs of this worker
// (pushLocal) go through it, so both follow the same protocol. The error is a malformed
// message (errBadPush) or ctx's.
func (w *Worker) acceptPush(ctx context.Context, pr pushRequest) (pushResponse, error) {
	reply := func(resp pushResponse) (pushResponse, error) {
		w.holdAck(ctx, len(resp.Acked)) // testing aid, off by default (failpoint.go)
		return resp, nil
	}
	r := w.runner(pr.JobID)
	if r == nil || r.job.ComputationID != pr.Computation {
		return reply(pushResponse{Refused: "no job " + pr.JobID + " of computation " + pr.Computation + " here"})
	}
	if r.retiring.Load() {
		return reply(pushResponse{Refused: "job " + pr.JobID + " is retiring"})
	}
	// ins lives as long as the call: offer copies what it buffers.
	insBuf := inputBuffers.Get().(*[]epoch.Input)
	defer func() { clear(*insBuf); inputBuffers.Put(insBuf) }()
	ins := slices.Grow((*insBuf)[:0], len(pr.Messages))
	defer func() { *insBuf = ins }()
	var dec ybin.Decoder // payloads of one stream repeat their field names
	var taken int64
	for _, m := range pr.Messages {
		if !epoch.InRange(m.KeyHash, r.job.LowerKey, r.job.UpperKey) {
			continue // not ours (layout moved on): never acknowledged here
		}
		in, err := fromWire(m, &dec)
		if err != nil {
			return pushResponse{}, fmt.Errorf("%w: %w", errBadPush, err)
		}
		if m.mem.payload != nil {
			taken++
		}
		ins = append(ins, in)
	}
	r.stats.payloadsTaken.Add(taken)
	var waiter *pushWaiter
	var accepted []*pending
	complete := false
	if !r.order.offerInOrder(ctx, pr.Sender, pr.Session, pr.Seq, func() bool {
		waiter, accepted = r.inbox.offer(ins)
		complete = len(accepted) == len(ins)
		return complete
	}) {
		return reply(pushResponse{Refused: errOutOfOrder, Reset: true})
	}
	if len(accepted) == 0 && len(ins) > 0 {
		return reply(pushResponse{Refused: "inbox full", Reset: pr.Session != 0})
	}
	reset := !complete && pr.Session != 0
	// answerNow replies with what is persisted now; the sender retransmits the rest.
	answerNow := func() (pushResponse, error) {
		return reply(pushResponse{Acked: r.inbox.persistedIDs(accepted), Reset: reset})
	}
	deadline := time.NewTimer(w.cfg.PushTimeout)
	defer deadline.Stop()
	select {
	case <-waiter.done:
		return answerNow() // every accepted message
	case <-r.inbox.stopped:
		// The job stopped (removed, rebalanced, lease lost): what it did not commit never
		// will be; answer now so that the sender sends the rest to the key's new owner
		// instead of waiting for the push timeout.
		return answerNow()
	case <-deadline.C:
		return answerNow()
	case <-ctx.Done():
		return pushResponse{}, ctx.Err()
	}
}

// swiftOutput names an in-memory output of a swift computation: its destination and id.
type swiftOutput struct{ dest, id string }

// outMsg is one output store row waiting for its reader or sink.
type outMsg struct {
	// row is the caller's row (add and addSwift take the rows over), not a copy: an outbox
	// holds many pending rows, each would cost its size twice.
	row *ytstore.OutputRow
	// gone marks a row acknowledged or delivered: it stays in its destQueue until skipped.
	gone bool
	// flying marks a row carried by a push in flight (setFlying), which a sender round skips
	// without looking it up.
	flying bool
	// mem is the row's payload map and key (ytstore.OutputRow.Mem and MemKey, moved here by
	// add), until a push takes it (takeFlying): the first push in this process hands it to
	// its reader.
	mem memMsg
}

// memMsg is a message's payload and key as the producer made them (handOver): what its
// bytes decode to.
type memMsg struct {
	payload map[string]any
	key     []any
}

// destQueue lists a destination's pending rows in message id (production) order, so a sender
// round reads the oldest rows first and stops once its pushes are full instead of sorting
// everything pending. Finished rows are marked gone and dropped lazily.
type destQueue struct {
	rows     []*outMsg
	unsorted bool // a row was added out of id order: sort before the next read
	gone     int  // rows marked gone still in rows
}

func (q *destQueue) push(m *outMsg) {
	if n := len(q.rows); n > 0 && q.rows[n-1].row.MessageID > m.row.MessageID {
		q.unsorted = true
	}
	q.rows = append(q.rows, m)
}

// compact drops gone rows and restores id order when needed.
func (q *destQueue) compact() {
	if q.gone > 0 && (q.unsorted || q.gone > len(q.rows)/2) {
		kept := q.rows[:0]
		for _, m := range q.rows {
			if !m.gone {
				kept = append(kept, m)
			}
		}
		clear(q.rows[len(kept):])
		q.rows, q.gone = kept, 0
	}
	if q.unsorted {
		sort.Slice(q.rows, func(i, j int) bool { return q.rows[i].row.MessageID < q.rows[j].row.MessageID })
		q.unsorted = false
	}
	// Rows at the head are acknowledged first, most of the time.
	for len(q.rows) > 0 && q.rows[0].gone {
		q.rows[0] = nil
		q.rows = q.rows[1:]
		q.gone--
	}
}

// chunkState counts the messages of one output store chunk that are not acknowledged yet;
// minTS is the least system timestamp of all its messages. A chunk holds the system
// watermark at minTS until it is deleted: its acknowledged messages are resent if the job
// restarts before then, and their readers must still find them in the dedup index.
type chunkState struct {
	left  int
	minTS uint64
}

// doneEntry is an acknowledged output whose output store row is not deleted yet.
type doneEntry struct {
	key      ytstore.OutputKey
	systemTS uint64
}

// outbox mirrors a runner's rows in the output store. The runner adds committed rows; the
// sender moves acknowledged/delivered ones to done; an epoch takes done keys to delete them
// (deleting) and either confirms the deletion (committed) or gives them back.
type outbox struct {
	notify chan struct{}
	// doneReady is signalled when finish adds keys to done (a draining job commits their
	// deletion at once instead of after its idle wait).
	doneReady chan struct{}

	mu       sync.Mutex
	pending  map[string]map[string]*outMsg // destination -> message id -> row
	queues   map[string]*destQueue         // destination -> the same rows in id order
	done     []doneEntry
	deleting []doneEntry
	// doneSince is when the oldest entry of done finished (zero when done is empty);
	// deletingSince the same for the entries taken into deleting.
	doneSince, deletingSince time.Time
	// children counts, per parent input of a swift computation, its outputs not yet
	// delivered (one per destination); parentOf maps an output (destination, id) to its
	// parents.
	// Swift outputs are in memory only: a finished one leaves at once.
	children map[string]int
	parentOf map[swiftOutput][]string
	// chunks tracks the stored chunks that still hold unacknowledged messages.
	chunks map[ytstore.OutputKey]*chunkState
}

func newOutbox() *outbox {
	return &outbox{notify: make(chan struct{}, 1), doneReady: make(chan struct{}, 1), pending: map[string]map[string]*outMsg{}, queues: map[string]*destQueue{}, chunks: map[ytstore.OutputKey]*chunkState{}}
}

// add adds the stored outputs rows (an epoch's, or those a job found at its start) and takes
// the slice over: the outbox keeps pointers into it.
func (o *outbox) add(rows []ytstore.OutputRow) {
	if len(rows) == 0 {
		return
	}
	slab := make([]outMsg, len(rows)) // one allocation for the batch's entries
	// The rows of one chunk are consecutive: the last chunk's state is looked up once.
	var lastKey ytstore.OutputKey
	var last *chunkState
	o.mu.Lock()
	for i, r := range rows {
		m := o.pending[r.Destination]
		if m == nil {
			m = map[string]*outMsg{}
			o.pending[r.Destination] = m
		}
		// The payload and key handed over stay with the outbox entry, not in the row.
		rows[i].Mem, rows[i].MemKey = nil, nil
		if _, have := m[r.MessageID]; have {
			continue
		}
		msg := &slab[i]
		msg.row = &rows[i]
		msg.mem = memMsg{r.Mem, r.MemKey}
		m[r.MessageID] = msg
		o.queue(r.Destination).push(msg)
		if r.Chunk.ID != 0 {
			c := last
			if c == nil || r.Chunk != lastKey.Chunk || r.Destination != lastKey.Destination || r.PartitionID != lastKey.PartitionID {
				lastKey = r.StoreKey()
				c = o.chunks[lastKey]
				if c == nil {
					c = &chunkState{minTS: r.SystemTimestamp}
					o.chunks[lastKey] = c
				}
				last = c
			}
			c.left++
			if r.SystemTimestamp != 0 && (c.minTS == 0 || r.SystemTimestamp < c.minTS) {
				c.minTS = r.SystemTimestamp
			}
		}
	}
	o.mu.Unlock()
	select {
	case o.notify <- struct{}{}:
	default:
	}
}

// addSwift adds the in-memory outputs of swift parents (parents[i] are the parents of
// rows[i]: one, or several with relaxed batching) and returns the parents in ids that have no
// output at all: they are processed already.
func (o *outbox) addSwift(ids []string, rows []ytstore.OutputRow, parents [][]string) (childless []string) {
	o.mu.Lock()
	if o.children == nil {
		o.children, o.parentOf = map[string]int{}, map[swiftOutput][]string{}
	}
	for i, r := range rows {
		m := o.pending[r.Destination]
		if m == nil {
			m = map[string]*outMsg{}
			o.pending[r.Destination] = m
		}
		k := swiftOutput{r.Destination, r.MessageID}
		if _, dup := o.parentOf[k]; dup {
			continue
		}
		msg := &outMsg{row: &rows[i]}
		m[r.MessageID] = msg
		o.queue(r.Destination).push(msg)
		o.parentOf[k] = parents[i]
		for _, p := range parents[i] {
			o.children[p]++
		}
	}
	for _, id := range ids {
		if o.children[id] == 0 {
			childless = append(childless, id)
		}
	}
	o.mu.Unlock()
	select {
	case o.notify <- struct{}{}:
	default:
	}
	return childless
}

// undelivered reports whether the swift parent (an input, or a swift source row) still has
// an output not delivered to some destination.
func (o *outbox) undelivered(parent string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.children[parent] > 0
}

func (o *outbox) queue(destination string) *destQueue {
	q := o.queues[destination]
	if q == nil {
		q = &destQueue{}
		o.queues[destination] = q
	}
	return q
}

// snapshot returns the pending rows of destination ordered by message id: the outbox's own
// rows, which nothing changes once added (read them, never write).
func (o *outbox) snapshot(destination string) []*ytstore.OutputRow {
	rows := make([]*ytstore.OutputRow, 0, o.sizeOf(destination))
	o.inOrder(destination, func(row *ytstore.OutputRow) bool {
		rows = append(rows, row)
		return true
	})
	return rows
}

func (o *outbox) sizeOf(destination string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.pending[destination])
}

// inOrder calls f for the pending rows of destination in message id order until f returns
// false, with the outbox locked: f must not call the outbox.
func (o *outbox) inOrder(destination string, f func(row *ytstore.OutputRow) bool) {
	o.walk(destination, false, func(m *outMsg) bool { return f(m.row) })
}

// inOrderIdle is inOrder over the entries whose rows no push in flight carries (setFlying);
// f gets the entry, which setFlying takes.
func (o *outbox) inOrderIdle(destination string, f func(m *outMsg) bool) {
	o.walk(destination, true, f)
}

func (o *outbox) walk(destination string, idleOnly bool, f func(m *outMsg) bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	q := o.queues[destination]
	if q == nil {
		return
	}
	q.compact()
	for _, m := range q.rows {
		if m.gone || (idleOnly && m.flying) {
			continue
		}
		if !f(m) {
			return
		}
	}
}

// setFlying marks the entries msgs (as inOrderIdle hands them out) as carried by a push in
// flight, or no longer. An entry acknowledged meanwhile is marked too, which changes nothing:
// it is gone.
func (o *outbox) setFlying(msgs []*outMsg, on bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, m := range msgs {
		m.flying = on
	}
}

// takeFlying marks msgs flying (setFlying) and takes their payload maps and keys over (mem[i]
// is msgs[i]'s, zero when it has none or an earlier push took it; mem is nil when no message
// has one): a map is handed over once, to one push, never again.
func (o *outbox) takeFlying(msgs []*outMsg) (mem []memMsg) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, m := range msgs {
		m.flying = true
		if m.mem.payload != nil {
			if mem == nil {
				mem = make([]memMsg, len(msgs))
			}
			mem[i], m.mem = m.mem, memMsg{}
		}
	}
	return mem
}

// destinations lists destinations with pending rows.
func (o *outbox) destinations() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var ds []string
	for d, m := range o.pending {
		if len(m) > 0 {
			ds = append(ds, d)
		}
	}
	sort.Strings(ds)
	return ds
}

// finish moves acknowledged rows of destination to done and returns the swift parents whose
// outputs are now all delivered.
//
// Invariant: a swift parent is acknowledged upstream only once every one of its outputs is
// delivered to every destination (TestSwiftParentAckedAfterChildren).
func (o *outbox) finish(partitionID, destination string, ids []string) (parentsDone []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	before := len(o.done)
	defer func() {
		if before == 0 && len(o.done) > 0 {
			o.doneSince = time.Now()
		}
		if len(o.done) > before {
			select {
			case o.doneReady <- struct{}{}:
			default:
			}
		}
	}()
	pending, queue := o.pending[destination], o.queues[destination]
	// Acknowledgements come in production order: most fall into the chunk of the one before.
	var lastChunk ytstore.OutputChunk
	var last *chunkState
	for _, id := range ids {
		if m, ok := pending[id]; ok {
			delete(pending, id)
			m.gone = true
			queue.gone++
			if len(o.parentOf) == 0 {
				// no swift outputs: skip the lookup below
			} else if parents, swift := o.parentOf[swiftOutput{destination, id}]; swift {
				delete(o.parentOf, swiftOutput{destination, id})
				for _, parent := range parents {
					if o.children[parent]--; o.children[parent] == 0 {
						delete(o.children, parent)
						parentsDone = append(parentsDone, parent)
					}
				}
				continue
			}
			if m.row.Chunk.ID == 0 {
				o.done = append(o.done, doneEntry{
					key:      ytstore.OutputKey{PartitionID: partitionID, Destination: destination, MessageID: id},
					systemTS: m.row.SystemTimestamp,
				})
				continue
			}
			// Invariant: a chunk is deleted only once every message in it is acknowledged
			// or delivered (TestOutboxDeletesChunkWhenAllAcked).
			c := last
			if c == nil || m.row.Chunk != lastChunk {
				c, lastChunk = o.chunks[m.row.StoreKey()], m.row.Chunk
				last = c
			}
			if c != nil {
				if c.left--; c.left == 0 {
					k := m.row.StoreKey()
					delete(o.chunks, k)
					o.done = append(o.done, doneEntry{key: k, systemTS: c.minTS})
					last = nil
				}
			}
		}
	}
	return parentsDone
}

// takeDone hands the finished keys to an epoch commit; they stay accounted for (deleting)
// until committed confirms or giveBack returns them.
func (o *outbox) takeDone() []ytstore.OutputKey {
	return o.takeDoneIf(func(int, time.Time) bool { return true })
}

// takeDoneIf is takeDone when take agrees, given how many keys are finished and when the
// oldest of them finished; otherwise it takes none and they wait for a later epoch.
func (o *outbox) takeDoneIf(take func(n int, since time.Time) bool) []ytstore.OutputKey {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.done) == 0 || !take(len(o.done), o.doneSince) {
		return nil
	}
	keys := make([]ytstore.OutputKey, len(o.done))
	for i, d := range o.done {
		keys[i] = d.key
	}
	if len(o.deleting) == 0 || o.doneSince.Before(o.deletingSince) {
		o.deletingSince = o.doneSince
	}
	o.deleting = append(o.deleting, o.done...)
	o.done, o.doneSince = nil, time.Time{}
	return keys
}

// committed confirms that the taken keys are deleted from the output store.
func (o *outbox) committed() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.deleting = nil
}

// giveBack returns the taken keys of a failed epoch to done.
func (o *outbox) giveBack() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.deleting) > 0 && (o.doneSince.IsZero() || o.deletingSince.Before(o.doneSince)) {
		o.doneSince = o.deletingSince
	}
	o.done = append(o.deleting, o.done...)
	o.deleting = nil
}

// minSystemTS is the smallest system timestamp of the rows still in the output store
// (pending, acknowledged but not deleted, being deleted); 0 when none.
func (o *outbox) minSystemTS() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	var least uint64
	consider := func(ts uint64) {
		if ts != 0 && (least == 0 || ts < least) {
			least = ts
		}
	}
	for _, m := range o.pending {
		for _, r := range m {
			consider(r.row.SystemTimestamp)
		}
	}
	for _, c := range o.chunks {
		consider(c.minTS)
	}
	for _, d := range o.done {
		consider(d.systemTS)
	}
	for _, d := range o.deleting {
		consider(d.systemTS)
	}
	return least
}

// minEventTS is the smallest event timestamp of the outputs not yet acknowledged by their
// readers or delivered by their sink (1 for an output without one); 0 when none.
func (o *outbox) minEventTS() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	var least uint64
	for _, m := range o.pending {
		for _, r := range m {
			ts := max(r.row.EventTimestamp, 1)
			if least == 0 || ts < least {
				least = ts
			}
		}
	}
	return least
}

// eventTimestamps returns the event timestamps of the pending rows (1 for a row without one).
func (o *outbox) eventTimestamps() []uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	var ts []uint64
	for _, m := range o.pending {
		for _, r := range m {
			ts = append(ts, max(r.row.EventTimestamp, 1))
		}
	}
	return ts
}

// held counts the rows still in the output store: pending, acknowledged but not yet deleted,
// and being deleted.
func (o *outbox) held() int {
	o.mu.Lock()
	n := len(o.done) + len(o.deleting)
	o.mu.Unlock()
	return n + o.size()
}

func (o *outbox) size() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, m := range o.pending {
		n += len(m)
	}
	return n
}

// push sends msgs to a reader job outside any push session and returns the acknowledged ids.
func push(ctx context.Context, client *http.Client, rt route, computation string, rows []ytstore.OutputRow) ([]string, error) {
	acked, _, err := pushInSession(ctx, client, rt, computation, rowPtrs(rows), pushTag{})
	return acked, err
}

// rowPtrs points at each of rows.
func rowPtrs(rows []ytstore.OutputRow) []*ytstore.OutputRow {
	ps := make([]*ytstore.OutputRow, len(rows))
	for i := range rows {
		ps[i] = &rows[i]
	}
	return ps
}

// peers are the workers of this process with Config.InProcessPeers, by their push address
// (unique in the process: each listens on its own port).
var peers sync.Map // address -> *Worker

// peer is the worker of this process that serves pushes at addr, when both it and w hand
// pushes over in memory (Config.InProcessPeers); nil otherwise.
func (w *Worker) peer(addr string) *Worker {
	if !w.cfg.InProcessPeers || addr == "" {
		return nil
	}
	if p, ok := peers.Load(addr); ok {
		return p.(*Worker)
	}
	return nil
}

// pushLocal hands rows to a reader job of w — the sender's own worker, or another worker of
// the process (peer) — as push tag.seq of session tag.session, like pushInSession but without
// encoding the push or crossing HTTP: the reader takes the payloads and keys handed over in
// mem (mem[i] is rows[i]'s; mem may be nil) as they are and decodes the others from the
// rows' bytes (which it only reads), and answers as the /push endpoint would, through the
// same acceptPush (TestInProcessPeersPushInMemory).
func (w *Worker) pushLocal(ctx context.Context, rt route, computation string, rows []*ytstore.OutputRow, mem []memMsg, tag pushTag) (acked []string, reset bool, err error) {
	buf := wireBuffers.Get().(*[]wireMessage)
	defer func() { clear(*buf); wireBuffers.Put(buf) }() // acceptPush keeps nothing of pr
	*buf = slices.Grow((*buf)[:0], len(rows))[:len(rows)]
	pr := pushRequest{JobID: rt.jobID, Computation: computation, Sender: tag.sender, Session: tag.session, Seq: tag.seq, Messages: *buf}
	for i, r := range rows {
		pr.Messages[i] = wireMessage{ID: r.MessageID, Stream: r.StreamID, Key: r.Key, KeyHash: r.KeyHash, Payload: r.Payload, EventTS: r.EventTimestamp, SystemTS: r.SystemTimestamp, Born: r.Birth()}
		if mem != nil {
			pr.Messages[i].mem = mem[i]
		}
	}
	resp, err := w.acceptPush(ctx, pr)
	if err != nil {
		return nil, true, fmt.Errorf("push to job %s in this process: %w", rt.jobID, err)
	}
	if resp.Refused != "" && len(resp.Acked) == 0 {
		return nil, true, refusal(fmt.Sprintf("push to job %s in this process", rt.jobID), resp.Refused)
	}
	return resp.Acked, resp.Reset, nil
}

// wireBuffers and inputBuffers hold the per-push message slices of pushLocal and acceptPush,
// which live only as long as the call, for the next push.
var (
	wireBuffers  = sync.Pool{New: func() any { return new([]wireMessage) }}
	inputBuffers = sync.Pool{New: func() any { return new([]epoch.Input) }}
)

// pushTag places a push in its sender's push session (pushorder.go).
type pushTag struct {
	sender       string
	session, seq uint64
}

// pushInSession sends msgs to a reader job as push tag.seq of session tag.session and returns
// the acknowledged ids and whether the session is broken (refused or partly accepted pushes).
func pushInSession(ctx context.Context, client *http.Client, rt route, computation string, rows []*ytstore.OutputRow, tag pushTag) (acked []string, reset bool, err error) {
	body := encodePush(rt.jobID, computation, tag, rows)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+rt.address+"/push", bytes.NewReader(body))
	if err != nil {
		return nil, true, fmt.Errorf("push to job %s at %s: %w", rt.jobID, rt.address, err)
	}
	hreq.Header.Set("Content-Type", pushContentType)
	hreq.Header.Set("Accept", ackContentType)
	resp, err := client.Do(hreq)
	if err != nil {
		return nil, true, fmt.Errorf("push to job %s at %s: %w", rt.jobID, rt.address, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, true, fmt.Errorf("push to job %s at %s: HTTP %d", rt.jobID, rt.address, resp.StatusCode)
	}
	var pr pushResponse
	if resp.Header.Get("Content-Type") == ackContentType {
		body, err := readBody(io.LimitReader(resp.Body, maxPushBytes), resp.ContentLength)
		if err == nil {
			pr, err = decodeAcks(body)
		}
		if err != nil {
			return nil, true, fmt.Errorf("push to job %s at %s: read response: %w", rt.jobID, rt.address, err)
		}
	} else if err := json.NewDecoder(resp.Body).Decode(&pr); err != nil { // readers of earlier versions
		return nil, true, fmt.Errorf("push to job %s at %s: decode response: %w", rt.jobID, rt.address, err)
	}
	if pr.Refused != "" && len(pr.Acked) == 0 {
		return nil, true, refusal(fmt.Sprintf("push to job %s at %s", rt.jobID, rt.address), pr.Refused)
	}
	return pr.Acked, pr.Reset, nil
}

// refusal is the error of a push the reader refused for reason.
func refusal(what, reason string) error {
	if reason == errOutOfOrder {
		return fmt.Errorf("%s: refused: %w", what, errPushOutOfSequence)
	}
	return fmt.Errorf("%s: refused: %s", what, reason)
}
