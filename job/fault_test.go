// The word count under network faults (a flaky proxy), and registration through cut
// connections.

package job

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	stdlog "log"
	"math/rand"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// flakyProxy is an HTTP proxy in front of ytlocal that executes every request upstream and
// then, for a seeded random share of the mutating ones, cuts the client connection instead of
// answering: the client cannot know whether the request was applied. It rewrites /hosts so
// that heavy requests come through it too.
type flakyProxy struct {
	upstream string
	addr     string
	rate     float64
	// on enables the faults (after the setup went through).
	on atomic.Bool

	mu  sync.Mutex
	rng *rand.Rand

	cut atomic.Int64
	// advances counts advance_queue_consumer requests.
	advances atomic.Int64
}

func startFlakyProxy(t *testing.T, upstream string, seed int64, rate float64) *flakyProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &flakyProxy{upstream: upstream, addr: ln.Addr().String(), rate: rate, rng: rand.New(rand.NewSource(seed))}
	srv := &http.Server{Handler: p}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return p
}

var cuttable = []string{"commit_transaction", "insert_rows", "delete_rows", "push_queue_producer", "advance_queue_consumer", "lookup_rows", "select_rows"}

func (p *flakyProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/hosts" {
		_ = json.NewEncoder(w).Encode([]string{p.addr})
		return
	}
	if strings.HasSuffix(r.URL.Path, "/advance_queue_consumer") {
		p.advances.Add(1)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+p.upstream+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	respBody, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if p.shouldCut(r.URL.Path) {
		p.cut.Add(1)
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
	}
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(respBody)
}

func (p *flakyProxy) shouldCut(path string) bool {
	hit := false
	for _, c := range cuttable {
		if strings.HasSuffix(path, "/"+c) {
			hit = true
		}
	}
	if !hit || !p.on.Load() {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rng.Float64() < p.rate
}

// TestWordCountUnderNetworkFaults runs the word count with the worker behind a proxy that cuts
// a share of the replies of commits, row writes and reads after executing them. Every word
// must still be counted exactly once. A failing seed is printed.
func TestWordCountUnderNetworkFaults(t *testing.T) {
	const seed = 7
	var proxy *flakyProxy
	e := startWordCountVia(t, func(ytAddr string) string {
		proxy = startFlakyProxy(t, ytAddr, seed, 0.15)
		return proxy.addr
	})
	e.putJob("split-0", "split", "split-p0", 0)
	e.putJob("count-0", "count", "count-p0", -1)
	e.write("warm")
	e.waitCounts(map[string]int64{"warm": 1})
	proxy.on.Store(true)
	want := map[string]int64{"warm": 1}
	for round := 0; round < 10; round++ {
		if round > 0 {
			time.Sleep(100 * time.Millisecond) // let epochs interleave with the writes
		}
		var lines []string
		for i := 0; i < 40; i++ {
			w := fmt.Sprintf("f%d", (round*40+i)%13)
			lines = append(lines, w+" all")
			want[w]++
			want["all"]++
		}
		e.write(lines...)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got := e.counts()
		if fmt.Sprint(got) == fmt.Sprint(want) {
			break
		}
		for k, v := range got {
			if v > want[k] {
				t.Fatalf("seed %d: %s counted %d times, want %d (double count)", seed, k, v, want[k])
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("seed %d: counts %v, want %v", seed, got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.Positive(t, proxy.cut.Load(), "the proxy cut some replies")
	t.Logf("replies cut: %d; worker stats: %+v", proxy.cut.Load(), e.worker.Stats())
}

// cutFirstProxy forwards every request to ytlocal; the answers to the first limit requests of
// one command it cuts off halfway: the status line, the headers and part of the body arrive,
// then the connection closes, as when a proxy in between restarts. It rewrites /hosts so that
// heavy requests come through it too.
type cutFirstProxy struct {
	addr, command string
	limit         int64
	cut           atomic.Int64
}

func startCutFirstProxy(t *testing.T, upstream, command string, limit int64) *cutFirstProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &cutFirstProxy{addr: ln.Addr().String(), command: command, limit: limit}
	u, err := url.Parse("http://" + upstream)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(u)
	transport := &http.Transport{DisableCompression: true}
	rp.Transport = transport
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hosts" {
			_ = json.NewEncoder(w).Encode([]string{p.addr})
			return
		}
		if strings.HasSuffix(r.URL.Path, "/"+p.command) && p.cut.Add(1) <= p.limit {
			rec := httptest.NewRecorder()
			rp.ServeHTTP(rec, r)
			body := rec.Body.Bytes()
			for k, vs := range rec.Header() {
				w.Header()[k] = vs
			}
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			w.WriteHeader(rec.Code)
			_, _ = w.Write(body[:len(body)/2])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the server closes the connection mid-body
		}
		rp.ServeHTTP(w, r)
	}), ErrorLog: stdlog.New(io.Discard, "", 0)}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		transport.CloseIdleConnections()
	})
	return p
}

// TestWorkerRegistersThroughCutConnections: a worker whose first requests to start a
// transaction get cut-off answers (the session's and the registration's tablet transaction)
// keeps trying instead of exiting, registers, and then counts words as usual.
func TestWorkerRegistersThroughCutConnections(t *testing.T) {
	var proxy *cutFirstProxy
	e := startWordCountOpts(t, func(ytAddr string) string {
		proxy = startCutFirstProxy(t, ytAddr, "start_transaction", 3)
		return proxy.addr
	}, nil)
	require.Greater(t, proxy.cut.Load(), int64(3), "the first start_transaction requests were cut, later ones passed")
	e.putJob("split-0", "split", "split-p0", 0)
	e.putJob("count-0", "count", "count-p0", -1)
	e.write("a b a")
	e.waitCounts(map[string]int64{"a": 2, "b": 1})
}
