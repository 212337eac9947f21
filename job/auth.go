// Authentication of the worker's transport endpoint: every request but the loopback-only
// goroutine dump carries a proof (package internal/jobauth) made with the pipeline's
// transport secret (ytstore.TransportSecretNode), which the worker reads when it registers
// and again at every status period. Requests without a valid proof are refused and counted
// (TransportStats.Unauthenticated).

package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"go.ytsaurus.tech/library/go/core/log"

	"github.com/ytflow/yt-flow/internal/jobauth"
)

// transportAuth is the worker's transport secret and its refusal counter.
type transportAuth struct {
	keys atomic.Pointer[jobauth.Keys]
	// unauthenticated counts refused requests.
	unauthenticated atomic.Int64
	// stale is set when a request's proof matched neither key: the secret may have been
	// rotated, and the worker reads it again at its next poll instead of at the next status
	// period.
	stale atomic.Bool
}

// TransportStats are the worker's transport counters, served on /stats/transport.
type TransportStats struct {
	// Unauthenticated counts requests refused for a missing, invalid or expired proof.
	Unauthenticated int64 `json:"unauthenticated"`
}

// TransportStats returns the worker's transport counters.
func (w *Worker) TransportStats() TransportStats {
	return TransportStats{Unauthenticated: w.auth.unauthenticated.Load()}
}

// signingKey is the key the worker signs its pushes with (nil before it read the secret:
// such pushes are refused and retransmitted later).
func (w *Worker) signingKey() []byte {
	if k := w.auth.keys.Load(); k != nil {
		return k.Current
	}
	return nil
}

// readSecret reads the pipeline's transport secret. The error is the store's
// (ytstore.ErrNotFound when the pipeline has none yet).
func (w *Worker) readSecret(ctx context.Context) error {
	keys, err := w.store.TransportSecret(ctx)
	if err != nil {
		return fmt.Errorf("job: worker %s: %w", w.id, err)
	}
	w.auth.keys.Store(&keys)
	w.auth.stale.Store(false)
	return nil
}

// authenticate checks the proof of req and returns its body (read up to maxPushBytes). When
// the proof is missing or wrong it answers 401 itself (503 while the worker has no secret
// yet) and returns false.
//
// Invariant: a request captured and sent again while its proof is fresh changes nothing a
// retransmission would not: a push's messages are deduplicated by id
// (TestReplayedPushIsHarmless).
func (w *Worker) authenticate(rw http.ResponseWriter, req *http.Request) ([]byte, bool) {
	proof := req.Header.Get(jobauth.Header)
	var body []byte
	err := jobauth.ErrMissing
	if proof != "" {
		// A request without a proof is refused before its body is read.
		var rerr error
		body, rerr = readBody(http.MaxBytesReader(rw, req.Body, maxPushBytes), req.ContentLength)
		if rerr != nil {
			http.Error(rw, "read request body: "+rerr.Error(), http.StatusBadRequest)
			return nil, false
		}
		var keys jobauth.Keys
		if k := w.auth.keys.Load(); k != nil {
			keys = *k
		}
		err = jobauth.Verify(keys, proof, req.Method, req.URL.RequestURI(), body, time.Now())
	}
	if err == nil {
		return body, true
	}
	if errors.Is(err, jobauth.ErrNoKey) {
		http.Error(rw, "transport secret not read yet", http.StatusServiceUnavailable)
		return nil, false
	}
	if errors.Is(err, jobauth.ErrInvalid) {
		w.auth.stale.Store(true)
	}
	n := w.auth.unauthenticated.Add(1)
	if bits.OnesCount64(uint64(n)) == 1 { // the 1st, 2nd, 4th, 8th ... refusal: a flood does not flood the log
		w.log.Warn("refused an unauthenticated transport request",
			log.String("remote", req.RemoteAddr), log.String("path", req.URL.Path), log.Int64("refused_total", n), log.Error(err))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(req.Body, 64<<10))
	http.Error(rw, "yt-flow transport: "+err.Error(), http.StatusUnauthorized)
	return nil, false
}

// signRequest adds the proof of a request with body to req, made with key (nothing when key
// is empty: the receiver refuses the request).
func signRequest(req *http.Request, key, body []byte) {
	if len(key) > 0 {
		req.Header.Set(jobauth.Header, jobauth.Sign(key, req.Method, req.URL.RequestURI(), body, time.Now()))
	}
}

// SignRequest adds the proof that req, whose body is body, comes from a job of the pipeline
// whose transport secret is key (ytstore.Store.TransportSecret's Current): for tools and
// tests that call a worker's endpoints.
func SignRequest(req *http.Request, key, body []byte) { signRequest(req, key, body) }

// listenNote describes to whom a transport endpoint listening on addr is reachable, for the
// log line at start.
func listenNote(addr string) string {
	if isLoopback(addr) {
		return "loopback only"
	}
	return "reachable from other hosts; every request must carry the pipeline's transport proof"
}

// isLoopback tells whether the listen address addr (host:port, as the listener reports it)
// is on a loopback interface only.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// advertised is the address published for a listener on addr (host:port) when it is known
// to other hosts as host: host with addr's port.
func advertised(addr, host string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return net.JoinHostPort(host, port)
}
