package httpsink_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/ytflow/yt-flow/connectors/connectortest"
	"github.com/ytflow/yt-flow/ytstore"
)

// target is a loopback HTTP server that records the body and the Idempotency-Key of every
// POST it answers with 200.
type target struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []received
}

type received struct{ body, key string }

func newTarget() *target {
	tg := &target{}
	tg.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil || r.Method != http.MethodPost {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		tg.mu.Lock()
		tg.reqs = append(tg.reqs, received{body: string(b), key: r.Header.Get("Idempotency-Key")})
		tg.mu.Unlock()
		_, _ = io.WriteString(w, "ok")
	}))
	return tg
}

// ids returns the id of every request received, duplicates included, after checking that
// the requests deduplicated by Idempotency-Key hold each id exactly once: a key always
// comes with the same body, and no two keys carry the same id.
func (tg *target) ids(rows int) ([]uint64, error) {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	var ids []uint64
	byKey := map[string]string{}
	for _, r := range tg.reqs {
		id, err := strconv.ParseUint(r.body, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("body %q is not an id", r.body)
		}
		ids = append(ids, id)
		if r.key == "" {
			return nil, fmt.Errorf("id %d came without an Idempotency-Key", id)
		}
		if prev, ok := byKey[r.key]; ok && prev != r.body {
			return nil, fmt.Errorf("Idempotency-Key %s came with ids %s and %s", r.key, prev, r.body)
		}
		byKey[r.key] = r.body
	}
	seen := map[string]string{}
	for k, body := range byKey {
		if other, ok := seen[body]; ok {
			return nil, fmt.Errorf("id %s came with two Idempotency-Keys, %s and %s", body, other, k)
		}
		seen[body] = k
	}
	if len(seen) != rows {
		return nil, fmt.Errorf("deduplicated by Idempotency-Key the target holds %d ids, want %d", len(seen), rows)
	}
	return ids, nil
}

// TestHTTPSinkConformance: the HTTP sink delivers every row at least once while workers are
// killed between delivery and acknowledgement and the target fails, takes part of a
// delivery, or is slow; deduplicated by Idempotency-Key, the target holds each row exactly
// once (a resend carries the key of the first send).
func TestHTTPSinkConformance(t *testing.T) {
	const rows = 2000
	var mu sync.Mutex
	targets := map[string]*target{} // by root
	connectortest.RunSink(t, connectortest.Sink{
		Class:   "async_http",
		Rows:    rows,
		Payload: "body",
		Setup: func(_ context.Context, _ *ytstore.Store, root string) (string, error) {
			tg := newTarget()
			t.Cleanup(tg.srv.Close)
			mu.Lock()
			targets[root] = tg
			mu.Unlock()
			return fmt.Sprintf("{url = %q; payload_column = body}", tg.srv.URL+"/ingest"), nil
		},
		ReadBack: func(_ context.Context, _ *ytstore.Store, root string) ([]uint64, error) {
			mu.Lock()
			tg := targets[root]
			mu.Unlock()
			return tg.ids(rows)
		},
	})
}
