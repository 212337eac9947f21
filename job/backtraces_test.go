// The worker's goroutine dumps for yt-flow get-worker-backtraces.

package job

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWorkerServesBacktraces: the transport endpoint serves goroutine dumps to loopback
// clients and refuses other hosts.
func TestWorkerServesBacktraces(t *testing.T) {
	w := NewWorker(Config{})
	srv := httptest.NewServer(http.HandlerFunc(w.serveHTTP))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/debug/pprof/goroutine?debug=2")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.True(t, strings.HasPrefix(string(body), "goroutine "), "a goroutine dump: %.80s", body)

	req := httptest.NewRequest(http.MethodGet, "/debug/pprof/goroutine?debug=2", nil)
	req.RemoteAddr = "192.0.2.7:40000"
	rec := httptest.NewRecorder()
	w.serveHTTP(rec, req)
	assert.Equal(t, http.StatusForbidden, rec.Code, "another host gets no dump")
}
