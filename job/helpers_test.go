// Small helpers shared by the package's tests.

package job

import (
	"net/http"
	"time"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/internal/jobauth"
)

func handlerOf(w *Worker) http.Handler { return http.HandlerFunc(w.serveHTTP) }

// testKey is the transport secret of workers made without a store (withTestKey).
var testKey = []byte("test-transport-secret-0123456789")

// withTestKey gives w testKey as its transport secret, as reading the store would, and
// returns w.
func withTestKey(w *Worker) *Worker {
	w.auth.keys.Store(&jobauth.Keys{Current: testKey})
	return w
}

func httpClient() *http.Client { return &http.Client{Timeout: 10 * time.Second} }

func schemaColumn(name, expr string) schema.Column {
	c := schema.Column{Name: name, Type: schema.TypeString, Expression: expr}
	if expr != "" {
		c.Type = schema.TypeUint64
	}
	return c
}
