package ytstore

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// seen is what the test server saw of one request.
type seen struct {
	length   int64
	encoding []string
	body     string
}

func recordingServer(t *testing.T) (*httptest.Server, func() []seen) {
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, seen{length: r.ContentLength, encoding: r.TransferEncoding, body: string(b)})
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv, func() []seen {
		mu.Lock()
		defer mu.Unlock()
		return append([]seen(nil), got...)
	}
}

// pipeRequest posts what write writes to a pipe, as the SDK streams row bodies.
func pipeRequest(t *testing.T, url string, write func(w io.Writer) error) (*http.Request, func() error) {
	pr, pw := io.Pipe()
	req, err := http.NewRequest(http.MethodPost, url, pr)
	require.NoError(t, err)
	require.Zero(t, req.ContentLength, "a pipe body is of unknown length")
	done := make(chan error, 1)
	go func() {
		err := write(pw)
		_ = pw.CloseWithError(err)
		done <- err
	}()
	return req, func() error { return <-done }
}

// TestSizedBodiesSendStreamedBodiesWithLength: a body streamed through a pipe in pieces
// (as the SDK sends insert_rows and push_queue_producer) reaches the server whole and with
// a Content-Length instead of chunked; one longer than the limit is streamed chunked, whole;
// a body of known length and a request without one pass through.
func TestSizedBodiesSendStreamedBodiesWithLength(t *testing.T) {
	srv, got := recordingServer(t)
	client := &http.Client{Transport: sizedBodies{base: http.DefaultTransport, limit: 1000}}

	pieces := func(n int) func(w io.Writer) error {
		return func(w io.Writer) error {
			for i := range n {
				if _, err := io.WriteString(w, strings.Repeat(string(rune('a'+i%26)), 100)); err != nil {
					return err
				}
			}
			return nil
		}
	}
	want := func(n int) string {
		var b strings.Builder
		_ = pieces(n)(&b)
		return b.String()
	}

	// Within the limit (10 pieces of 100 bytes = the limit exactly).
	req, wait := pipeRequest(t, srv.URL, pieces(10))
	rsp, err := client.Do(req)
	require.NoError(t, err)
	require.NoError(t, rsp.Body.Close())
	require.NoError(t, wait())

	// Over the limit.
	req, wait = pipeRequest(t, srv.URL, pieces(25))
	rsp, err = client.Do(req)
	require.NoError(t, err)
	require.NoError(t, rsp.Body.Close())
	require.NoError(t, wait())

	// Known length; no body.
	rsp, err = client.Post(srv.URL, "text/plain", bytes.NewReader([]byte("known")))
	require.NoError(t, err)
	require.NoError(t, rsp.Body.Close())
	rsp, err = client.Get(srv.URL)
	require.NoError(t, err)
	require.NoError(t, rsp.Body.Close())

	// An empty streamed body.
	req, wait = pipeRequest(t, srv.URL, pieces(0))
	rsp, err = client.Do(req)
	require.NoError(t, err)
	require.NoError(t, rsp.Body.Close())
	require.NoError(t, wait())

	s := got()
	require.Len(t, s, 5)
	require.Equal(t, seen{length: 1000, body: want(10)}, s[0], "within the limit: sent with its length")
	require.Equal(t, seen{length: -1, encoding: []string{"chunked"}, body: want(25)}, s[1], "over the limit: streamed")
	require.Equal(t, seen{length: 5, body: "known"}, s[2])
	require.Equal(t, seen{length: 0, body: ""}, s[3])
	require.Equal(t, seen{length: 0, body: ""}, s[4])
}

// TestSizedBodiesFailedBodyIsNotSent: a streamed body whose writer fails (the SDK aborts a
// row write that way) makes the request fail with that error; the server gets nothing.
func TestSizedBodiesFailedBodyIsNotSent(t *testing.T) {
	srv, got := recordingServer(t)
	client := &http.Client{Transport: sizedBodies{base: http.DefaultTransport, limit: 1000}}
	boom := errors.New("row encoding failed")
	req, wait := pipeRequest(t, srv.URL, func(w io.Writer) error {
		_, _ = io.WriteString(w, "partial")
		return boom
	})
	_, err := client.Do(req)
	require.ErrorIs(t, err, boom)
	require.ErrorIs(t, wait(), boom)
	require.Empty(t, got())
}

// TestSizedBodyReadAfterClose: once the transport closes a sized body its buffer goes back
// to the pool; a late read gets an error, not bytes of a buffer reused meanwhile.
func TestSizedBodyReadAfterClose(t *testing.T) {
	buf := bytes.NewBufferString("payload")
	b := &sizedBody{r: bytes.NewReader(buf.Bytes()), buf: buf}
	p := make([]byte, 3)
	n, err := b.Read(p)
	require.NoError(t, err)
	require.Equal(t, "pay", string(p[:n]))
	require.NoError(t, b.Close())
	require.NoError(t, b.Close(), "closing twice is harmless")
	_, err = b.Read(p)
	require.ErrorIs(t, err, errBodyClosed)
}

// TestSizedBodiesCloseIdleConnections: closing the client's idle connections (the SDK does
// when it stops) reaches the transport underneath: the next request dials a new connection.
func TestSizedBodiesCloseIdleConnections(t *testing.T) {
	var mu sync.Mutex
	conns := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		conns[r.RemoteAddr] = true
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	base := http.DefaultTransport.(*http.Transport).Clone()
	client := &http.Client{Transport: sizedBodies{base: base, limit: 1000}}
	get := func() {
		rsp, err := client.Get(srv.URL)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, rsp.Body)
		require.NoError(t, rsp.Body.Close())
	}
	get()
	get()
	mu.Lock()
	require.Len(t, conns, 1, "an idle connection is reused")
	mu.Unlock()
	client.CloseIdleConnections()
	get()
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, conns, 2, "after CloseIdleConnections the request dials anew")
}
