// The receiving side of the inter-job transport: the push messages, the worker's HTTP
// endpoints (/push, /layout, /stats, /stats/transport; authenticated, auth.go) and acceptPush, which offers a push to the reader job's
// inbox and answers with what its epochs persisted.

package job

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"slices"
	"strconv"
	"time"

	farm "github.com/dgryski/go-farm"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/internal/ybin"
	"github.com/ytflow/yt-flow/job/epoch"
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
	in.Bytes = len(m.Key) + len(m.Payload)
	return in, nil
}

// serveHTTP is the worker's transport endpoint. Every request but the goroutine dump must
// carry the pipeline's transport proof (authenticate): others are refused with 401 and
// counted (TestUnauthenticatedPushRefused).
func (w *Worker) serveHTTP(rw http.ResponseWriter, req *http.Request) {
	if req.URL.Path == "/debug/pprof/goroutine" {
		// Goroutine dumps (yt-flow get-worker-backtraces), to loopback clients only: the
		// endpoint may listen on other interfaces, and a dump is no business of other hosts.
		if !fromLoopback(req) {
			http.Error(rw, "backtraces: loopback clients only", http.StatusForbidden)
			return
		}
		pprof.Handler("goroutine").ServeHTTP(rw, req)
		return
	}
	switch req.URL.Path {
	case "/push", "/layout", "/stats", "/stats/transport":
	default:
		http.NotFound(rw, req)
		return
	}
	body, ok := w.authenticate(rw, req)
	if !ok {
		return
	}
	switch req.URL.Path {
	case "/push":
		w.handlePush(rw, req, body)
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
	case "/stats/transport":
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(w.TransportStats())
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

// handlePush serves a push whose body (authenticated already) is body.
func (w *Worker) handlePush(rw http.ResponseWriter, req *http.Request, body []byte) {
	if req.Method != http.MethodPost {
		http.Error(rw, "push: POST only", http.StatusMethodNotAllowed)
		return
	}
	var pr pushRequest
	var err error
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
	o, resp, err := w.offerPush(ctx, pr)
	if o == nil {
		return resp, err
	}
	return w.awaitPush(ctx, o)
}

// offeredPush is a push whose messages its reader job's inbox took (offerPush), waiting
// until they are persisted (awaitPush).
type offeredPush struct {
	r        *runner
	waiter   *pushWaiter
	accepted []*pending
	reset    bool
}

// offerPush is the first half of acceptPush: it offers the messages of pr to its reader job
// and returns the push to wait for, or (nil) the answer or error when there is nothing to wait
// for. Nothing it returns refers to pr: a caller may reuse pr's memory at once.
func (w *Worker) offerPush(ctx context.Context, pr pushRequest) (*offeredPush, pushResponse, error) {
	reply := func(resp pushResponse) (*offeredPush, pushResponse, error) {
		w.holdAck(ctx, len(resp.Acked)) // testing aid, off by default (failpoint.go)
		return nil, resp, nil
	}
	r := w.runner(pr.JobID)
	if r == nil || r.job.ComputationID != pr.Computation {
		return reply(pushResponse{Refused: "no job " + pr.JobID + " of computation " + pr.Computation + " here"})
	}
	if r.retiring.Load() {
		return reply(pushResponse{Refused: "job " + pr.JobID + " is retiring"})
	}
	// ins lives as long as the call: offer copies what it buffers.
	ins := slices.Grow(inputBuffers.get(), len(pr.Messages))
	defer func() { inputBuffers.put(ins) }()
	var dec ybin.Decoder // payloads of one stream repeat their field names
	var taken int64
	for _, m := range pr.Messages {
		if !epoch.InRange(m.KeyHash, r.job.LowerKey, r.job.UpperKey) {
			continue // not ours (layout moved on): never acknowledged here
		}
		in, err := fromWire(m, &dec)
		if err != nil {
			return nil, pushResponse{}, fmt.Errorf("%w: %w", errBadPush, err)
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
	r.noteInputs(pr.Messages, len(accepted))
	return &offeredPush{r: r, waiter: waiter, accepted: accepted, reset: !complete && pr.Session != 0}, pushResponse{}, nil
}

// awaitPush is the second half of acceptPush: it waits for the offered push o and answers.
func (w *Worker) awaitPush(ctx context.Context, o *offeredPush) (pushResponse, error) {
	r := o.r
	// answerNow replies with what is persisted now; the sender retransmits the rest.
	answerNow := func() (pushResponse, error) {
		resp := pushResponse{Acked: r.inbox.persistedIDs(o.accepted), Reset: o.reset}
		w.holdAck(ctx, len(resp.Acked)) // testing aid, off by default (failpoint.go)
		return resp, nil
	}
	deadline := time.NewTimer(w.cfg.PushTimeout)
	defer deadline.Stop()
	select {
	case <-o.waiter.done:
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

// wireBuffers, inputBuffers and memBuffers hold the per-push slices of pushLocal, offerPush
// and the sender (outbox.takeFlying), which live only until the reader took the messages, for
// the next push.
var (
	wireBuffers  = newFreeList[wireMessage]()
	inputBuffers = newFreeList[epoch.Input]()
	memBuffers   = newFreeList[memMsg]()
)

// fromLoopback tells whether req comes from a loopback address.
func fromLoopback(req *http.Request) bool {
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
