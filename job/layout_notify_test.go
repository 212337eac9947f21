// A POST /layout from the controller makes the worker poll the layout at once.

package job

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLayoutNotificationWakesPoll checks the worker's POST /layout: it answers 204 and wakes
// the poll loop (one pending wake, however many notifications arrive); other methods are
// refused and wake nothing.
func TestLayoutNotificationWakesPoll(t *testing.T) {
	w := withTestKey(NewWorker(Config{Proxy: "127.0.0.1:1", Path: "//tmp/p"}))
	h := handlerOf(w)
	signed := func(method string) *http.Request {
		req := httptest.NewRequest(method, "/layout", nil)
		signRequest(req, testKey, nil)
		return req
	}

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/layout", nil))
	require.Equal(t, http.StatusUnauthorized, rec.Code, "a notification without proof is refused")
	require.Len(t, w.marksChanged, 0, "a refused request must not wake the worker")

	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, signed(http.MethodGet))
	require.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	require.Len(t, w.marksChanged, 0, "a refused request must not wake the worker")

	for range 3 {
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, signed(http.MethodPost))
		require.Equal(t, http.StatusNoContent, rec.Code)
	}
	require.Len(t, w.marksChanged, 1, "notifications coalesce into one pending wake")
}
