package controller

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"go.ytsaurus.tech/library/go/core/log"

	"github.com/ytflow/yt-flow/internal/jobauth"
	"github.com/ytflow/yt-flow/ytstore"
)

// notifyTimeout bounds one layout notification; a worker that does not answer in time
// finds the change at its next poll.
const notifyTimeout = time.Second

// secretMaxAge is how long the notifier signs with the transport secret it read before it
// reads it again (a restart rotates it); a notification a worker refuses makes it read the
// secret at the next one.
const secretMaxAge = 5 * time.Second

// secrets reads the pipeline's transport secret (ytstore.Store.TransportSecret).
type secrets interface {
	TransportSecret(ctx context.Context) (jobauth.Keys, error)
}

// notifier tells workers that the layout changed, so that they read it at once instead of
// at their next poll (job.Config.PollPeriod, 200ms by default): new jobs start, removed
// jobs stop and draining flags reach the jobs within a round trip. It is best effort —
// the notification carries no data, the worker only reads the layout from YTsaurus as it
// does at every poll — and a failed one is only logged at debug level. Each carries the
// proof of the pipeline's transport secret (package internal/jobauth), as every request to
// a worker must.
type notifier struct {
	client  *http.Client
	lg      log.Structured
	secrets secrets

	mu       sync.Mutex
	inFlight map[string]bool // worker address -> a notification is in flight
	key      []byte          // the transport secret, read at keyRead (nil: read it)
	keyRead  time.Time
	wg       sync.WaitGroup
}

func newNotifier(lg log.Structured, s secrets) *notifier {
	return &notifier{client: &http.Client{Timeout: notifyTimeout}, lg: lg, secrets: s, inFlight: map[string]bool{}}
}

// signingKey returns the transport secret, reading it when the one read last is older than
// secretMaxAge or was refused.
func (n *notifier) signingKey(ctx context.Context) ([]byte, error) {
	n.mu.Lock()
	key, fresh := n.key, time.Since(n.keyRead) < secretMaxAge
	n.mu.Unlock()
	if key != nil && fresh {
		return key, nil
	}
	keys, err := n.secrets.TransportSecret(ctx)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.key, n.keyRead = keys.Current, time.Now()
	n.mu.Unlock()
	return keys.Current, nil
}

// notify posts to /layout of every worker except those in skip (dead ones) in the
// background. A worker with a notification still in flight is not sent another: it will
// poll after the first one anyway.
func (n *notifier) notify(ctx context.Context, workers []ytstore.Worker, skip []string) {
	dead := make(map[string]bool, len(skip))
	for _, id := range skip {
		dead[id] = true
	}
	for _, w := range workers {
		if w.Address == "" || dead[w.WorkerID] {
			continue
		}
		n.mu.Lock()
		busy := n.inFlight[w.Address]
		n.inFlight[w.Address] = true
		n.mu.Unlock()
		if busy {
			continue
		}
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			defer func() {
				n.mu.Lock()
				delete(n.inFlight, w.Address)
				n.mu.Unlock()
			}()
			if err := n.post(ctx, w.Address); err != nil && ctx.Err() == nil {
				n.lg.Debug("layout notification failed; the worker finds the change at its next poll",
					log.String("worker", w.WorkerID), log.Error(err))
			}
		}()
	}
}

func (n *notifier) post(ctx context.Context, addr string) error {
	key, err := n.signingKey(ctx)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/layout", http.NoBody)
	if err != nil {
		return err
	}
	req.Header.Set(jobauth.Header, jobauth.Sign(key, req.Method, req.URL.RequestURI(), nil, time.Now()))
	rsp, err := n.client.Do(req)
	if err != nil {
		return err
	}
	_ = rsp.Body.Close()
	if rsp.StatusCode == http.StatusUnauthorized {
		n.mu.Lock()
		n.key = nil // rotated since it was read, perhaps
		n.mu.Unlock()
	}
	if rsp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s/layout: HTTP %d", addr, rsp.StatusCode)
	}
	return nil
}

// wait waits for the notifications in flight.
func (n *notifier) wait() { n.wg.Wait() }
