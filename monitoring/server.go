// Package monitoring serves a process's Prometheus metrics and the Go profiler over HTTP:
// /metrics (the text exposition of a registry of the process's own, never the global
// default) and /debug/pprof/ (net/http/pprof). The collectors read the state controllers
// and workers already keep at scrape time (Controller, Worker); nothing here runs on the
// data path.
package monitoring

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Config configures a Server. The zero value serves on a random loopback port.
type Config struct {
	// Listen is the address to serve on, host:port. Default "127.0.0.1:0": loopback only,
	// a random free port (Server.Addr tells which). The endpoints have no authentication
	// and pprof reveals the process's memory: bind other hosts only behind a firewall.
	Listen string
}

// Server is the monitoring endpoint of one process. Create it with New (which binds the
// port), register collectors, then call Run once.
type Server struct {
	reg       *prometheus.Registry
	ln        net.Listener
	srv       *http.Server
	closeOnce sync.Once
}

// New binds cfg.Listen and returns a Server whose registry holds the Go runtime and process
// collectors and cs. An error means the port could not be bound or a collector is invalid.
func New(cfg Config, cs ...prometheus.Collector) (*Server, error) {
	listen := cmp.Or(cfg.Listen, "127.0.0.1:0")
	reg := prometheus.NewRegistry()
	for _, c := range append([]prometheus.Collector{collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})}, cs...) {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("monitoring: register collector: %w", err)
		}
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("monitoring: listen on %s: %w", listen, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return &Server{reg: reg, ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}, nil
}

// Addr is the host:port the server is bound to.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Register adds a collector to the server's registry.
func (s *Server) Register(c prometheus.Collector) error { return s.reg.Register(c) }

// Run serves until ctx ends, then shuts the server down (requests in progress get a
// second) and returns nil once its goroutines have exited; an error when serving failed.
func (s *Server) Run(ctx context.Context) error {
	stopped := make(chan struct{})
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if s.srv.Shutdown(sctx) != nil {
				_ = s.srv.Close()
			}
		case <-stopped:
		}
	}()
	err := s.srv.Serve(s.ln)
	close(stopped)
	<-watchDone
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("monitoring: serve on %s: %w", s.Addr(), err)
}

// Close stops a server whether or not Run was called; it is idempotent.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		err = s.srv.Close()
		if cerr := s.ln.Close(); err == nil && cerr != nil && !errors.Is(cerr, net.ErrClosed) {
			err = cerr
		}
	})
	return err
}
