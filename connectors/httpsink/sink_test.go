package httpsink

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkyson "go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/internal/ybin"
)

// request is what a test server received.
type request struct {
	Method, Path, Body string
	Header             http.Header
}

// recorder is a test server's log of requests; handle answers a request (nil: 200 OK).
type recorder struct {
	mu   sync.Mutex
	reqs []request
}

func (r *recorder) add(req *http.Request) request {
	b, _ := io.ReadAll(req.Body)
	rq := request{Method: req.Method, Path: req.URL.Path, Body: string(b), Header: req.Header.Clone()}
	r.mu.Lock()
	r.reqs = append(r.reqs, rq)
	r.mu.Unlock()
	return rq
}

func (r *recorder) all() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.reqs...)
}

func (r *recorder) bodies() []string {
	var out []string
	for _, q := range r.all() {
		out = append(out, q.Body)
	}
	return out
}

// serve starts a loopback server whose handler records every request and then calls h
// (nil: answers 200 with a body); the server stops when the test ends.
func serve(t *testing.T, h func(w http.ResponseWriter, r *http.Request, n int, rq request)) (*httptest.Server, *recorder) {
	t.Helper()
	rec := &recorder{}
	var mu sync.Mutex
	count := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rq := rec.add(r)
		mu.Lock()
		count++
		n := count
		mu.Unlock()
		if h == nil {
			_, _ = io.WriteString(w, "ok")
			return
		}
		h(w, r, n, rq)
	}))
	t.Cleanup(srv.Close)
	return srv, rec
}

// fastRetries are dynamic parameters with short delays.
func fastRetries() *Dynamic {
	d := DefaultDynamic()
	d.RetryInitialDelay, d.RetryMinimumDelay, d.RetryMaximumDelay = 5*time.Millisecond, time.Millisecond, 20*time.Millisecond
	d.AttemptTimeout = 2 * time.Second
	d.RequestTimeout = 10 * time.Second
	return &d
}

func params(url string) *Params {
	return &Params{URL: url, PayloadColumn: "body", IdempotencyHeader: "Idempotency-Key", KeepAlive: true, MaxIdleConnections: 8}
}

// batch is one batch of messages with the given bodies (nil: a null payload), message ids
// "m<seq>" and sequence numbers from first.
func batch(first int64, bodies ...any) connector.Batch {
	b := connector.Batch{FirstSeq: first, LastSeq: first + int64(len(bodies)) - 1}
	for i, body := range bodies {
		seq := first + int64(i)
		b.Rows = append(b.Rows, connector.Delivery{MessageID: fmt.Sprintf("m%d", seq), SequenceNumber: seq,
			Row: map[string]any{"id": uint64(seq), "body": body}})
	}
	b.FirstID, b.LastID = b.Rows[0].MessageID, b.Rows[len(b.Rows)-1].MessageID
	return b
}

func key(id string) string { return hex.EncodeToString([]byte(id)) }

// TestDeliverRetries5xx: a 5xx answer is retried, and the message counts once it gets a 2xx.
func TestDeliverRetries5xx(t *testing.T) {
	srv, rec := serve(t, func(w http.ResponseWriter, _ *http.Request, n int, _ request) {
		if n <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	s := newSink("out", params(srv.URL), fastRetries(), nil, 1)
	n, err := s.Deliver(context.Background(), []connector.Batch{batch(0, "a")})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, []string{"a", "a", "a"}, rec.bodies())
}

// TestDeliverRetriesSlowAttempt: an attempt that outlives attempt_timeout is abandoned and
// retried.
func TestDeliverRetriesSlowAttempt(t *testing.T) {
	srv, rec := serve(t, func(w http.ResponseWriter, r *http.Request, n int, _ request) {
		if n == 1 {
			select {
			case <-time.After(5 * time.Second):
			case <-r.Context().Done():
			}
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	d := fastRetries()
	d.AttemptTimeout = 100 * time.Millisecond
	s := newSink("out", params(srv.URL), d, nil, 1)
	n, err := s.Deliver(context.Background(), []connector.Batch{batch(0, "a")})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Len(t, rec.all(), 2)
}

// TestDeliverRetriesClosedConnection: a connection closed without an answer is retried.
func TestDeliverRetriesClosedConnection(t *testing.T) {
	srv, rec := serve(t, func(w http.ResponseWriter, _ *http.Request, n int, _ request) {
		if n <= 2 {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	s := newSink("out", params(srv.URL), fastRetries(), nil, 1)
	n, err := s.Deliver(context.Background(), []connector.Batch{batch(0, "a", "b")})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, []string{"a", "a", "a", "b"}, rec.bodies())
}

// TestDeliverPartialCount: when a message's attempts run out, Deliver reports the batches
// before its batch as held — not its own batch, although part of it got through — and an
// error naming the sink, the URL and the last status; the instance is broken from then on.
func TestDeliverPartialCount(t *testing.T) {
	var accept atomic.Bool
	srv, rec := serve(t, func(w http.ResponseWriter, _ *http.Request, _ int, rq request) {
		if rq.Body == "bad" && !accept.Load() {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	d := fastRetries()
	d.MaxAttemptCount = 3
	s := newSink("out", params(srv.URL+"/in"), d, nil, 1)
	n, err := s.Deliver(context.Background(), []connector.Batch{batch(0, "a", "b"), batch(2, "c", "bad", "d"), batch(5, "e")})
	require.ErrorIs(t, err, ErrUndeliverable)
	assert.Equal(t, 1, n)
	assert.Equal(t, []string{"a", "b", "c", "bad", "bad", "bad"}, rec.bodies(), "nothing after the failed message")
	msg := err.Error()
	for _, want := range []string{"async_http sink out", srv.URL + "/in", "502 Bad Gateway", "after 3 attempt(s)", key("m3")} {
		assert.Contains(t, msg, want)
	}

	// The instance is broken: offered again, even to a target that now takes the message, it
	// sends nothing and returns the give-up's error.
	accept.Store(true)
	sent := len(rec.bodies())
	n, err = s.Deliver(context.Background(), []connector.Batch{batch(2, "c", "bad", "d"), batch(5, "e")})
	require.ErrorIs(t, err, ErrBroken)
	require.ErrorIs(t, err, connector.ErrSinkBroken)
	require.ErrorIs(t, err, ErrUndeliverable)
	assert.Zero(t, n)
	assert.Contains(t, err.Error(), "HTTP sink is broken until the pipeline is paused and started: async_http sink out: POST "+srv.URL+"/in")
	assert.Contains(t, err.Error(), "502 Bad Gateway", "the last error")
	assert.Len(t, rec.bodies(), sent, "a broken instance sends nothing")

	// A restarted job's instance delivers the rest.
	s = newSink("out", params(srv.URL+"/in"), d, nil, 1)
	n, err = s.Deliver(context.Background(), []connector.Batch{batch(2, "c", "bad", "d"), batch(5, "e")})
	require.NoError(t, err)
	assert.Equal(t, 2, n)
}

// TestDeliverRequestTimeout: request_timeout bounds all attempts of one message.
func TestDeliverRequestTimeout(t *testing.T) {
	srv, _ := serve(t, func(w http.ResponseWriter, r *http.Request, _ int, _ request) {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
	})
	d := fastRetries()
	d.AttemptTimeout, d.RequestTimeout, d.MaxAttemptCount = 50*time.Millisecond, 300*time.Millisecond, 100
	s := newSink("out", params(srv.URL), d, nil, 1)
	start := time.Now()
	n, err := s.Deliver(context.Background(), []connector.Batch{batch(0, "a")})
	require.ErrorIs(t, err, ErrUndeliverable)
	assert.Zero(t, n)
	assert.Less(t, time.Since(start), 3*time.Second)
	assert.Regexp(t, "(attempt_timeout|request_timeout)", err.Error())
}

// TestDeliverCancelled: a cancelled context stops the delivery with its error, which is not
// ErrUndeliverable.
func TestDeliverCancelled(t *testing.T) {
	srv, _ := serve(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ request) {
		w.WriteHeader(http.StatusInternalServerError)
	})
	ctx, cancel := context.WithCancel(context.Background())
	d := fastRetries()
	d.RetryInitialDelay, d.RetryMinimumDelay, d.RetryMaximumDelay = time.Hour, time.Hour, time.Hour
	d.RequestTimeout = 2 * time.Hour
	s := newSink("out", params(srv.URL), d, nil, 1)
	time.AfterFunc(100*time.Millisecond, cancel)
	n, err := s.Deliver(ctx, []connector.Batch{batch(0, "a")})
	require.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, ErrUndeliverable)
	assert.Zero(t, n)
	assert.NoError(t, s.broken, "a cancelled delivery breaks nothing")
}

// TestRedirects: POST and its body are kept on every redirect status, up to
// max_redirect_count; one more fails at once, and so does https → http.
func TestRedirects(t *testing.T) {
	target, rec := serve(t, nil)
	for _, code := range []int{301, 302, 303, 307, 308} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			hop2, _ := serve(t, func(w http.ResponseWriter, r *http.Request, _ int, _ request) {
				http.Redirect(w, r, target.URL+"/final", code)
			})
			hop1, _ := serve(t, func(w http.ResponseWriter, r *http.Request, _ int, _ request) {
				http.Redirect(w, r, hop2.URL, code)
			})
			before := len(rec.all())
			p := params(hop1.URL)
			p.MaxRedirectCount = 2
			p.Headers = map[string]string{"Content-Type": "text/plain", "X-Tenant": "t1"}
			s := newSink("out", p, fastRetries(), nil, 1)
			n, err := s.Deliver(context.Background(), []connector.Batch{batch(0, "payload")})
			require.NoError(t, err)
			assert.Equal(t, 1, n)
			got := rec.all()[before:]
			require.Len(t, got, 1)
			assert.Equal(t, request{Method: "POST", Path: "/final", Body: "payload"}, request{Method: got[0].Method, Path: got[0].Path, Body: got[0].Body})
			assert.Equal(t, "text/plain", got[0].Header.Get("Content-Type"))
			assert.Equal(t, "t1", got[0].Header.Get("X-Tenant"))
			assert.Equal(t, key("m0"), got[0].Header.Get("Idempotency-Key"))

			// One redirect more than allowed: refused, not retried.
			p.MaxRedirectCount = 1
			s = newSink("out", p, fastRetries(), nil, 1)
			hits := len(rec.all())
			n, err = s.Deliver(context.Background(), []connector.Batch{batch(0, "payload")})
			require.ErrorIs(t, err, ErrUndeliverable)
			assert.Zero(t, n)
			assert.Contains(t, err.Error(), "max_redirect_count")
			assert.Contains(t, err.Error(), "after 1 attempt(s)")
			assert.Len(t, rec.all(), hits)
		})
	}
	t.Run("no redirects", func(t *testing.T) {
		hop, _ := serve(t, func(w http.ResponseWriter, r *http.Request, _ int, _ request) {
			http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
		})
		s := newSink("out", params(hop.URL), fastRetries(), nil, 1)
		_, err := s.Deliver(context.Background(), []connector.Batch{batch(0, "payload")})
		require.ErrorIs(t, err, ErrUndeliverable)
		assert.Contains(t, err.Error(), "max_redirect_count = 0")
	})
	t.Run("https to http", func(t *testing.T) {
		hits := len(rec.all())
		tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL, http.StatusPermanentRedirect)
		}))
		t.Cleanup(tlsSrv.Close)
		p := params(tlsSrv.URL)
		p.MaxRedirectCount = 5
		s := newSink("out", p, fastRetries(), tlsSrv.Client().Transport.(*http.Transport).TLSClientConfig, 1)
		n, err := s.Deliver(context.Background(), []connector.Batch{batch(0, "payload")})
		require.ErrorIs(t, err, ErrUndeliverable)
		assert.Zero(t, n)
		assert.Contains(t, err.Error(), "from https to http")
		assert.Len(t, rec.all(), hits, "nothing reached the http target")
	})
}

// TestNullPayloadSkipped: a null or absent payload is not sent and counts as delivered.
func TestNullPayloadSkipped(t *testing.T) {
	srv, rec := serve(t, nil)
	s := newSink("out", params(srv.URL), fastRetries(), nil, 1)
	b := batch(0, nil, "a", nil)
	b.Rows = append(b.Rows, connector.Delivery{MessageID: "m3", SequenceNumber: 3, Row: map[string]any{"id": uint64(3)}})
	n, err := s.Deliver(context.Background(), []connector.Batch{b, batch(4, nil)})
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Equal(t, []string{"a"}, rec.bodies())
}

// TestEncodedPayloads: payloads stored as binary YSON (the fast encoding or the SDK's) are
// decoded for their payload column; a payload column that is not a string is an error.
func TestEncodedPayloads(t *testing.T) {
	srv, rec := serve(t, nil)
	s := newSink("out", params(srv.URL), fastRetries(), nil, 1)
	fast, ok := ybin.AppendMap(nil, map[string]any{"id": uint64(0), "body": "fast"})
	require.True(t, ok)
	sdk, err := sdkyson.MarshalFormat(map[string]any{"id": uint64(1), "body": "sdk", "list": []any{int64(1)}}, sdkyson.FormatBinary)
	require.NoError(t, err)
	b := connector.Batch{FirstSeq: 0, LastSeq: 1, Rows: []connector.Delivery{
		{MessageID: "m0", SequenceNumber: 0, Encoded: fast},
		{MessageID: "m1", SequenceNumber: 1, Encoded: sdk},
	}}
	n, err := s.Deliver(context.Background(), []connector.Batch{b})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, []string{"fast", "sdk"}, rec.bodies())

	n, err = s.Deliver(context.Background(), []connector.Batch{batch(2, uint64(7))})
	require.ErrorIs(t, err, ErrUndeliverable)
	assert.Zero(t, n)
	assert.Contains(t, err.Error(), "not a string")
}

// TestIdempotencyKeyStable: each message carries the lowercase hex of its id in the
// idempotency header, the same on a resend; "" sends no such header.
func TestIdempotencyKeyStable(t *testing.T) {
	srv, rec := serve(t, nil)
	s := newSink("out", params(srv.URL), fastRetries(), nil, 1)
	batches := []connector.Batch{batch(0, "a", "b")}
	batches[0].Rows[1].MessageID = "\x00\xffid"
	for range 2 {
		n, err := s.Deliver(context.Background(), batches)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
	}
	var keys []string
	for _, q := range rec.all() {
		keys = append(keys, q.Header.Get("Idempotency-Key"))
	}
	assert.Equal(t, []string{"6d30", "00ff6964", "6d30", "00ff6964"}, keys)

	// Another header name, and none at all.
	p := params(srv.URL)
	p.IdempotencyHeader = "X-Request-Id"
	_, err := newSink("out", p, fastRetries(), nil, 1).Deliver(context.Background(), []connector.Batch{batch(0, "c")})
	require.NoError(t, err)
	p = params(srv.URL)
	p.IdempotencyHeader = ""
	_, err = newSink("out", p, fastRetries(), nil, 1).Deliver(context.Background(), []connector.Batch{batch(0, "d")})
	require.NoError(t, err)
	got := rec.all()
	require.Len(t, got, 6)
	assert.Equal(t, "6d30", got[4].Header.Get("X-Request-Id"))
	assert.Empty(t, got[4].Header.Get("Idempotency-Key"))
	assert.Empty(t, got[5].Header.Get("Idempotency-Key"))
	assert.Empty(t, got[5].Header.Get("X-Request-Id"))
}

// TestStaticHeadersNotInErrors: the static headers are sent with every request, and no
// header value nor the URL's password appears in a delivery error.
func TestStaticHeadersNotInErrors(t *testing.T) {
	const token = "Bearer s3cr3t-t0ken"
	srv, rec := serve(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ request) {
		w.WriteHeader(http.StatusUnauthorized)
	})
	p := params(strings.Replace(srv.URL, "http://", "http://user:pa55word@", 1))
	p.Headers = map[string]string{"Authorization": token, "X-Api-Key": "k3y-value"}
	d := fastRetries()
	d.MaxAttemptCount = 2
	_, err := newSink("out", p, d, nil, 1).Deliver(context.Background(), []connector.Batch{batch(0, "a")})
	require.ErrorIs(t, err, ErrUndeliverable)
	got := rec.all()
	require.Len(t, got, 2)
	assert.Equal(t, token, got[0].Header.Get("Authorization"))
	assert.Equal(t, "k3y-value", got[1].Header.Get("X-Api-Key"))
	for _, secret := range []string{"s3cr3t", "k3y-value", "pa55word"} {
		assert.NotContains(t, err.Error(), secret)
	}
	assert.Contains(t, err.Error(), "401 Unauthorized")

	// A failure of the connection itself says nothing secret either.
	srv.Close()
	_, err = newSink("out", p, d, nil, 1).Deliver(context.Background(), []connector.Batch{batch(0, "a")})
	require.ErrorIs(t, err, ErrUndeliverable)
	for _, secret := range []string{"s3cr3t", "k3y-value", "pa55word"} {
		assert.NotContains(t, err.Error(), secret)
	}
	t.Log(err)
}

// TestReconfigureMaxAttempts: new dynamic parameters (connector.Reconfigurer) apply from the
// next Deliver: with max_attempt_count 2 a message the server fails three times is not
// delivered (the instance breaks); a second instance opened with 2 and reconfigured to 5
// before its Deliver delivers it.
func TestReconfigureMaxAttempts(t *testing.T) {
	var failures atomic.Int64
	srv, _ := serve(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ request) {
		if failures.Add(-1) >= 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	d := fastRetries()
	d.MaxAttemptCount = 2
	failures.Store(3)
	_, err := newSink("out", params(srv.URL), d, nil, 1).Deliver(context.Background(), []connector.Batch{batch(0, "a")})
	require.ErrorIs(t, err, ErrUndeliverable)

	failures.Store(3)
	s := newSink("out", params(srv.URL), d, nil, 1)
	more := *d
	more.MaxAttemptCount = 5
	var rc connector.Reconfigurer = s
	require.NoError(t, rc.Reconfigure(context.Background(), &more))
	n, err := s.Deliver(context.Background(), []connector.Batch{batch(0, "a")})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	require.Error(t, rc.Reconfigure(context.Background(), nil))
}
