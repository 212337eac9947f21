package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync"

	"go.ytsaurus.tech/library/go/blockcodecs"
	_ "go.ytsaurus.tech/library/go/blockcodecs/all" // every codec the SDK may use
	"go.ytsaurus.tech/yt/go/yson"
)

// rowCommands are the commands whose request body is a YSON list fragment of rows.
var rowCommands = map[string]bool{
	"insert_rows":         true,
	"delete_rows":         true,
	"lock_rows":           true,
	"push_queue_producer": true,
}

// WriteCommands are the row commands that write data (lock_rows only locks).
var WriteCommands = []string{"insert_rows", "delete_rows", "push_queue_producer"}

// CountRows returns the number of items in a YSON list fragment ("{…};{…};"), the body of
// insert_rows, delete_rows, lock_rows and push_queue_producer.
func CountRows(body []byte) (int, error) {
	r := yson.NewReaderKindFromBytes(body, yson.StreamListFragment)
	n := 0
	for {
		ok, err := r.NextListItem()
		if err != nil {
			return n, fmt.Errorf("row %d: %w", n, err)
		}
		if !ok {
			return n, nil
		}
		if _, err := r.NextRawValue(); err != nil {
			return n, fmt.Errorf("row %d: %w", n, err)
		}
		n++
	}
}

// decodeBody undoes the request's Content-Encoding: identity, gzip is left to the caller
// (the SDK does not compress requests with it), z-<codec> is YTsaurus blockcodecs framing.
func decodeBody(enc string, body []byte) ([]byte, error) {
	switch {
	case enc == "" || enc == "identity":
		return body, nil
	case strings.HasPrefix(enc, "z-"):
		if blockcodecs.FindCodecByName(strings.TrimPrefix(enc, "z-")) == nil {
			return nil, fmt.Errorf("unknown codec in Content-Encoding %q", enc)
		}
		return io.ReadAll(blockcodecs.NewDecoder(bytes.NewReader(body)))
	}
	return nil, fmt.Errorf("unsupported Content-Encoding %q", enc)
}

// Tally is a snapshot of what a CountingProxy saw.
type Tally struct {
	// Commands is the number of requests per command name.
	Commands map[string]int64
	// Rows is the number of rows in the bodies of row commands, per command name.
	Rows map[string]int64
	// BadBodies counts row-command bodies that could not be decoded (their rows are
	// missing from Rows).
	BadBodies int64
}

// WrittenRows is the number of rows of insert_rows, delete_rows and push_queue_producer.
func (t Tally) WrittenRows() int64 {
	var n int64
	for _, c := range WriteCommands {
		n += t.Rows[c]
	}
	return n
}

// Requests is the number of API requests of any command.
func (t Tally) Requests() int64 {
	var n int64
	for _, v := range t.Commands {
		n += v
	}
	return n
}

// Sub returns t minus an earlier snapshot.
func (t Tally) Sub(before Tally) Tally {
	d := Tally{Commands: map[string]int64{}, Rows: map[string]int64{}, BadBodies: t.BadBodies - before.BadBodies}
	for k, v := range t.Commands {
		if v -= before.Commands[k]; v != 0 {
			d.Commands[k] = v
		}
	}
	for k, v := range t.Rows {
		if v -= before.Rows[k]; v != 0 {
			d.Rows[k] = v
		}
	}
	return d
}

// String lists the commands by request count, with rows for row commands.
func (t Tally) String() string {
	names := make([]string, 0, len(t.Commands))
	for k := range t.Commands {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		if t.Commands[names[i]] != t.Commands[names[j]] {
			return t.Commands[names[i]] > t.Commands[names[j]]
		}
		return names[i] < names[j]
	})
	var b strings.Builder
	for i, k := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%d", k, t.Commands[k])
		if rowCommands[k] {
			fmt.Fprintf(&b, " (%d rows)", t.Rows[k])
		}
	}
	return b.String()
}

// CountingProxy is an HTTP reverse proxy in front of a YTsaurus HTTP proxy (ytlocal) that
// counts /api/v4 commands and the rows in the bodies of row commands. It answers /hosts
// itself with its own address, so that the SDK sends heavy requests through it too.
type CountingProxy struct {
	ln  net.Listener
	srv *http.Server
	// transport carries the proxied requests (see StartCountingProxy, StartTableCounter).
	transport *http.Transport

	mu    sync.Mutex
	tally Tally
}

// StartCountingProxy listens on a random loopback port and forwards to target
// ("host:port"). Close stops it.
func StartCountingProxy(target string) (*CountingProxy, error) {
	u, err := url.Parse("http://" + target)
	if err != nil {
		return nil, fmt.Errorf("counting proxy: target %q: %w", target, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("counting proxy: listen: %w", err)
	}
	p := &CountingProxy{ln: ln, tally: Tally{Commands: map[string]int64{}, Rows: map[string]int64{}}}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = stdlog.New(io.Discard, "", 0) // a client giving up mid-request is not news
	rp.FlushInterval = -1
	// A transport of its own (the default settings), closed with the proxy: proxies started
	// one after another (one per subtest) must not reuse each other's connections, which a
	// port the system hands out again would otherwise allow.
	p.transport = http.DefaultTransport.(*http.Transport).Clone()
	rp.Transport = p.transport
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hosts" || strings.HasPrefix(r.URL.Path, "/hosts/") {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode([]string{p.Addr()})
			return
		}
		if cmd, ok := strings.CutPrefix(r.URL.Path, "/api/v4/"); ok {
			if err := p.count(cmd, r); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		}
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// count tallies one request; for row commands it reads the body and puts it back.
func (p *CountingProxy) count(cmd string, r *http.Request) error {
	rows, bad := 0, false
	if rowCommands[cmd] && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return fmt.Errorf("counting proxy: read %s body: %w", cmd, err)
		}
		_ = r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.TransferEncoding = nil
		plain, err := decodeBody(r.Header.Get("Content-Encoding"), body)
		if err == nil {
			rows, err = CountRows(plain)
		}
		bad = err != nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tally.Commands[cmd]++
	p.tally.Rows[cmd] += int64(rows)
	if bad {
		p.tally.BadBodies++
	}
	return nil
}

// Addr is the proxy's "127.0.0.1:port" for ytstore.Config.Proxy and the SDK.
func (p *CountingProxy) Addr() string { return p.ln.Addr().String() }

// Tally returns a copy of the counts so far.
func (p *CountingProxy) Tally() Tally {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tally.Sub(Tally{}) // a copy
}

// Close stops the proxy.
func (p *CountingProxy) Close() error {
	defer p.transport.CloseIdleConnections()
	if err := p.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
