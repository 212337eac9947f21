package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ytflow/yt-flow/job"
)

// TestInjectedPushRefused runs the word count with one worker process and sends its
// transport endpoint what an outsider could: a push without a proof, one signed with another
// secret, and a stats read without a proof. Each is refused with 401 and counted on
// /stats/transport; the pipeline still counts every word exactly once. The worker says at
// start that its endpoint listens on loopback only.
func TestInjectedPushRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e test")
	}
	c := NewCluster(t)
	wc := NewWordCount(t, c, "auth", WordCountOptions{Messages: 2000, Words: 50, Tablets: 1, CountPartitions: 1, Seed: 1})
	wc.StartPipeline(t)
	wc.Controller(t, "controller")
	worker := wc.Worker(t, "worker-0")
	addr := WorkerAddr(t, worker)
	if !strings.Contains(worker.Log(), "loopback only") {
		t.Errorf("the worker does not say that its endpoint listens on loopback only:\n%s", tail(worker.Log(), 3000))
	}

	// A well-formed binary push of one message, as a sender would make it: only the proof is
	// missing or wrong.
	body := []byte{2, 7, 'c', 'o', 'u', 'n', 't', '-', '0', 5, 'c', 'o', 'u', 'n', 't', 0, 0, 0, 0}
	post := func(key []byte) int {
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/push", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-yt-flow-push")
		job.SignRequest(req, key, body)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(nil); code != http.StatusUnauthorized {
		t.Errorf("a push without a proof: HTTP %d, want 401", code)
	}
	if code := post([]byte("not-this-pipelines-secret-012345")); code != http.StatusUnauthorized {
		t.Errorf("a push signed with another secret: HTTP %d, want 401", code)
	}
	resp, err := http.Get("http://" + addr + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a stats read without a proof: HTTP %d, want 401", resp.StatusCode)
	}

	keys, err := wc.Store.TransportSecret(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if code := post(keys.Current); code != http.StatusOK {
		t.Errorf("a push signed with the pipeline's secret: HTTP %d, want 200", code)
	}
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/stats/transport", nil)
	if err != nil {
		t.Fatal(err)
	}
	job.SignRequest(req, keys.Current, nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var ts job.TransportStats
	err = json.NewDecoder(resp.Body).Decode(&ts)
	_ = resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if ts.Unauthenticated != 3 {
		t.Errorf("unauthenticated requests counted: %d, want 3", ts.Unauthenticated)
	}
	if !strings.Contains(worker.Log(), "refused an unauthenticated transport request") {
		t.Errorf("the worker does not log the refusals:\n%s", tail(worker.Log(), 3000))
	}

	Eventually(t, 3*time.Minute, func() (bool, string) {
		s := wc.State()
		return s == "completed", fmt.Sprintf("pipeline state %q", s)
	})
	wc.CheckExactlyOnce(t)
}
