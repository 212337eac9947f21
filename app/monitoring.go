package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ytflow/yt-flow/monitoring"
	"github.com/ytflow/yt-flow/status"
	"github.com/ytflow/yt-flow/ytstore"
)

// monitoringFlags are --monitoring-port and --monitoring-listen of `controller`, `worker`
// and `run`: the endpoint serving /metrics and /debug/pprof/ (docs/metrics.md). It is off
// unless a port is given: one host runs several workers, where a fixed default port would
// collide, and the endpoint has no authentication.
type monitoringFlags struct {
	port   int
	listen string
}

func (m *monitoringFlags) define(fs *flag.FlagSet) {
	fs.IntVar(&m.port, "monitoring-port", -1, "port of the monitoring endpoint: Prometheus /metrics and /debug/pprof/ (0: a random free port; the URL is logged, by run printed; -1: no endpoint)")
	fs.StringVar(&m.listen, "monitoring-listen", "127.0.0.1", "host (address) the monitoring endpoint binds: loopback by default, the endpoint has no authentication")
}

// check validates the flags; an error is a usage error.
func (m *monitoringFlags) check() error {
	if m.port < -1 || m.port > 65535 {
		return fmt.Errorf("--monitoring-port %d: want -1 (off), 0 (a random port) or a port up to 65535", m.port)
	}
	if m.port >= 0 && m.listen == "" {
		return errors.New("--monitoring-listen must not be empty")
	}
	return nil
}

// enabled tells whether an endpoint is asked for.
func (m *monitoringFlags) enabled() bool { return m.port >= 0 }

// backlogPeriod is how often the controller's metrics read the source streams' backlog (a
// read per source partition, as `yt-flow status` does); scrapes in between reuse it.
const backlogPeriod = 10 * time.Second

// reportBacklog makes c report the count lag of source streams, read through st.
func reportBacklog(c *monitoring.Controller, st *ytstore.Store) {
	c.SetBacklog(func(ctx context.Context, a *ytstore.Attributes, partitions []ytstore.Partition) map[string]int64 {
		return status.ReadBacklog(ctx, st, a, partitions)
	}, backlogPeriod)
}

// monitor is a running monitoring endpoint (nil when off).
type monitor struct {
	srv    *monitoring.Server
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// start binds the endpoint with collectors cs and serves it until stop (nil, nil when the
// port is -1).
func (m *monitoringFlags) start(ctx context.Context, cs ...prometheus.Collector) (*monitor, error) {
	if m.port < 0 {
		return nil, nil
	}
	srv, err := monitoring.New(monitoring.Config{Listen: net.JoinHostPort(m.listen, strconv.Itoa(m.port))}, cs...)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	mon := &monitor{srv: srv, cancel: cancel}
	mon.wg.Go(func() { _ = srv.Run(ctx) })
	return mon, nil
}

// url is the endpoint's metrics URL.
func (m *monitor) url() string { return "http://" + m.srv.Addr() + "/metrics" }

// stop shuts the endpoint down and waits for it; a nil monitor is fine.
func (m *monitor) stop() {
	if m == nil {
		return
	}
	m.cancel()
	m.wg.Wait()
	_ = m.srv.Close()
}
