// The sending side of the inter-job transport: a push over HTTP (pushInSession) or in memory
// to a worker of this process (pushLocal, peers).

package job

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"

	"github.com/ytflow/yt-flow/ytstore"
)

// push sends msgs to a reader job outside any push session, signed with key, and returns the
// acknowledged ids.
func push(ctx context.Context, client *http.Client, key []byte, rt route, computation string, rows []ytstore.OutputRow) ([]string, error) {
	acked, _, err := pushInSession(ctx, client, key, rt, computation, rowPtrs(rows), pushTag{})
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
// same offerPush and awaitPush as acceptPush (TestInProcessPeersPushInMemory). It takes mem
// over: mem goes back to memBuffers once the reader took the messages.
func (w *Worker) pushLocal(ctx context.Context, rt route, computation string, rows []*ytstore.OutputRow, mem []memMsg, tag pushTag) (acked []string, reset bool, err error) {
	buf := slices.Grow(wireBuffers.get(), len(rows))[:len(rows)]
	pr := pushRequest{JobID: rt.jobID, Computation: computation, Sender: tag.sender, Session: tag.session, Seq: tag.seq, Messages: buf}
	for i, r := range rows {
		pr.Messages[i] = wireMessage{ID: r.MessageID, Stream: r.StreamID, Key: r.Key, KeyHash: r.KeyHash, Payload: r.Payload, EventTS: r.EventTimestamp, SystemTS: r.SystemTimestamp, Born: r.Birth()}
		if mem != nil {
			pr.Messages[i].mem = mem[i]
		}
	}
	// As acceptPush, but the messages' buffer goes back as soon as the inbox took them, not
	// after the reader's commit: the pushes waiting for commits hold none.
	o, resp, err := w.offerPush(ctx, pr)
	wireBuffers.put(buf) // offerPush keeps nothing of pr
	memBuffers.put(mem)
	if o != nil {
		resp, err = w.awaitPush(ctx, o)
	}
	if err != nil {
		return nil, true, fmt.Errorf("push to job %s in this process: %w", rt.jobID, err)
	}
	if resp.Refused != "" && len(resp.Acked) == 0 {
		return nil, true, refusal(fmt.Sprintf("push to job %s in this process", rt.jobID), resp.Refused)
	}
	return resp.Acked, resp.Reset, nil
}

// freeList keeps a few per-push buffers for the next push. Unlike a sync.Pool, which every
// garbage collection empties (a busy worker collects every few epochs), it keeps them until
// taken; it keeps no buffer of more than freeListMaxLen elements, and at most freeListSize.
// A buffer it hands out is zero over its whole capacity.
type freeList[T any] struct{ free chan []T }

const (
	freeListSize   = 8
	freeListMaxLen = 4 * maxPushRows
)

func newFreeList[T any]() freeList[T] { return freeList[T]{free: make(chan []T, freeListSize)} }

// get returns a kept buffer (of length 0), or nil.
func (f freeList[T]) get() []T {
	select {
	case b := <-f.free:
		return b
	default:
		return nil
	}
}

// put clears b (it keeps nothing alive) and keeps it unless the list is full or b too large.
func (f freeList[T]) put(b []T) {
	if cap(b) == 0 || cap(b) > freeListMaxLen {
		return
	}
	b = b[:cap(b)]
	clear(b)
	select {
	case f.free <- b[:0]:
	default:
	}
}

// pushTag places a push in its sender's push session (pushorder.go).
type pushTag struct {
	sender       string
	session, seq uint64
}

// pushInSession sends msgs to a reader job as push tag.seq of session tag.session and returns
// the acknowledged ids and whether the session is broken (refused or partly accepted pushes).
// The request carries the proof made with key, the pipeline's transport secret (auth.go).
func pushInSession(ctx context.Context, client *http.Client, key []byte, rt route, computation string, rows []*ytstore.OutputRow, tag pushTag) (acked []string, reset bool, err error) {
	body := encodePush(rt.jobID, computation, tag, rows)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+rt.address+"/push", bytes.NewReader(body))
	if err != nil {
		return nil, true, fmt.Errorf("push to job %s at %s: %w", rt.jobID, rt.address, err)
	}
	hreq.Header.Set("Content-Type", pushContentType)
	signRequest(hreq, key, body)
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
