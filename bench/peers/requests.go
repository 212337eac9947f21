package peers

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/ytflow/yt-flow/internal/inproc"
)

// requestCounter counts the requests a server serves in process, by command (the last
// element of the URL path: lookup_rows, start_tx, …). It wraps the server registered at an
// address, so every client of the process that reaches that address is counted.
type requestCounter struct {
	inner inproc.Server
	mu    sync.Mutex
	n     map[string]int64
}

// countRequests wraps the in-process server at addr; unregister restores nothing (the
// server's own Close unregisters it) and only removes the wrapper.
func countRequests(addr string) (*requestCounter, func(), error) {
	inner, ok := inproc.Lookup(addr)
	if !ok {
		return nil, nil, fmt.Errorf("peers: no in-process server at %s", addr)
	}
	c := &requestCounter{inner: inner, n: map[string]int64{}}
	return c, inproc.Register(addr, c), nil
}

// Serve counts req and hands it to the wrapped server.
func (c *requestCounter) Serve(req *http.Request) (*http.Response, bool) {
	cmd := req.URL.Path[strings.LastIndexByte(req.URL.Path, '/')+1:]
	if cmd == "insert_rows" || cmd == "delete_rows" || cmd == "lookup_rows" {
		cmd += "(" + tableOf(req.Header.Get("X-YT-Parameters")) + ")"
	}
	c.mu.Lock()
	c.n[cmd]++
	c.mu.Unlock()
	return c.inner.Serve(req)
}

// snapshot returns a copy of the counts so far (nil for a nil counter).
func (c *requestCounter) snapshot() map[string]int64 {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.n))
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

// perEpoch is the requests served between two snapshots by command, divided by epochs.
func perEpoch(before, after map[string]int64, epochs int64) map[string]float64 {
	if epochs <= 0 || after == nil {
		return nil
	}
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = float64(d) / float64(epochs)
		}
	}
	return out
}

// writeRequests prints the requests per committed epoch (of all computations) by command,
// most frequent first.
func writeRequests(w io.Writer, label string, per map[string]float64) {
	if len(per) == 0 {
		return
	}
	keys := make([]string, 0, len(per))
	total := 0.0
	for k, v := range per {
		keys = append(keys, k)
		total += v
	}
	sort.Slice(keys, func(i, j int) bool {
		if per[keys[i]] != per[keys[j]] {
			return per[keys[i]] > per[keys[j]]
		}
		return keys[i] < keys[j]
	})
	fmt.Fprintf(w, "requests per epoch, %s: total %.2f:", label, total)
	for _, k := range keys {
		fmt.Fprintf(w, " %s %.2f", k, per[k])
	}
	fmt.Fprintln(w)
}

// tableOf is the last element of the first YPath ("//…") in a request's YSON parameters
// (the table a row command writes or reads), or "?" when there is none.
func tableOf(params string) string {
	i := strings.Index(params, "//")
	if i < 0 {
		return "?"
	}
	p := params[i:]
	if i = strings.IndexAny(p, "\";<>{}[]"); i >= 0 {
		p = p[:i]
	}
	return p[strings.LastIndexByte(p, '/')+1:]
}
