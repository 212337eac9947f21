package bench

import (
	"bytes"
	"encoding/base64"
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

	"go.ytsaurus.tech/yt/go/yson"
)

// TableCommand names a write command and the table it wrote to.
type TableCommand struct {
	Command, Path string
}

// TableCounter is an HTTP reverse proxy like CountingProxy that tallies the rows of the
// write commands (insert_rows, delete_rows, push_queue_producer) per table path, read from
// the request's X-YT-Parameters header. It answers /hosts with its own address, so it can
// sit in front of a CountingProxy (or the server) and see every request.
type TableCounter struct {
	ln  net.Listener
	srv *http.Server
	// transport carries the proxied requests (see StartCountingProxy, StartTableCounter).
	transport *http.Transport

	mu   sync.Mutex
	rows map[TableCommand]int64
	bad  int64
}

// StartTableCounter listens on a random loopback port and forwards to target ("host:port").
// Close stops it.
func StartTableCounter(target string) (*TableCounter, error) {
	u, err := url.Parse("http://" + target)
	if err != nil {
		return nil, fmt.Errorf("table counter: target %q: %w", target, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("table counter: listen: %w", err)
	}
	c := &TableCounter{ln: ln, rows: map[TableCommand]int64{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = stdlog.New(io.Discard, "", 0)
	rp.FlushInterval = -1
	// A transport of its own (the default settings), closed with the proxy: proxies started
	// one after another (one per subtest) must not reuse each other's connections, which a
	// port the system hands out again would otherwise allow.
	c.transport = http.DefaultTransport.(*http.Transport).Clone()
	rp.Transport = c.transport
	c.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hosts" || strings.HasPrefix(r.URL.Path, "/hosts/") {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode([]string{c.Addr()})
			return
		}
		if cmd, ok := strings.CutPrefix(r.URL.Path, "/api/v4/"); ok && isWriteCommand(cmd) {
			if err := c.count(cmd, r); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		}
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = c.srv.Serve(ln) }()
	return c, nil
}

func isWriteCommand(cmd string) bool {
	for _, c := range WriteCommands {
		if c == cmd {
			return true
		}
	}
	return false
}

// requestPath returns the parameter naming the table of a write command: path, or
// queue_path for push_queue_producer. Parameters come as YSON or JSON in X-YT-Parameters,
// or base64 split over X-YT-Parameters0, 1, ….
func requestPath(h http.Header) (string, error) {
	ph := h.Get("X-YT-Parameters")
	if ph == "" && h.Get("X-YT-Parameters0") != "" {
		var b strings.Builder
		for i := 0; ; i++ {
			part := h.Get(fmt.Sprintf("X-YT-Parameters%d", i))
			if part == "" {
				break
			}
			b.WriteString(part)
		}
		dec, err := base64.StdEncoding.DecodeString(b.String())
		if err != nil {
			return "", fmt.Errorf("split X-YT-Parameters: %w", err)
		}
		ph = string(dec)
	}
	var params struct {
		Path      string `yson:"path" json:"path"`
		QueuePath string `yson:"queue_path" json:"queue_path"`
	}
	var err error
	if strings.Contains(h.Get("X-YT-Header-Format"), "json") {
		err = json.Unmarshal([]byte(ph), &params)
	} else {
		err = yson.Unmarshal([]byte(ph), &params)
	}
	if err != nil {
		return "", fmt.Errorf("X-YT-Parameters %q: %w", ph, err)
	}
	if params.QueuePath != "" {
		return params.QueuePath, nil
	}
	if params.Path == "" {
		return "", errors.New("X-YT-Parameters without path")
	}
	return params.Path, nil
}

// count tallies one write request; it reads the body and puts it back.
func (c *TableCounter) count(cmd string, r *http.Request) error {
	if r.Body == nil {
		return nil
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return fmt.Errorf("table counter: read %s body: %w", cmd, err)
	}
	_ = r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.TransferEncoding = nil
	path, err := requestPath(r.Header)
	rows := 0
	if err == nil {
		var plain []byte
		if plain, err = decodeBody(r.Header.Get("Content-Encoding"), body); err == nil {
			rows, err = CountRows(plain)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.bad++
		return nil
	}
	c.rows[TableCommand{cmd, path}] += int64(rows)
	return nil
}

// Addr is the proxy's "127.0.0.1:port".
func (c *TableCounter) Addr() string { return c.ln.Addr().String() }

// Rows returns a copy of the rows counted so far per command and table, and how many
// write requests could not be attributed (unreadable parameters or body).
func (c *TableCounter) Rows() (rows map[TableCommand]int64, bad int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rows = make(map[TableCommand]int64, len(c.rows))
	for k, v := range c.rows {
		rows[k] = v
	}
	return rows, c.bad
}

// FormatTableRows lists rows per command and table, most first, each divided by per (for
// example the number of input messages), with the table path relative to root.
func FormatTableRows(rows map[TableCommand]int64, root string, per float64) string {
	keys := make([]TableCommand, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if rows[keys[i]] != rows[keys[j]] {
			return rows[keys[i]] > rows[keys[j]]
		}
		return keys[i].Command+keys[i].Path < keys[j].Command+keys[j].Path
	})
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		p := strings.TrimPrefix(strings.TrimPrefix(k.Path, root), "/")
		fmt.Fprintf(&b, "%s %s %.3f", k.Command, p, float64(rows[k])/per)
	}
	return b.String()
}

// Close stops the proxy.
func (c *TableCounter) Close() error {
	defer c.transport.CloseIdleConnections()
	if err := c.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
