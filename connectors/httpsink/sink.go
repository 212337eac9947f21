package httpsink

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	sdkyson "go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/internal/ybin"
)

// ErrUndeliverable is wrapped by the error of a Deliver call that gave up on a message: its
// attempts ran out (max_attempt_count, request_timeout), a redirect broke the policy, or its
// payload is not a string. The batches before the message's are held; the instance is broken
// (ErrBroken) and a restarted job's instance offers the message again.
var ErrUndeliverable = errors.New("message not delivered")

// ErrBroken is wrapped by the errors of an instance that gave up on a message
// (ErrUndeliverable): it sends nothing more until the pipeline is paused and started, when
// its job's new instance offers the undelivered batches again.
var ErrBroken = fmt.Errorf("HTTP sink is %w", connector.ErrSinkBroken)

// errRedirect is a redirect the sink does not follow.
var errRedirect = errors.New("redirect refused")

// permanent marks an attempt's error that another attempt would repeat: it is not retried.
type permanent struct{ err error }

func (p *permanent) Error() string { return p.err.Error() }
func (p *permanent) Unwrap() error { return p.err }

// sink is the runtime of TAsyncHttpSink for one job: it POSTs each delivery's payload column
// to the URL, one message at a time in batch and sequence order, with the message's stable
// id in the idempotency header, retrying each message by the dynamic retry policy. It holds
// one http.Client; Deliver is called by one goroutine at a time.
type sink struct {
	params *Params
	dyn    Dynamic
	name   string // "async_http sink <id>", for errors
	url    string // the URL without its password, for errors
	client *http.Client
	rand   *rand.Rand   // the jitter of the retry delays
	dec    ybin.Decoder // shares the key strings of the rows it decodes
	// broken is the error of the give-up that broke the instance (wrapping ErrBroken), or nil.
	broken error
	// pending holds the dynamic parameters Reconfigure took; the next Deliver applies them.
	pending atomic.Pointer[Dynamic]
}

// Reconfigure takes new dynamic parameters (timeouts, retry delays, max_attempt_count); the
// next Deliver applies them (connector.Reconfigurer). It may run while a Deliver does.
func (s *sink) Reconfigure(_ context.Context, dynamic any) error {
	d, ok := dynamic.(*Dynamic)
	if !ok || d == nil {
		return fmt.Errorf("%s: reconfigure: dynamic parameters of type %T", s.name, dynamic)
	}
	c := *d
	s.pending.Store(&c)
	return nil
}

// newSink opens the sink of sinkID with static parameters p and dynamic parameters dyn (nil:
// the defaults). tlsConfig, when not nil, is the TLS client configuration (tests trust
// their own server with it); seed seeds the jitter of the retry delays.
func newSink(sinkID string, p *Params, dyn *Dynamic, tlsConfig *tls.Config, seed uint64) *sink {
	d := DefaultDynamic()
	if dyn != nil {
		d = *dyn
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 0 // no limit over all hosts; MaxIdleConnsPerHost bounds each
	tr.MaxIdleConnsPerHost = int(p.MaxIdleConnections)
	// Go reads 0 as "the default, 2": max_idle_connections = 0 keeps no idle connection.
	tr.DisableKeepAlives = !p.KeepAlive || p.MaxIdleConnections == 0
	if tlsConfig != nil {
		tr.TLSClientConfig = tlsConfig
	}
	s := &sink{
		params: p,
		dyn:    d,
		name:   fmt.Sprintf("%s sink %s", Class, sinkID),
		url:    p.URL,
		rand:   rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
	}
	if u, err := url.Parse(p.URL); err == nil {
		s.url = u.Redacted()
	}
	s.client = &http.Client{Transport: tr, CheckRedirect: s.checkRedirect}
	return s
}

// Close closes the idle connections of the sink's client.
func (s *sink) Close() { s.client.CloseIdleConnections() }

// checkRedirect follows at most max_redirect_count redirects, never from https to http, and
// keeps the method and the body of the first request on every hop: net/http turns a POST
// into a body-less GET on 301, 302 and 303, Flow re-POSTs. The static headers are copied by
// net/http, which drops Authorization and cookies when the redirect leaves the first
// request's host (and its subdomains).
func (s *sink) checkRedirect(req *http.Request, via []*http.Request) error {
	if int64(len(via)) > s.params.MaxRedirectCount {
		return &permanent{fmt.Errorf("%w: more than max_redirect_count = %d redirects", errRedirect, s.params.MaxRedirectCount)}
	}
	for _, prev := range via {
		if prev.URL.Scheme == "https" && req.URL.Scheme != "https" {
			return &permanent{fmt.Errorf("%w: from https to %s", errRedirect, req.URL.Scheme)}
		}
	}
	first := via[0]
	req.Method = first.Method
	if first.GetBody != nil {
		body, err := first.GetBody()
		if err != nil {
			return err
		}
		req.Body, req.GetBody, req.ContentLength = body, first.GetBody, first.ContentLength
	}
	for _, k := range []string{"Content-Type", "Content-Encoding", "Content-Language", "Content-Location"} {
		if v, ok := first.Header[k]; ok {
			if _, have := req.Header[k]; !have {
				req.Header[k] = v
			}
		}
	}
	return nil
}

// Deliver POSTs the payloads of batches in order and returns how many leading batches the
// target holds: a batch is held once every message of it got a 2xx response whose body was
// read (a null payload is skipped and counts as held). On the first message that cannot be
// delivered it returns the batches before that message's and an error wrapping
// ErrUndeliverable that names the sink, the URL and the last status or error — never a
// header value. The instance is then broken, as Flow's: every later call returns that error
// wrapping ErrBroken (connector.ErrSinkBroken) and sends nothing, until the job restarts and
// a new instance offers the batches again. A cancelled ctx returns its error the same way,
// without ErrUndeliverable, and breaks nothing.
//
// Invariant: a batch is reported held only after every message of it was answered with a
// 2xx, and a resend carries the same idempotency key (TestDeliverPartialCount,
// TestIdempotencyKeyStable, TestHTTPSinkConformance).
// Invariant: a broken instance writes nothing; its batches stay pending for the next instance
// (TestDeliverPartialCount, TestHTTPSinkUnreachableURL).
func (s *sink) Deliver(ctx context.Context, batches []connector.Batch) (int, error) {
	if s.broken != nil {
		return 0, s.broken
	}
	if d := s.pending.Swap(nil); d != nil {
		s.dyn = *d
	}
	for i := range batches {
		for j := range batches[i].Rows {
			d := &batches[i].Rows[j]
			body, ok, err := s.payload(d)
			if err != nil {
				return i, s.breakWith(fmt.Errorf("%s: POST %s: message %s (seq %d): %w: %w", s.name, s.url, hex.EncodeToString([]byte(d.MessageID)), d.SequenceNumber, ErrUndeliverable, err))
			}
			if !ok {
				continue
			}
			if err := s.post(ctx, d, body); err != nil {
				if errors.Is(err, ErrUndeliverable) {
					err = s.breakWith(err)
				}
				return i, err
			}
		}
	}
	return len(batches), nil
}

// breakWith marks the instance broken by err (a give-up, wrapping ErrUndeliverable) and
// returns the error every call returns from now on.
func (s *sink) breakWith(err error) error {
	s.broken = fmt.Errorf("%w: %w", ErrBroken, err)
	return s.broken
}

// payload returns the message's payload column; ok is false for a null payload.
func (s *sink) payload(d *connector.Delivery) (body []byte, ok bool, err error) {
	row := d.Row
	if d.Encoded != nil {
		if row, err = s.decode(d.Encoded); err != nil {
			return nil, false, err
		}
	}
	switch v := row[s.params.PayloadColumn].(type) {
	case nil:
		return nil, false, nil
	case string:
		return []byte(v), true, nil
	case []byte:
		return v, true, nil
	default:
		return nil, false, fmt.Errorf("payload column %q holds a %T, not a string", s.params.PayloadColumn, v)
	}
}

// decode decodes a stored binary YSON row.
func (s *sink) decode(b []byte) (m map[string]any, err error) {
	if m, ok := s.dec.DecodeMap(b); ok {
		return m, nil
	}
	// The SDK's decoder panics on some malformed input.
	defer func() {
		if p := recover(); p != nil {
			m, err = nil, fmt.Errorf("malformed YSON payload: %v", p)
		}
	}()
	if err := sdkyson.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("malformed YSON payload: %w", err)
	}
	return m, nil
}

// post delivers one message: attempts until one gets a 2xx, up to max_attempt_count and
// within request_timeout, with the retry delays between them.
func (s *sink) post(ctx context.Context, d *connector.Delivery, body []byte) error {
	key := hex.EncodeToString([]byte(d.MessageID))
	rctx, cancel := context.WithTimeout(ctx, s.dyn.RequestTimeout)
	defer cancel()
	var last error
	attempts := 0
	for {
		attempts++
		last = s.attempt(rctx, body, key)
		if last == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: POST %s: message %s (seq %d): %w", s.name, s.url, key, d.SequenceNumber, ctx.Err())
		}
		var perm *permanent
		if errors.As(last, &perm) || int64(attempts) >= s.dyn.MaxAttemptCount || rctx.Err() != nil {
			break
		}
		delay := s.retryDelay(attempts)
		if dl, ok := rctx.Deadline(); ok && time.Until(dl) <= delay {
			last = fmt.Errorf("%w; request_timeout %v leaves no time for another attempt", last, s.dyn.RequestTimeout)
			break
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-rctx.Done():
			t.Stop()
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: POST %s: message %s (seq %d): %w", s.name, s.url, key, d.SequenceNumber, ctx.Err())
		}
	}
	return fmt.Errorf("%s: POST %s: message %s (seq %d): %w after %d attempt(s): %w", s.name, s.url, key, d.SequenceNumber, ErrUndeliverable, attempts, last)
}

func (s *sink) retryDelay(retry int) time.Duration { return s.dyn.RetryDelay(retry, s.rand.Float64()) }

// attempt sends one POST within attempt_timeout and reads the whole response body. Its
// error names the status or what failed, not the URL (the caller names it) nor any header.
func (s *sink) attempt(ctx context.Context, body []byte, key string) error {
	actx, cancel := context.WithTimeout(ctx, s.dyn.AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, s.params.URL, bytes.NewReader(body))
	if err != nil {
		return &permanent{err}
	}
	for k, v := range s.params.Headers {
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	if s.params.IdempotencyHeader != "" {
		req.Header.Set(s.params.IdempotencyHeader, key)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return s.attemptError(ctx, actx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		// Read a little, so that the connection may be reused.
		_, _ = io.CopyN(io.Discard, resp.Body, 64<<10)
		return fmt.Errorf("status %s", resp.Status)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return fmt.Errorf("status %s, reading the body: %w", resp.Status, s.attemptError(ctx, actx, err))
	}
	return nil
}

// attemptError describes a failed attempt: a timeout by the timeout that fired, anything
// else by its cause without the URL that net/http prefixes.
func (s *sink) attemptError(ctx, actx context.Context, err error) error {
	switch {
	case ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("attempt_timeout %v exceeded", s.dyn.AttemptTimeout)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("request_timeout %v exceeded", s.dyn.RequestTimeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
