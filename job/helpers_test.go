// Small helpers shared by the package's tests.

package job

import (
	"net/http"
	"time"

	"go.ytsaurus.tech/yt/go/schema"
)

func handlerOf(w *Worker) http.Handler { return http.HandlerFunc(w.serveHTTP) }

func httpClient() *http.Client { return &http.Client{Timeout: 10 * time.Second} }

func schemaColumn(name, expr string) schema.Column {
	c := schema.Column{Name: name, Type: schema.TypeString, Expression: expr}
	if expr != "" {
		c.Type = schema.TypeUint64
	}
	return c
}
