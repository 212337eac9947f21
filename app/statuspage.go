package app

import (
	"context"
	"flag"
	"fmt"
	"net"
	"strings"

	"go.ytsaurus.tech/library/go/core/log"

	"github.com/ytflow/yt-flow/statuspage"
	"github.com/ytflow/yt-flow/ytstore"
)

// statusListenUsage is the help of --status-listen, on `controller` and `run`.
const statusListenUsage = "serve the pipeline's status page (graph, lag, jobs, Start/Pause/Stop) on this address, e.g. 127.0.0.1:8080 or 127.0.0.1:0 for any port; a port alone binds loopback; its URL is published in @leader_controller_address while this controller leads (default: no page)"

// addStatusListenFlag defines --status-listen.
func addStatusListenFlag(fs *flag.FlagSet) *string {
	return fs.String("status-listen", "", statusListenUsage)
}

// listenStatus binds the address of --status-listen. An address without a host (":8080",
// "8080") binds loopback: the page is exposed further only when asked for by name.
func listenStatus(addr string) (net.Listener, error) {
	if !strings.Contains(addr, ":") {
		addr = ":" + addr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--status-listen %q: %v", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, fmt.Errorf("status page: %w", err)
	}
	return ln, nil
}

// statusPage is the status page of one controller process.
type statusPage struct {
	ln  net.Listener
	url string
	st  *ytstore.Store
	h   *statuspage.Handler
}

// openStatusPage binds --status-listen and prepares the page of the pipeline at path; the
// page reads the pipeline with token (the controller's) and checks each requester's own
// token for the read or write permission. address, when set, is the URL published instead
// of the listener's (a name the page must then answer to).
func openStatusPage(ctx context.Context, listen, proxy, token, path, address string, lg log.Structured) (*statusPage, error) {
	ln, err := listenStatus(listen)
	if err != nil {
		return nil, err
	}
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: proxy, Token: token, Path: path, Logger: lg})
	if err != nil {
		ln.Close()
		return nil, err
	}
	url := statuspage.URL(ln)
	var hosts []string
	if address != "" {
		url = address
		if h := hostOf(address); h != "" {
			hosts = append(hosts, h)
		}
	}
	h, err := statuspage.New(statuspage.Config{Pipeline: statuspage.StorePipeline(st, 10), Hosts: hosts, Logger: lg, Self: url})
	if err != nil {
		st.Close()
		ln.Close()
		return nil, err
	}
	return &statusPage{ln: ln, url: url, st: st, h: h}, nil
}

// hostOf is the host name of a URL or host:port, "" when it has none.
func hostOf(address string) string {
	a := address
	if i := strings.Index(a, "://"); i >= 0 {
		a = a[i+3:]
	}
	if i := strings.IndexByte(a, '/'); i >= 0 {
		a = a[:i]
	}
	if h, _, err := net.SplitHostPort(a); err == nil {
		return h
	}
	return a
}

// Run serves the page until ctx ends.
func (p *statusPage) Run(ctx context.Context) error {
	defer p.st.Close()
	return statuspage.Serve(ctx, p.ln, p.h)
}
