// Tests of the FaultAckDelay fault-injection knob.

package job

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/ytql"
	"github.com/ytflow/yt-flow/ytstore"
)

// TestAckDelayHoldsCommittedAcks pushes one message to a worker whose FaultAckDelay is far
// longer than the test: the message's epoch commits (its count is visible in the result table)
// while the push reply, which would acknowledge it, is still held back. The sender, abandoning
// the push, never learns of the commit: it keeps the message and would retransmit it.
func TestAckDelayHoldsCommittedAcks(t *testing.T) {
	e := startWordCountOpts(t, nil, func(c *Config) { c.FaultAckDelay = time.Hour })
	e.putJob("count-0", "count", "count-p0", -1)
	e.eventually("the job to run", func() bool { return e.worker.runner("count-0") != nil })

	key := flow.Key{ytql.FarmHash("held"), "held"}
	payload, err := yson.Marshal(flow.Row{"word": "held"})
	require.NoError(t, err)
	body, err := json.Marshal(pushRequest{JobID: "count-0", Computation: "count", Messages: []wireMessage{{
		ID: "m-held", Stream: "words", Key: epoch.EncodeKey(key), KeyHash: epoch.KeyHash(key), Payload: payload,
	}}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+e.worker.Addr()+"/push", bytes.NewReader(body))
	require.NoError(t, err)
	signRequest(req, e.worker.signingKey(), body)
	replied := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		replied <- err
	}()

	e.waitCounts(map[string]int64{"held": 1})
	select {
	case err := <-replied:
		t.Fatalf("the push was answered (err %v) although the ack delay holds every acknowledging reply", err)
	default:
	}
	// The sender gives up on the push (as on a timeout); the held reply is abandoned with it.
	cancel()
	select {
	case err := <-replied:
		assert.ErrorIs(t, err, context.Canceled, "the push ends without an acknowledgement")
	case <-time.After(30 * time.Second):
		t.Fatal("the abandoned push did not end")
	}
}

// TestAckDelayStillAcknowledges: a held reply, once the delay has passed, acknowledges exactly
// the committed messages, as without the delay.
func TestAckDelayStillAcknowledges(t *testing.T) {
	j := ytstore.Job{JobID: "j1", ComputationID: "count"}
	w, r, addr := newTestWorker(t, j)
	w.cfg.FaultAckDelay = 50 * time.Millisecond
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
	rows := []ytstore.OutputRow{
		{MessageID: "m1", StreamID: "words", Key: epoch.EncodeKey(flow.Key{"a"}), KeyHash: 1},
		{MessageID: "m2", StreamID: "words", Key: epoch.EncodeKey(flow.Key{"b"}), KeyHash: 2},
	}
	acked, err := push(context.Background(), httpClient(), testKey, route{jobID: "j1", address: addr}, "count", rows)
	require.NoError(t, err)
	assert.Equal(t, []string{"m1"}, acked, "the delayed reply acknowledges what committed, nothing else")
}
