// A job's outbox: the output store rows and swift outputs it produced, held per destination
// until their readers or sinks acknowledged them.

package job

import (
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/ytflow/yt-flow/ytstore"
)

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
	// buf is the array rows lies in, from its start: rows dropped at the head (compact) leave
	// room before rows that push reuses instead of growing a new array.
	buf []*outMsg
}

func (q *destQueue) push(m *outMsg) {
	n := len(q.rows)
	if n > 0 && q.rows[n-1].row.MessageID > m.row.MessageID {
		q.unsorted = true
	}
	if n == cap(q.rows) && cap(q.buf)-n >= n/2+1 {
		// Full, but at least a third of the array lies before rows: move rows to its start.
		moved := q.buf[:n]
		copy(moved, q.rows)
		clear(q.buf[n:cap(q.buf)]) // the old places of the moved rows
		q.rows = moved
	}
	full := len(q.rows) == cap(q.rows)
	q.rows = append(q.rows, m)
	if full {
		q.buf = q.rows[:0] // append made a new array
	}
}

// find returns the entry of the pending row id (nil when none) by walking the rows: for the
// rare row added twice.
func (q *destQueue) find(id string) *outMsg {
	for _, m := range q.rows {
		if !m.gone && m.row.MessageID == id {
			return m
		}
	}
	return nil
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
		msg := &slab[i]
		msg.row = &rows[i]
		msg.mem = memMsg{r.Mem, r.MemKey}
		// One map operation for a new row, the usual case: a row already pending (added
		// twice) is found by the map not growing, and its entry put back.
		n := len(m)
		m[r.MessageID] = msg
		if len(m) == n {
			m[r.MessageID] = o.queue(r.Destination).find(r.MessageID)
			*msg = outMsg{}
			continue
		}
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

// entries returns the pending entries of destination ordered by message id, as inOrder
// walks them: an async sink's delivery finishes them with finishPushed, which finds each
// delivered id among them instead of looking it up.
func (o *outbox) entries(destination string) []*outMsg {
	msgs := make([]*outMsg, 0, o.sizeOf(destination))
	o.walk(destination, false, func(m *outMsg) bool {
		msgs = append(msgs, m)
		return true
	})
	return msgs
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
// has one): a map is handed over once, to one push, never again. mem comes from memBuffers:
// the caller gives it back once the push no longer needs it.
func (o *outbox) takeFlying(msgs []*outMsg) (mem []memMsg) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, m := range msgs {
		m.flying = true
		if m.mem.payload != nil {
			if mem == nil {
				mem = slices.Grow(memBuffers.get(), len(msgs))[:len(msgs)]
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
	return o.finishPushed(partitionID, destination, nil, ids)
}

// finishPushed is finish of the ids a push acknowledged, msgs the entries it carried (as
// inOrderIdle handed them out): the ids of a push's rows are acknowledged in the order it
// carried them, so each is found by walking msgs instead of looking it up in pending. An id
// whose entry is not found there, or is gone meanwhile (and may be pending again as another
// entry), is looked up as finish does.
//
// Invariant: finishPushed leaves the outbox as finish of the same ids does
// (TestOutboxFinishPushedMatchesFinish).
func (o *outbox) finishPushed(partitionID, destination string, msgs []*outMsg, ids []string) (parentsDone []string) {
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
	j := 0 // where the next id is looked for in msgs
	for _, id := range ids {
		k := j
		for k < len(msgs) && msgs[k].row.MessageID != id {
			k++
		}
		var m *outMsg
		switch {
		case k == len(msgs):
			// Not among the rows after the last one found (or no msgs): looked up, and so
			// are the ids after it.
			msgs, j = nil, 0
			m = pending[id]
		case msgs[k].gone:
			// Finished meanwhile: the id may be pending again, as another entry.
			j = k + 1
			m = pending[id]
		default:
			// Not gone: it is pending[id]. add and addSwift never replace a pending entry
			// (nor meet each other's ids: stored and swift ids have different forms).
			j = k + 1
			m = msgs[k]
		}
		if m != nil {
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
	o.eachPending(func(m *outMsg) { consider(m.row.SystemTimestamp) })
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
	o.eachPending(func(m *outMsg) {
		if ts := max(m.row.EventTimestamp, 1); least == 0 || ts < least {
			least = ts
		}
	})
	return least
}

// eventTimestamps returns the event timestamps of the pending rows (1 for a row without one).
func (o *outbox) eventTimestamps() []uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	var ts []uint64
	o.eachPending(func(m *outMsg) { ts = append(ts, max(m.row.EventTimestamp, 1)) })
	return ts
}

// eachPending calls f for every pending row, in no particular order; the lock must be held.
// It walks the destinations' queues, which hold the rows of pending (and rows gone, skipped):
// a slice is quicker to walk than a map.
func (o *outbox) eachPending(f func(m *outMsg)) {
	for _, q := range o.queues {
		for _, m := range q.rows {
			if !m.gone {
				f(m)
			}
		}
	}
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
