package job

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/internal/jobauth"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/ytql"
	"github.com/ytflow/yt-flow/ytstore"
)

// TestUnauthenticatedPushRefused: a push without a proof, or with one made with another
// secret, is refused with 401, counted, and reaches no inbox; so is a stats read. A push
// signed with the worker's secret is accepted.
func TestUnauthenticatedPushRefused(t *testing.T) {
	j := ytstore.Job{JobID: "j1", ComputationID: "count"}
	w, r, addr := newTestWorker(t, j)
	rows := []ytstore.OutputRow{{MessageID: "m1", StreamID: "words", Key: epoch.EncodeKey(flow.Key{"a"}), KeyHash: 1}}

	_, err := push(context.Background(), httpClient(), nil, route{jobID: "j1", address: addr}, "count", rows)
	require.ErrorContains(t, err, "HTTP 401", "a push without proof")
	_, err = push(context.Background(), httpClient(), []byte("another pipeline's secret......."), route{jobID: "j1", address: addr}, "count", rows)
	require.ErrorContains(t, err, "HTTP 401", "a push signed with another secret")
	assert.Equal(t, 0, r.inbox.len(), "no refused message is buffered")

	get := func(path string, key []byte) *http.Response {
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		require.NoError(t, err)
		signRequest(req, key, nil)
		resp, err := httpClient().Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { _ = resp.Body.Close() })
		return resp
	}
	assert.Equal(t, http.StatusUnauthorized, get("/stats", nil).StatusCode)
	assert.Equal(t, http.StatusUnauthorized, get("/stats/transport", nil).StatusCode)

	resp := get("/stats/transport", testKey)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var ts TransportStats
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&ts))
	assert.Equal(t, int64(4), ts.Unauthenticated, "every refused request is counted")
	assert.Equal(t, ts, w.TransportStats())

	go func() {
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if got := r.inbox.take(10); len(got) > 0 {
				r.inbox.ack([]string{"m1"})
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	acked, err := push(context.Background(), httpClient(), testKey, route{jobID: "j1", address: addr}, "count", rows)
	require.NoError(t, err)
	assert.Equal(t, []string{"m1"}, acked, "a signed push is served")
}

// TestPushUnderRotatedSecret: after a rotation a receiver accepts pushes signed with the new
// secret and with the one it replaced, and refuses older ones.
func TestPushUnderRotatedSecret(t *testing.T) {
	j := ytstore.Job{JobID: "j1", ComputationID: "count", LowerKey: 10, UpperKey: 20}
	w, _, addr := newTestWorker(t, j)
	newKey := []byte("rotated-transport-secret-0123456")
	w.auth.keys.Store(&jobauth.Keys{Current: newKey, Previous: testKey})
	out := []ytstore.OutputRow{{MessageID: "m", KeyHash: 25, Key: epoch.EncodeKey(nil)}} // not the job's: answered at once
	for _, key := range [][]byte{newKey, testKey} {
		_, err := push(context.Background(), httpClient(), key, route{jobID: "j1", address: addr}, "count", out)
		require.NoError(t, err)
	}
	w.auth.keys.Store(&jobauth.Keys{Current: []byte("rotated-again-transport-secret-0"), Previous: newKey})
	_, err := push(context.Background(), httpClient(), testKey, route{jobID: "j1", address: addr}, "count", out)
	require.ErrorContains(t, err, "HTTP 401", "a key two rotations old")
	assert.True(t, w.auth.stale.Load(), "a proof matching no key makes the worker read the secret again")
}

// TestReplayedPushIsHarmless captures a signed push exactly as it went over the wire and
// sends it again: the replay is acknowledged (the proof is still fresh) and its message
// counts once, as any retransmission (dedup by message id).
func TestReplayedPushIsHarmless(t *testing.T) {
	e := startWordCountOpts(t, nil, nil)
	e.putJob("count-0", "count", "count-p0", -1)
	e.eventually("the job to run", func() bool { return e.worker.runner("count-0") != nil })
	e.eventually("the worker to read its secret", func() bool { return e.worker.signingKey() != nil })

	keys, err := e.store.TransportSecret(e.ctx)
	require.NoError(t, err)
	require.Equal(t, keys.Current, e.worker.signingKey(), "the worker signs with the pipeline's secret")

	key := flow.Key{ytql.FarmHash("replayed"), "replayed"}
	payload, err := yson.Marshal(flow.Row{"word": "replayed"})
	require.NoError(t, err)
	body := encodePush("count-0", "count", pushTag{}, []*ytstore.OutputRow{{
		MessageID: "m-replayed", StreamID: "words", Key: epoch.EncodeKey(key), KeyHash: epoch.KeyHash(key), Payload: payload,
	}})
	captured, err := http.NewRequest(http.MethodPost, "http://"+e.worker.Addr()+"/push", nil)
	require.NoError(t, err)
	captured.Header.Set("Content-Type", pushContentType)
	captured.Header.Set("Accept", ackContentType)
	signRequest(captured, keys.Current, body)

	send := func() pushResponse {
		t.Helper()
		req := captured.Clone(e.ctx)
		req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		resp, err := httpClient().Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		pr, err := decodeAcks(b)
		require.NoError(t, err)
		return pr
	}
	assert.Equal(t, []string{"m-replayed"}, send().Acked)
	e.waitCounts(map[string]int64{"replayed": 1})
	e.waitInboxEmpty("count-0")
	assert.Equal(t, []string{"m-replayed"}, send().Acked, "the replay is acknowledged as a duplicate")
	e.eventually("the replay to be dropped", func() bool { return e.worker.Stats()["count-0"].Duplicates >= 1 })
	e.waitCounts(map[string]int64{"replayed": 1})
	assert.Zero(t, e.worker.TransportStats().Unauthenticated)
}

// TestWorkerReadsRotatedSecret: after a rotation (yt-flow start) a running worker signs with
// the new key within a status period, and still accepts pushes signed with the old one.
func TestWorkerReadsRotatedSecret(t *testing.T) {
	e := startWordCountOpts(t, nil, func(c *Config) { c.StatusPeriod = 100 * time.Millisecond })
	e.eventually("the worker to read its secret", func() bool { return e.worker.signingKey() != nil })
	old := e.worker.signingKey()
	require.NoError(t, e.store.RotateTransportSecret(e.ctx, rand.Reader))
	keys, err := e.store.TransportSecret(e.ctx)
	require.NoError(t, err)
	e.eventually("the worker to sign with the rotated key", func() bool { return bytes.Equal(e.worker.signingKey(), keys.Current) })

	for _, key := range [][]byte{keys.Current, old} {
		req, err := http.NewRequest(http.MethodGet, "http://"+e.worker.Addr()+"/stats", nil)
		require.NoError(t, err)
		signRequest(req, key, nil)
		resp, err := httpClient().Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	}
}

func TestAdvertisedAddress(t *testing.T) {
	for _, tc := range []struct{ addr, host, want string }{
		{"[::]:4242", "node-1.example.com", "node-1.example.com:4242"},
		{"0.0.0.0:80", "10.0.0.7", "10.0.0.7:80"},
		{"0.0.0.0:80", "fe80::1", "[fe80::1]:80"},
		{"not-an-address", "h", "not-an-address"},
	} {
		if got := advertised(tc.addr, tc.host); got != tc.want {
			t.Errorf("advertised(%q, %q) = %q, want %q", tc.addr, tc.host, got, tc.want)
		}
	}
}
