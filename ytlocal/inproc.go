package ytlocal

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	"go.ytsaurus.tech/library/go/core/log"

	"github.com/ytflow/yt-flow/internal/inproc"
)

// inprocGate admits the in-process requests of a server (Config.InProcess) until it
// closes; Close waits for those admitted, as http.Server.Shutdown waits for the requests
// in flight.
type inprocGate struct {
	mu     sync.RWMutex
	closed bool
}

// inprocServer serves a Server's requests in process (inproc.Server).
type inprocServer struct{ s *Server }

// Serve runs the server's handler for req in the calling goroutine and returns what it
// wrote as the response: the same handler, request and response as over TCP, without the
// connection. The handler writes every response whole (ServeHTTP), so nothing streams.
func (p inprocServer) Serve(req *http.Request) (*http.Response, bool) {
	g := &p.s.inproc
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return nil, false
	}
	if req.Body != nil {
		defer func() { _ = req.Body.Close() }() // a RoundTripper closes the request body
	}
	sreq := *req // the server's view of the request, as net/http would hand it over
	sreq.RequestURI = req.URL.RequestURI()
	sreq.RemoteAddr = "in-process"
	if sreq.Body == nil {
		sreq.Body = http.NoBody
	}
	w := &memResponse{header: http.Header{}}
	func() {
		defer func() {
			// As net/http does for a handler that panics: the request fails, the server
			// goes on.
			if r := recover(); r != nil {
				p.s.log.Error("ytlocal: handler panicked serving a request in process", log.String("path", req.URL.Path), log.String("panic", fmt.Sprint(r)))
				w.header, w.status, w.body = http.Header{}, http.StatusInternalServerError, bytes.Buffer{}
			}
		}()
		p.s.ServeHTTP(w, &sreq)
	}()
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.header.Del("Content-Length")
	return &http.Response{
		Status:        strconv.Itoa(w.status) + " " + http.StatusText(w.status),
		StatusCode:    w.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.header,
		Body:          io.NopCloser(bytes.NewReader(w.body.Bytes())),
		ContentLength: int64(w.body.Len()),
		Request:       req,
	}, true
}

// memResponse is an http.ResponseWriter that keeps the response in memory.
type memResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *memResponse) Header() http.Header { return w.header }

func (w *memResponse) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *memResponse) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(b)
}

// registerInProcess makes the server reachable in process (Config.InProcess).
func (s *Server) registerInProcess() {
	s.unregister = inproc.Register(s.Addr(), inprocServer{s})
}

// closeInProcess stops serving in process and waits for the requests admitted until ctx is
// done (as http.Server.Shutdown does for those of its connections; a request still running
// then finds the server closed, as one over TCP does).
func (s *Server) closeInProcess(ctx context.Context) {
	if s.unregister == nil {
		return
	}
	s.unregister()
	done := make(chan struct{})
	go func() {
		s.inproc.mu.Lock()
		s.inproc.closed = true
		s.inproc.mu.Unlock()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
