package controller

import (
	"context"
	"net/http"
	"sync"
	"time"

	"go.ytsaurus.tech/library/go/core/log"

	"github.com/ytflow/yt-flow/ytstore"
)

// notifyTimeout bounds one layout notification; a worker that does not answer in time
// finds the change at its next poll.
const notifyTimeout = time.Second

// notifier tells workers that the layout changed, so that they read it at once instead of
// at their next poll (job.Config.PollPeriod, 200ms by default): new jobs start, removed
// jobs stop and draining flags reach the jobs within a round trip. It is best effort —
// the notification carries no data, the worker only reads the layout from YTsaurus as it
// does at every poll — and a failed one is only logged at debug level.
type notifier struct {
	client *http.Client
	lg     log.Structured

	mu       sync.Mutex
	inFlight map[string]bool // worker address -> a notification is in flight
	wg       sync.WaitGroup
}

func newNotifier(lg log.Structured) *notifier {
	return &notifier{client: &http.Client{Timeout: notifyTimeout}, lg: lg, inFlight: map[string]bool{}}
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
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/layout", http.NoBody)
	if err != nil {
		return err
	}
	rsp, err := n.client.Do(req)
	if err != nil {
		return err
	}
	return rsp.Body.Close()
}

// wait waits for the notifications in flight.
func (n *notifier) wait() { n.wg.Wait() }
