package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yt"
	"go.ytsaurus.tech/yt/go/yt/ythttp"
	"go.ytsaurus.tech/yt/go/yterrors"

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

// TestWordCountUnderLocalAuth runs the word count on `yt-flow local --auth`: every process
// (start, controller, worker, status) authenticates with $YT_TOKEN as alice. The pipeline
// completes exactly once; the transport secret it created is readable by alice but not by
// bob (another user of the server: code 901) nor without a token (code 900). No output of
// any process — the server's debug log included — holds either token.
func TestWordCountUnderLocalAuth(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e test")
	}
	if os.Getenv("YT_PROXY") != "" {
		t.Skip("runs its own yt-flow local --auth")
	}
	alice, bob := randomToken(t), randomToken(t)
	users := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(users, []byte("# test users\nalice "+alice+"\nbob "+bob+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("YT_TOKEN", alice)
	c := NewAuthCluster(t, users)
	wc := NewWordCount(t, c, "authwc", WordCountOptions{Messages: 2000, Words: 50, Tablets: 2, CountPartitions: 2, Seed: 2})
	procs := []*Proc{c.Local()}
	start := Start(t, "start", "start", "--proxy", c.Proxy, "--spec", wc.SpecFile)
	procs = append(procs, start)
	if err, ok := start.Wait(2 * time.Minute); !ok || err != nil {
		t.Fatalf("yt-flow start: %v (exited %v)\n%s", err, ok, start.Log())
	}
	procs = append(procs, wc.Controller(t, "controller"), Start(t, "worker", "worker", "--proxy", c.Proxy, "--path", wc.Path, "--id", "worker", "-v"))
	Eventually(t, 3*time.Minute, func() (bool, string) {
		s := wc.State()
		return s == "completed", fmt.Sprintf("pipeline state %q", s)
	})
	wc.CheckExactlyOnce(t)
	status := Start(t, "status", "status", "--proxy", c.Proxy, "--path", wc.Path)
	procs = append(procs, status)
	if err, ok := status.Wait(time.Minute); !ok || err != nil {
		t.Errorf("yt-flow status: %v (exited %v)\n%s", err, ok, status.Log())
	}

	secret := ypath.Path(wc.Path).Child("transport_secret")
	read := func(token string) error {
		yc, err := ythttp.NewClient(&yt.Config{Proxy: c.Proxy, Token: token})
		if err != nil {
			t.Fatal(err)
		}
		defer yc.Stop()
		var v any
		return yc.GetNode(context.Background(), secret, &v, nil)
	}
	if err := read(alice); err != nil {
		t.Errorf("alice, the pipeline's user, cannot read %s: %v", secret, err)
	}
	if err := read(bob); !yterrors.ContainsErrorCode(err, yterrors.CodeAuthorizationError) {
		t.Errorf("bob reads %s: %v, want code 901", secret, err)
	}
	// Without a token (the SDK would take $YT_TOKEN): refused.
	resp, err := http.Get("http://" + c.Proxy + "/api/v4/get?path=" + string(secret))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a request without a token: HTTP %d, want 401", resp.StatusCode)
	}

	for _, p := range procs {
		out := p.Log()
		if out == "" {
			t.Errorf("%s wrote nothing: the check would prove nothing", p.Name)
		}
		for name, tok := range map[string]string{"alice": alice, "bob": bob} {
			if strings.Contains(out, tok) {
				t.Errorf("the output of %s holds %s's token", p.Name, name)
			}
		}
	}
}

// randomToken returns a fresh token of 32 hex digits.
func randomToken(t *testing.T) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
