// Package httpsink is the asynchronous HTTP sink (TAsyncHttpSink): each committed output's
// payload column is POSTed to a URL with a stable Idempotency-Key, the lowercase hex of the
// message id. It is at-least-once — a message may be POSTed again after a failure or a
// restart, with the same key, so the receiver deduplicates on it — and refuses
// at_most_once_strategy. Its dynamic parameters (Dynamic) set the timeouts and the retry
// policy.
package httpsink

import (
	"math"
	"math/rand/v2"
	"net/url"
	"strings"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/yson"
)

// Class is the canonical name of the HTTP sink.
const Class = "async_http"

// Params are the parameters of TAsyncHttpSink.
type Params struct {
	URL, PayloadColumn string // required
	Headers            map[string]string
	IdempotencyHeader  string // default "Idempotency-Key"; "" disables
	KeepAlive          bool   // default true
	MaxRedirectCount   int64
	MaxIdleConnections int64 // default 8
}

func init() {
	registry.Register(registry.Class{
		Name: Class, Role: registry.Sink, FlowNames: []string{"NYT::NFlow::TAsyncHttpSink"}, Aliases: []string{"http"},
		Guarantee: registry.AtLeastOnce, Kind: registry.AsyncSink, SingleInput: true, Runs: true,
		AtMostOnceRefusal: "the HTTP sink does not support at_most_once_strategy (it is at-least-once)",
		Summary:           "POSTs each committed output's payload with a stable Idempotency-Key",
		Parse:             parse,
		ParseDynamic:      parseDynamic,
		Validate:          validate,
	})
	connector.RegisterSink(Class, connector.Constructors{
		AsyncSink: func(env connector.Env, params any) (connector.AsyncSink, error) {
			dyn, _ := env.Dynamic.(*Dynamic)
			return newSink(env.SinkID, params.(*Params), dyn, nil, rand.Uint64()), nil
		},
	})
}

func parse(f *yson.Fields) any {
	h := &Params{}
	h.URL = f.RequiredString("url")
	if h.URL != "" {
		u, err := url.Parse(h.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			f.Errorf("url", "%q is not an http or https URL with a host", h.URL)
		}
	}
	h.PayloadColumn = f.RequiredString("payload_column")
	if hn := f.Node("headers"); hn != nil {
		h.Headers = map[string]string{}
		f.Walker().Each(hn, f.Path("headers"), func(k string, v *yson.Node, path string) {
			h.Headers[k], _ = f.Walker().String(v, path)
		})
	}
	h.IdempotencyHeader = f.String("idempotency_header", "Idempotency-Key")
	for k := range h.Headers {
		if h.IdempotencyHeader != "" && strings.EqualFold(k, h.IdempotencyHeader) {
			f.Errorf("idempotency_header", "conflicts with static header %q", k)
		}
	}
	h.KeepAlive = f.Bool("keep_alive", true)
	h.MaxRedirectCount = f.Int("max_redirect_count", 0, 0, 100)
	h.MaxIdleConnections = f.Int("max_idle_connections", 8, 0, math.MaxInt32)
	return h
}

// validate checks that the single input stream has a string payload column.
func validate(params any, inputs []registry.Input, report func(key, format string, args ...any)) {
	h := params.(*Params)
	if h.PayloadColumn == "" || len(inputs) != 1 {
		return
	}
	for _, c := range inputs[0].Schema.Columns {
		if c.Name == h.PayloadColumn && (c.Type == schema.TypeBytes || c.Type == schema.TypeString) {
			return
		}
	}
	report("payload_column", "stream %q has no string column %q", inputs[0].ID, h.PayloadColumn)
}
