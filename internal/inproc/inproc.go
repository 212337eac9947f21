// Package inproc lets an HTTP server and its clients in one process skip the network: a
// server registers itself under its address, and a client transport asks Lookup before it
// dials. yt-flow uses it for the embedded ytlocal of `yt-flow run`, whose controller and
// workers run in the same process: their requests reach the server's handler as calls, with
// the same requests and responses, instead of through loopback TCP (four system calls and
// two connection goroutines per request).
package inproc

import (
	"net/http"
	"sync"
	"sync/atomic"
)

// Server serves requests in process. Serve returns ok=false when it no longer serves (it
// is closing): the caller then sends the request over the network as usual.
type Server interface {
	Serve(req *http.Request) (rsp *http.Response, ok bool)
}

var (
	servers sync.Map // host:port -> Server
	served  atomic.Uint64
)

// Served is the number of requests served in process so far.
func Served() uint64 { return served.Load() }

// Register makes s reachable in process at addr (host:port, as in request URLs) until the
// returned function is called.
func Register(addr string, s Server) (unregister func()) {
	servers.Store(addr, s)
	return func() { servers.CompareAndDelete(addr, s) }
}

// Lookup returns the server registered at addr.
func Lookup(addr string) (Server, bool) {
	s, ok := servers.Load(addr)
	if !ok {
		return nil, false
	}
	return s.(Server), true
}

// Transport sends requests to registered servers in process and all others through base.
type Transport struct {
	Base http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if s, ok := Lookup(req.URL.Host); ok {
		if rsp, ok := s.Serve(req); ok {
			served.Add(1)
			return rsp, nil
		}
	}
	return t.Base.RoundTrip(req)
}

// CloseIdleConnections closes the idle connections of the transport underneath.
func (t Transport) CloseIdleConnections() {
	if c, ok := t.Base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
