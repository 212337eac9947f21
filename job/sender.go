// The sender of a job: it pushes output store rows to reader jobs and delivers them to async
// sinks until acknowledged.

package job

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"go.ytsaurus.tech/library/go/core/log"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/internal/ybin"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/ytstore"
)

const (
	// pushWindow is how many pushes a sender keeps in flight per reader job: the reader's
	// next epoch can take new rows while the previous push still waits for its commit.
	pushWindow = 4
	// maxPushRows bounds the rows of one push.
	maxPushRows = 1000
	// senderTick is how often a sender retries without being woken.
	senderTick = 100 * time.Millisecond
)

// sender delivers a runner's output store rows: pushes to reader jobs, deliveries to async
// sinks. It runs rounds on a tick, when the outbox grows and when a push or delivery ends.
//
// A round pushes every pending row that is not in flight yet, up to pushWindow pushes of at
// most maxPushRows rows per reader job; it does not wait for them. A row in flight is not
// sent again until its push answers or fails; the rows a push did not acknowledge are sent
// again by a later round (retransmission). An async sink has at most one delivery in flight
// (its producer session is not shared), carrying every pending row of the sink.
type sender struct {
	r      *runner
	client *http.Client
	// wake is signalled when a push or delivery ends.
	wake chan struct{}
	wg   sync.WaitGroup

	mu sync.Mutex
	// inFlight holds, per destination, the pushes in flight: the reader job each went to and
	// the rows it carries (the outbox's own). One entry per push, not per row: the rows are
	// only looked at when the reader jobs change (round).
	inFlight map[string]map[*flight]struct{}
	// flightJobs is, per destination, the reader jobs (ids and key ranges) every push in
	// flight was routed with, when all were routed with the same ones (absent otherwise).
	flightJobs map[string][]route
	// pushes counts the pushes in flight per reader job.
	pushes map[string]int
	// streams is the push session towards each reader job (pushorder.go).
	streams map[string]*senderStream
	// delivering marks async sinks with a delivery in flight.
	delivering map[string]bool
	// retryAt and backoff delay the next attempt after a failure, per reader job (100ms
	// doubling up to 1s) and per async sink (up to 5s).
	retryAt map[string]time.Time
	backoff map[string]time.Duration
}

func newSender(r *runner) *sender {
	return &sender{
		r: r, client: &http.Client{Timeout: r.w.cfg.PushTimeout + 5*time.Second}, wake: make(chan struct{}, 1),
		inFlight: map[string]map[*flight]struct{}{}, flightJobs: map[string][]route{}, pushes: map[string]int{}, streams: map[string]*senderStream{}, delivering: map[string]bool{},
		retryAt: map[string]time.Time{}, backoff: map[string]time.Duration{},
	}
}

// send delivers output store rows until ctx ends. Acknowledged rows are deleted from the
// output store by the next epoch commit.
func (r *runner) send(ctx context.Context) {
	s := newSender(r)
	defer s.wg.Wait()
	tick := time.NewTicker(senderTick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-r.outbox.notify:
		case <-s.wake:
		}
		s.round(ctx)
	}
}

// failed records a failed attempt at what (a job or sink id), which is retried after limit
// at most; the lock must be held.
func (s *sender) failed(what string, limit time.Duration) {
	s.backoff[what] = min(max(2*s.backoff[what], 100*time.Millisecond), limit)
	s.retryAt[what] = time.Now().Add(s.backoff[what])
}

// succeeded clears the backoff of what; the lock must be held.
func (s *sender) succeeded(what string) {
	delete(s.backoff, what)
	delete(s.retryAt, what)
}

func (s *sender) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// flight is a push in flight: the reader job it went to and the outbox entries it carries;
// cancel ends the push.
type flight struct {
	jobID  string
	msgs   []*outMsg
	cancel context.CancelFunc
}

// round starts the pushes and deliveries the window allows.
func (s *sender) round(ctx context.Context) {
	r := s.r
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for _, dest := range r.outbox.destinations() {
		// The outbox is read under s.mu: a push that ends meanwhile removes its rows from the
		// outbox before it clears them from inFlight, so an acknowledged row is never seen
		// here as pending and not in flight.
		if sink, ok := r.asyncSinks[dest]; ok {
			if s.delivering[dest] || now.Before(s.retryAt[sinkDestPrefix+dest]) {
				continue
			}
			msgs := r.outbox.entries(dest)
			s.delivering[dest] = true
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				err := r.deliver(ctx, sink, dest, msgs)
				s.mu.Lock()
				delete(s.delivering, dest)
				if err != nil {
					s.failed(sinkDestPrefix+dest, 5*time.Second)
				} else {
					s.succeeded(sinkDestPrefix + dest)
				}
				s.mu.Unlock()
				s.signal()
			}()
			continue
		}
		flying := s.inFlight[dest]
		if flying == nil {
			flying = map[*flight]struct{}{}
			s.inFlight[dest] = flying
		}
		// A push to a reader job the layout no longer has is ended at once: that job's lease
		// is aborted, it commits nothing more, and its replacement gets no push of its keys
		// while the push is in flight (below). Ending it is a failed push like a timeout: its
		// rows go to the replacement, whose dedup lookup covers anything the old job committed.
		// Without this, a push to a frozen worker would hold the replacement back until the
		// push's client timeout (PushTimeout + 5s) (TestSenderEndsPushesToRemovedJobs).
		for f := range flying {
			if r.w.layout.removed(f.jobID) {
				f.cancel()
			}
		}
		// Only the reader jobs with room in their window are served.
		jobs := r.w.layout.jobsOf(dest)
		room, want := make([]int, len(jobs)), 0
		for i, rt := range jobs {
			if s.pushes[rt.jobID] < pushWindow && !now.Before(s.retryAt[rt.jobID]) && s.sessionOpen(rt.jobID) {
				room[i] = (pushWindow - s.pushes[rt.jobID]) * maxPushRows
			}
		}
		owner := func(keyHash uint64) int { // the first job owning the key, as layout.find
			for i, rt := range jobs {
				if epoch.InRange(keyHash, rt.lower, rt.upper) {
					return i
				}
			}
			return -1
		}
		// Invariant: a reader job gets no push while a push of rows of its keys to another
		// job (the keys' previous owner) is in flight: those rows must reach the new owner
		// before anything produced after them (TestSenderWaitsForPushesToPreviousOwner).
		// Every flight went to the owner of its key among the jobs it was routed with; while
		// those are the jobs of now, there is nothing to check.
		if fj, ok := s.flightJobs[dest]; !ok || !sameOwners(fj, jobs) {
			for f := range flying {
				for _, m := range f.msgs {
					if i := owner(m.row.KeyHash); i >= 0 && jobs[i].jobID != f.jobID {
						room[i] = 0
					}
				}
			}
		}
		for _, n := range room {
			want += n
		}
		if want == 0 {
			continue
		}
		// The oldest rows first, in id (production) order; the scan ends once every open job
		// has a full window.
		// The rows are the outbox's own (never changed once added), not copies.
		byJob := make([][]*outMsg, len(jobs))
		r.outbox.inOrderIdle(dest, func(m *outMsg) bool {
			if i := owner(m.row.KeyHash); i >= 0 && len(byJob[i]) < room[i] {
				byJob[i] = append(byJob[i], m)
				want--
			}
			return want > 0
		})
		if len(flying) == 0 {
			s.flightJobs[dest] = jobs
		} else if fj, ok := s.flightJobs[dest]; ok && !sameOwners(fj, jobs) {
			delete(s.flightJobs, dest)
		}
		for i, batch := range byJob {
			for len(batch) > 0 {
				n := min(len(batch), maxPushRows)
				s.startPush(ctx, jobs[i], dest, batch[:n:n])
				batch = batch[n:]
			}
		}
	}
}

// sameOwners reports whether a and b are the same reader jobs with the same key ranges in
// the same order, so that every key has the same owner in both.
func sameOwners(a, b []route) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].jobID != b[i].jobID || a[i].lower != b[i].lower || a[i].upper != b[i].upper {
			return false
		}
	}
	return true
}

// sessionOpen reports whether new pushes to reader job jobID may start: its push session is
// not broken, or it was and none of its pushes is in flight any more, so a new session (which
// resends every unacknowledged row in production order) begins now. The lock must be held.
func (s *sender) sessionOpen(jobID string) bool {
	st := s.streams[jobID]
	switch {
	case st == nil:
		s.streams[jobID] = &senderStream{session: 1}
	case st.broken && s.pushes[jobID] > 0:
		return false
	case st.broken:
		*st = senderStream{session: st.session + 1}
	}
	return true
}

// startPush pushes batch to the reader job of rt in the background; the lock must be held.
func (s *sender) startPush(ctx context.Context, rt route, dest string, msgs []*outMsg) {
	r := s.r
	batch := make([]*ytstore.OutputRow, len(msgs))
	for i, m := range msgs {
		batch[i] = m.row
	}
	pctx, cancel := context.WithCancel(ctx)
	f := &flight{jobID: rt.jobID, msgs: msgs, cancel: cancel}
	s.inFlight[dest][f] = struct{}{}
	// The payload maps go only to a reader in this process; over HTTP the bytes go.
	mem := r.outbox.takeFlying(msgs)
	s.pushes[rt.jobID]++
	st := s.streams[rt.jobID]
	st.seq++
	tag := pushTag{sender: r.job.JobID, session: st.session, seq: st.seq}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		var acked []string
		var reset bool
		var err error
		start := time.Now()
		if rt.workerID == r.w.id {
			r.stats.pushesLocal.Add(1)
			acked, reset, err = r.w.pushLocal(pctx, rt, dest, batch, mem, tag)
		} else if peer := r.w.peer(rt.address); peer != nil {
			r.stats.pushesInProcess.Add(1)
			acked, reset, err = peer.pushLocal(pctx, rt, dest, batch, mem, tag)
		} else {
			r.stats.pushesHTTP.Add(1)
			memBuffers.put(mem) // over HTTP the bytes go
			acked, reset, err = pushInSession(pctx, s.client, r.w.signingKey(), rt, dest, batch, tag)
		}
		r.stats.pushNs.Add(int64(time.Since(start)))
		if err != nil {
			if ctx.Err() == nil {
				r.log.Debug("push failed; will retransmit", log.String("to_job", rt.jobID), log.Error(err))
			}
		} else {
			r.inbox.ack(r.outbox.finishPushed(r.job.PartitionID, dest, msgs, acked))
		}
		s.mu.Lock()
		delete(s.inFlight[dest], f)
		// Under s.mu, so that a round never sees a row neither flying nor in inFlight.
		r.outbox.setFlying(msgs, false)
		if s.pushes[rt.jobID]--; s.pushes[rt.jobID] == 0 {
			delete(s.pushes, rt.jobID)
		}
		// A push that fails breaks its session; only the first failure of a session backs
		// the reader off (its other pushes in flight fail with it), and a refusal for being out
		// of sequence (the session broke earlier) does not.
		wasBroken := true
		if st := s.streams[rt.jobID]; (err != nil || reset) && st != nil && st.session == tag.session {
			wasBroken = st.broken
			st.broken = true
		}
		switch {
		case err == nil:
			s.succeeded(rt.jobID)
		case !wasBroken && !errors.Is(err, errPushOutOfSequence):
			s.failed(rt.jobID, time.Second)
		}
		s.mu.Unlock()
		s.signal()
	}()
}

// deliver delivers the pending entries msgs of async sink dest (outbox.entries) and finishes
// those delivered.
func (r *runner) deliver(ctx context.Context, sink connector.AsyncSink, dest string, msgs []*outMsg) error {
	rows := make([]*ytstore.OutputRow, len(msgs))
	for i, m := range msgs {
		rows[i] = m.row
	}
	batches, ids := batchesOf(rows, func(row *ytstore.OutputRow, err error) {
		r.log.Error("output store row with a bad payload", log.String("message_id", row.MessageID), log.Error(err))
	})
	start := time.Now()
	n, err := sink.Deliver(ctx, batches)
	r.stats.deliverNs.Add(int64(time.Since(start)))
	r.stats.deliveries.Add(1)
	n = min(max(n, 0), len(ids))
	counters := r.stats.sink(dest)
	counters.delivered.Add(int64(n))
	if err != nil {
		counters.failures.Add(1)
	}
	// The delivered ids are msgs' in order (rows with a bad payload left out): finishPushed
	// finds each by walking msgs, not by a lookup per id.
	if n == len(ids) && len(ids) == 1 {
		r.outbox.finishPushed(r.job.PartitionID, dest, msgs, ids[0])
	} else if n > 0 {
		total := 0
		for _, b := range ids[:n] {
			total += len(b)
		}
		done := make([]string, 0, total)
		for _, b := range ids[:n] {
			done = append(done, b...)
		}
		r.outbox.finishPushed(r.job.PartitionID, dest, msgs, done)
	}
	if err != nil {
		switch {
		case ctx.Err() != nil:
		case errors.Is(err, connector.ErrSinkBroken):
			r.noteBroken(dest, err)
		default:
			r.log.Warn("async sink delivery failed; the batches not delivered will be offered again", log.String("sink", dest), log.Int("delivered", n), log.Int("batches", len(batches)), log.Error(err))
			r.noteProblem("deliver to "+dest, err)
		}
		return err
	}
	return nil
}

// batchesOf cuts an async sink's pending rows (in message id order) into batches: one per
// output store chunk, split where sequence numbers are not consecutive. ids holds each
// batch's message ids. A row whose payload does not decode is reported to bad and left out
// (it stays in the output store).
//
// Invariant: an async sink's batches are the output store chunks, fixed at the commit, so a
// replay after a restart cuts the same batches (TestBatchesOf).
func batchesOf(rows []*ytstore.OutputRow, bad func(*ytstore.OutputRow, error)) (batches []connector.Batch, ids [][]string) {
	// The batches' rows and ids are cut from one slice each, of room for every row: a
	// batch's part ends at its last row's (capacity included), so nothing is appended to a
	// batch in place of the next one's rows.
	all, allIDs := make([]connector.Delivery, 0, len(rows)), make([]string, 0, len(rows))
	first := 0 // where the last batch starts in all and allIDs
	var chunk ytstore.OutputChunk
	for _, row := range rows {
		d := connector.Delivery{MessageID: row.MessageID, SequenceNumber: row.SequenceNumber, SystemTimestamp: row.SystemTimestamp}
		if ybin.IsMap(row.Payload) {
			// The stored payload is the row, a binary YSON map: sent as it is.
			d.Encoded = row.Payload
		} else {
			payload, err := decodePayload(row.Payload, nil)
			if err != nil {
				bad(row, err)
				continue
			}
			d.Row = payload
		}
		if len(batches) == 0 || row.Chunk != chunk || row.SequenceNumber != batches[len(batches)-1].LastSeq+1 {
			batches = append(batches, connector.Batch{FirstSeq: row.SequenceNumber, FirstID: row.MessageID})
			ids = append(ids, nil)
			chunk = row.Chunk
			first = len(all)
		}
		all, allIDs = append(all, d), append(allIDs, row.MessageID)
		b := &batches[len(batches)-1]
		b.Rows = all[first:len(all):len(all)]
		b.LastSeq, b.LastID = row.SequenceNumber, row.MessageID
		ids[len(ids)-1] = allIDs[first:len(allIDs):len(allIDs)]
	}
	return batches, ids
}
