package ytstore

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"sync"

	"go.ytsaurus.tech/yt/go/yt"
	"go.ytsaurus.tech/yt/go/yt/ythttp"

	"github.com/ytflow/yt-flow/internal/inproc"
)

// The HTTP client under the SDK. The SDK streams the body of every row command
// (insert_rows, delete_rows, push_queue_producer, ...) through a pipe, which net/http sends
// with chunked transfer encoding and one write to the socket per chunk, and it reads and
// writes through 4 KiB buffers. An epoch makes several such requests, each a few KiB to a
// few tens of KiB: that is several system calls each, on both ends (the epoch's own inserts
// go as pre-encoded batches of known length instead: rowbatch.go). newHTTPClient's client
// sends a streamed body that ends within sizedBodyLimit with a Content-Length instead, and
// sizes the connection buffers so that such a request usually leaves in one write. A server
// of the same process registered with package internal/inproc (the embedded ytlocal of
// `yt-flow run`, ytlocal.Config.InProcess) gets the requests as calls instead.
const (
	// sizedBodyLimit is the most a streamed request body is held back to learn its length;
	// a longer one is sent chunked as it comes, after the part already read.
	sizedBodyLimit = 4 << 20
	// connBufferSize is the read and write buffer of each connection.
	connBufferSize = 64 << 10
)

// newHTTPClient returns the SDK's default HTTP client for c with the changes above.
func newHTTPClient(c *yt.Config) (*http.Client, error) {
	hc, err := ythttp.BuildHTTPClient(c)
	if err != nil {
		return nil, err
	}
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	if t, ok := base.(*http.Transport); ok {
		t = t.Clone()
		t.WriteBufferSize, t.ReadBufferSize = connBufferSize, connBufferSize
		base = t
	}
	out := *hc
	// A server of this process registered with package inproc (the embedded ytlocal of
	// `yt-flow run`) gets the requests as calls; any other over the network.
	out.Transport = inproc.Transport{Base: sizedBodies{base: base, limit: sizedBodyLimit}}
	return &out, nil
}

// sizedBodies is an http.RoundTripper that reads a request body of unknown length before
// sending it: one that ends within limit bytes goes out with its Content-Length, a longer
// one chunked (the part read, then the rest as it comes). Bodies of known length pass
// through untouched.
type sizedBodies struct {
	base  http.RoundTripper
	limit int
}

// bodyBuffers recycles the buffers of sized bodies; a buffer returns when the transport
// closes the body it backs (it has written it then, or given up).
var bodyBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// CloseIdleConnections closes the idle connections of the transport underneath, as
// http.Client.CloseIdleConnections (which the SDK calls when it stops) expects of its
// transport.
func (s sizedBodies) CloseIdleConnections() {
	if c, ok := s.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func (s sizedBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.Body == http.NoBody || req.ContentLength != 0 {
		return s.base.RoundTrip(req)
	}
	buf := bodyBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	_, err := buf.ReadFrom(io.LimitReader(req.Body, int64(s.limit)+1))
	if err != nil {
		// RoundTrip closes the body whatever happens (http.RoundTripper).
		_ = req.Body.Close()
		putBodyBuffer(buf)
		return nil, err
	}
	// A RoundTripper must not modify the request: send a shallow copy.
	r := *req
	if buf.Len() > s.limit {
		// Too long to hold: the part read, then the rest as it comes, chunked. The buffer
		// is left to the collector (the body may be read until the transport closes it).
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(buf.Bytes()), req.Body), req.Body}
		return s.base.RoundTrip(&r)
	}
	_ = req.Body.Close() // read to its end
	r.ContentLength, r.GetBody = int64(buf.Len()), nil
	if buf.Len() == 0 {
		putBodyBuffer(buf)
		r.Body = http.NoBody
	} else {
		r.Body = &sizedBody{r: bytes.NewReader(buf.Bytes()), buf: buf}
	}
	return s.base.RoundTrip(&r)
}

// putBodyBuffer returns buf to bodyBuffers unless it grew large.
func putBodyBuffer(buf *bytes.Buffer) {
	if buf.Cap() <= 1<<20 {
		bodyBuffers.Put(buf)
	}
}

// sizedBody is a request body read from buf; Close returns buf to the pool, and reads after
// it fail instead of reading a buffer reused meanwhile.
type sizedBody struct {
	mu  sync.Mutex
	r   *bytes.Reader
	buf *bytes.Buffer // nil once closed
}

func (b *sizedBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf == nil {
		return 0, errBodyClosed
	}
	return b.r.Read(p)
}

func (b *sizedBody) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf != nil {
		putBodyBuffer(b.buf)
		b.buf, b.r = nil, nil
	}
	return nil
}

// errBodyClosed is what a read of a closed sized body returns.
var errBodyClosed = errors.New("ytstore: request body read after close")
