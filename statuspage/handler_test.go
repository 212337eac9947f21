package statuspage

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	_ "github.com/ytflow/yt-flow/connectors/all" // the spec's classes
	"github.com/ytflow/yt-flow/ytlocal/ytlocaltest"
	"github.com/ytflow/yt-flow/ytstore"
)

const testSpec = `{
    computations = {
        split = {
            computation_class_name = "NYT::NFlow::TProcessFunctionSourceComputation";
            processing_function = "SplitWords";
            source_streams = {lines = {source_class_name = "NYT::NFlow::TQueueSource"; parameters = {queue_path = "//q/in"; consumer_path = "//q/c"}}};
            output_stream_ids = ["words"];
        };
        count = {
            computation_class_name = "NYT::NFlow::TProcessFunctionComputation";
            processing_function = "CountWords";
            group_by_schema = [{name = "hash"; type = "uint64"; required = %true; expression = "farm_hash(word)"}; {name = "word"; type = "string"; required = %true}];
            input_stream_ids = ["words"];
            output_stream_ids = ["counts"];
            sinks = {out = {sink_class_name = "NYT::NFlow::TAsyncQueueSink"; input_stream_ids = ["counts"]; parameters = {queue_path = "//q/out"; producer_path = "//q/p"}}};
        };
    };
    streams = {
        words = {schema = [{name = "word"; type = "string"; required = %true}]};
        counts = {schema = [{name = "hash"; type = "uint64"}; {name = "word"; type = "string"}; {name = "count"; type = "int64"}]};
    };
}`

// denying is a Pipeline whose proxy denies the permissions in deny (or refuses every token
// with unauthenticated).
type denying struct {
	Pipeline
	deny            map[string]bool
	unauthenticated bool
}

func (d denying) CheckPermission(ctx context.Context, token, perm string) (string, error) {
	if d.unauthenticated && token != "good-token" {
		return "", ytstore.ErrUnauthenticated
	}
	if d.deny[perm] {
		return "alice", fmt.Errorf("ytstore: %w: user alice has no %s permission", ytstore.ErrAccessDenied, perm)
	}
	return d.Pipeline.CheckPermission(ctx, token, perm)
}

type fixture struct {
	t   *testing.T
	st  *ytstore.Store
	srv *httptest.Server
}

// newFixture starts ytlocal with a pipeline holding testSpec, target working, and serves
// its page through wrap (nil: as it is).
func newFixture(t *testing.T, wrap func(Pipeline) Pipeline) *fixture {
	t.Helper()
	ctx := context.Background()
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: ytlocaltest.New(t), Path: "//home/page/pipe"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if err := st.CreatePipeline(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.SetSpecs(ctx, ytstore.SpecUpdate{Spec: []byte(testSpec), SpecVersion: 1, DynamicSpec: []byte("{}"), DynamicSpecVersion: 1, TargetState: ytstore.TargetWorking}); err != nil {
		t.Fatal(err)
	}
	p := StorePipeline(st, 10)
	if wrap != nil {
		p = wrap(p)
	}
	h, err := New(Config{Pipeline: p})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &fixture{t: t, st: st, srv: srv}
}

func (f *fixture) target() string {
	f.t.Helper()
	a, err := f.st.Attributes(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	return a.TargetState
}

// do sends a request without following redirects.
func (f *fixture) do(req *http.Request) (*http.Response, string) {
	f.t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

var csrfRE = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// session GETs the page and returns its CSRF cookie and token.
func (f *fixture) session() (*http.Cookie, string) {
	f.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/", nil)
	resp, body := f.do(req)
	if resp.StatusCode != http.StatusOK {
		f.t.Fatalf("GET /: %s\n%s", resp.Status, body)
	}
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		f.t.Fatalf("no CSRF token in the page")
	}
	for _, c := range resp.Cookies() {
		if c.Name == csrfCookie {
			if c.SameSite != http.SameSiteStrictMode || !c.HttpOnly {
				f.t.Errorf("CSRF cookie %+v: want SameSite=Strict, HttpOnly", c)
			}
			return c, m[1]
		}
	}
	f.t.Fatalf("no CSRF cookie")
	return nil, ""
}

func (f *fixture) post(path string, form url.Values, cookies ...*http.Cookie) (*http.Response, string) {
	f.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, c := range cookies {
		req.AddCookie(c)
	}
	return f.do(req)
}

// TestPageShowsPipeline: the page shows the graph (computations, sources, sinks, streams as
// SVG), the tables, the spec versions and states, and Start/Pause/Stop forms with a CSRF
// token; it is not cached and not framed.
func TestPageShowsPipeline(t *testing.T) {
	f := newFixture(t, nil)
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/", nil)
	resp, body := f.do(req)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /: %s\n%s", resp.Status, body)
	}
	for _, want := range []string{
		`data-kind="computation" data-id="split"`, `data-kind="computation" data-id="count"`,
		`data-kind="source" data-id="lines"`, `data-kind="sink" data-id="out"`,
		`<text class="stream"`, `>words</text>`, `>counts</text>`,
		`<tr data-computation="count">`, `<tr data-stream="lines">`, `id="spec-version">1<`,
		`id="target-state">working<`, `id="button-start"`, `id="button-pause"`, `id="button-stop"`,
		`name="csrf_token"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for h, want := range map[string]string{"Cache-Control": "no-store", "X-Frame-Options": "DENY"} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("%s: %q, want %q", h, got, want)
		}
	}
	req, _ = http.NewRequest(http.MethodGet, f.srv.URL+"/style.css", nil)
	if resp, _ := f.do(req); resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/css") {
		t.Errorf("GET /style.css: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
}

// TestGetCannotChangeState: the state-changing endpoints answer GET (and other methods
// than POST) with 405, and a GET with the form's fields changes nothing.
func TestGetCannotChangeState(t *testing.T) {
	f := newFixture(t, nil)
	_, token := f.session()
	for _, u := range []string{"/target?target=paused&csrf_token=" + url.QueryEscape(token), "/?target=paused&csrf_token=" + url.QueryEscape(token), "/logout"} {
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+u, nil)
		resp, _ := f.do(req)
		if u != "/?target=paused&csrf_token="+url.QueryEscape(token) && resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("GET %s: %s, want 405", u, resp.Status)
		}
	}
	req, _ := http.NewRequest(http.MethodPut, f.srv.URL+"/target", strings.NewReader("target=paused"))
	if resp, _ := f.do(req); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("PUT /target: %s, want 405", resp.Status)
	}
	req, _ = http.NewRequest(http.MethodPost, f.srv.URL+"/", strings.NewReader("target=paused"))
	if resp, _ := f.do(req); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %s, want 405", resp.Status)
	}
	if got := f.target(); got != ytstore.TargetWorking {
		t.Fatalf("target state %q after GETs, want working", got)
	}
}

// TestCSRFRefused: a POST without the CSRF token, with a wrong one, with the token but not
// its cookie, with another process's token, or from another origin is refused (403) and
// changes nothing; with both it sets the target state and redirects to the page.
func TestCSRFRefused(t *testing.T) {
	f := newFixture(t, nil)
	cookie, token := f.session()
	other := newFixture(t, nil)
	otherCookie, otherToken := other.session()
	for name, c := range map[string]struct {
		form    url.Values
		cookies []*http.Cookie
	}{
		"no token":             {url.Values{"target": {"paused"}}, []*http.Cookie{cookie}},
		"wrong token":          {url.Values{"target": {"paused"}, csrfField: {"x" + token}}, []*http.Cookie{cookie}},
		"no cookie":            {url.Values{"target": {"paused"}, csrfField: {token}}, nil},
		"other process":        {url.Values{"target": {"paused"}, csrfField: {otherToken}}, []*http.Cookie{otherCookie}},
		"token of other nonce": {url.Values{"target": {"paused"}, csrfField: {otherToken}}, []*http.Cookie{cookie}},
	} {
		resp, body := f.post("/target", c.form, c.cookies...)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "CSRF") {
			t.Errorf("%s: %s %q, want 403 naming CSRF", name, resp.Status, body)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/target", strings.NewReader(url.Values{"target": {"paused"}, csrfField: {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://evil.example")
	req.AddCookie(cookie)
	if resp, _ := f.do(req); resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin POST: %s, want 403", resp.Status)
	}
	if got := f.target(); got != ytstore.TargetWorking {
		t.Fatalf("target state %q after refused POSTs, want working", got)
	}
	resp, _ := f.post("/target", url.Values{"target": {"paused"}, csrfField: {token}}, cookie)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/?set=paused" {
		t.Fatalf("POST with CSRF token: %s to %q, want 303 to /?set=paused", resp.Status, resp.Header.Get("Location"))
	}
	if got := f.target(); got != ytstore.TargetPaused {
		t.Fatalf("target state %q, want paused", got)
	}
}

// TestPermissionDenied: without the write permission a valid POST is refused with 403 and
// changes nothing; without the read permission the page is 403; a proxy that wants a token
// shows the sign-in form (401) and no pipeline data.
func TestPermissionDenied(t *testing.T) {
	f := newFixture(t, func(p Pipeline) Pipeline {
		return denying{Pipeline: p, deny: map[string]bool{ytstore.PermissionWrite: true}}
	})
	cookie, token := f.session()
	resp, body := f.post("/target", url.Values{"target": {"stopped"}, csrfField: {token}}, cookie)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "no write permission") {
		t.Errorf("POST without write permission: %s %q, want 403", resp.Status, body)
	}
	if got := f.target(); got != ytstore.TargetWorking {
		t.Fatalf("target state %q, want working", got)
	}

	r := newFixture(t, func(p Pipeline) Pipeline {
		return denying{Pipeline: p, deny: map[string]bool{ytstore.PermissionRead: true}}
	})
	req, _ := http.NewRequest(http.MethodGet, r.srv.URL+"/", nil)
	resp, body = r.do(req)
	if resp.StatusCode != http.StatusForbidden || strings.Contains(body, "count") {
		t.Errorf("GET without read permission: %s %q, want 403 without data", resp.Status, body)
	}

	a := newFixture(t, func(p Pipeline) Pipeline { return denying{Pipeline: p, unauthenticated: true} })
	req, _ = http.NewRequest(http.MethodGet, a.srv.URL+"/", nil)
	resp, body = a.do(req)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, `name="token"`) || strings.Contains(body, "data-computation") {
		t.Errorf("GET without a token: %s, want 401 with the sign-in form only\n%s", resp.Status, body)
	}
}

// TestTokenNeverShown: a token given in the sign-in form goes into an HttpOnly,
// SameSite=Strict cookie, and neither the page nor an error shows it.
func TestTokenNeverShown(t *testing.T) {
	const secret = "good-token"
	f := newFixture(t, func(p Pipeline) Pipeline { return denying{Pipeline: p, unauthenticated: true} })
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/", nil)
	resp, body := f.do(req)
	m := csrfRE.FindStringSubmatch(body)
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == csrfCookie {
			cookie = c
		}
	}
	if m == nil || cookie == nil {
		t.Fatalf("sign-in form without CSRF token or cookie: %s", body)
	}
	resp, body = f.post("/login", url.Values{"token": {"bad-" + secret}, csrfField: {m[1]}}, cookie)
	if resp.StatusCode != http.StatusUnauthorized || strings.Contains(body, secret) {
		t.Errorf("bad token: %s, want 401 without the token in the page", resp.Status)
	}
	resp, _ = f.post("/login", url.Values{"token": {secret}, csrfField: {m[1]}}, cookie)
	var tok *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == tokenCookie {
			tok = c
		}
	}
	if resp.StatusCode != http.StatusSeeOther || tok == nil || !tok.HttpOnly || tok.SameSite != http.SameSiteStrictMode {
		t.Fatalf("sign in: %s, cookie %+v; want 303 and an HttpOnly SameSite=Strict cookie", resp.Status, tok)
	}
	req, _ = http.NewRequest(http.MethodGet, f.srv.URL+"/", nil)
	req.AddCookie(tok)
	resp, body = f.do(req)
	if resp.StatusCode != http.StatusOK || strings.Contains(body, secret) {
		t.Errorf("page after sign-in: %s; holds the token: %v", resp.Status, strings.Contains(body, secret))
	}
	req, _ = http.NewRequest(http.MethodGet, f.srv.URL+"/", nil)
	req.Header.Set("Authorization", "OAuth "+secret)
	if resp, _ := f.do(req); resp.StatusCode != http.StatusOK {
		t.Errorf("page with an Authorization header: %s", resp.Status)
	}
}

// TestRefusedTransition: a completed pipeline refuses every target (the CLI's rule): the
// POST shows the page with the refusal (409), the buttons are disabled, nothing changes.
func TestRefusedTransition(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	sess, err := f.st.StartSession(ctx, "test leader", 5e9)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	if err := f.st.LockLeader(ctx, sess); err != nil {
		t.Fatal(err)
	}
	if err := f.st.SetControllerAttributes(ctx, sess, ytstore.StateCompleted, "http://127.0.0.1:1/"); err != nil {
		t.Fatal(err)
	}
	cookie, token := f.session()
	resp, body := f.post("/target", url.Values{"target": {"paused"}, csrfField: {token}}, cookie)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "is completed (terminal); nothing to pause") ||
		!regexp.MustCompile(`id="button-pause"[^>]*disabled`).MatchString(body) {
		t.Errorf("pause a completed pipeline: %s, want 409 with the refusal and disabled buttons\n%s", resp.Status, body)
	}
	if got := f.target(); got != ytstore.TargetWorking {
		t.Fatalf("target state %q, want working", got)
	}
}

// TestHostChecked: a Host that is a name (DNS rebinding) is refused; IP literals and
// localhost are served.
func TestHostChecked(t *testing.T) {
	f := newFixture(t, nil)
	for host, want := range map[string]int{"evil.example": http.StatusMisdirectedRequest, "localhost:80": http.StatusOK, "127.0.0.1": http.StatusOK, "[::1]:8080": http.StatusOK} {
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/", nil)
		req.Host = host
		if resp, _ := f.do(req); resp.StatusCode != want {
			t.Errorf("Host %s: %s, want %d", host, resp.Status, want)
		}
	}
}

// TestStandbySaysWhereTheLeaderIs: the page of a controller that does not lead names the
// leader's page.
func TestStandbySaysWhereTheLeaderIs(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	sess, err := f.st.StartSession(ctx, "test leader", 5e9)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	if err := f.st.LockLeader(ctx, sess); err != nil {
		t.Fatal(err)
	}
	if err := f.st.SetControllerAttributes(ctx, sess, ytstore.StateWorking, "http://127.0.0.1:7001/"); err != nil {
		t.Fatal(err)
	}
	for self, standby := range map[string]bool{"http://127.0.0.1:7001/": false, "http://127.0.0.1:7002/": true} {
		h, err := New(Config{Pipeline: StorePipeline(f.st, 0), Self: self})
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/", nil))
		body := rec.Body.String()
		if got := strings.Contains(body, `id="standby"`) && strings.Contains(body, "the leader&#39;s page is at http://127.0.0.1:7001/"); got != standby {
			t.Errorf("page of %s says standby %v, want %v", self, got, standby)
		}
	}
}

// TestPageShowsJobErrors: the errors jobs report are the messages of their computation, in
// its table and as a marked box of the graph, escaped.
func TestPageShowsJobErrors(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	sess, err := f.st.StartSession(ctx, "test leader", 5e9)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	if err := f.st.LockLeader(ctx, sess); err != nil {
		t.Fatal(err)
	}
	err = f.st.ApplyLayout(ctx, sess, ytstore.LayoutChange{
		PutPartitions: []ytstore.Partition{{PartitionID: "count/0of1", ComputationID: "count", State: ytstore.PartitionActive}},
		PutJobs:       []ytstore.Job{{JobID: "j1", ComputationID: "count", PartitionID: "count/0of1", WorkerID: "w1", LeaseID: "0-0-0-0", SourcePartition: -1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.st.PutJobStatus(ctx, ytstore.JobStatus{JobID: "j1", WorkerID: "w1", State: ytstore.JobFailed, Error: "process: <script>boom</script>"}, ""); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/", nil)
	resp, body := f.do(req)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /: %s", resp.Status)
	}
	for _, want := range []string{
		`<ul class="messages" data-messages="count"><li>Job failed (JobFinishReason: Failed): process: &lt;script&gt;boom&lt;/script&gt; (JobId: j1, PartitionId: count/0of1, WorkerId: w1)</li></ul>`,
		`class="node computation warn" data-kind="computation" data-id="count"`,
		`<tr data-partition="count/0of1">`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(body, "<script>") {
		t.Errorf("the page holds an unescaped <script>")
	}
}
