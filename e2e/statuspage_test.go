package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// chromium returns the path of a Chromium (or Chrome) binary. Without one the test is
// skipped, except under CI=true, where .ci/run installs Debian's chromium and a missing one
// is a failure.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no Chromium installed (chromium, chromium-browser, google-chrome or headless-shell on PATH); .ci/run installs Debian's chromium")
	}
	t.Skip("no Chromium installed (chromium, chromium-browser, google-chrome or headless-shell on PATH): apt-get install chromium to run this test")
	return ""
}

// browser starts a headless Chromium for the test and returns its tab's context. The
// browser is closed when the test ends, and its process killed by pid even when that fails.
func browser(t *testing.T, path string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(filepath.Join(t.TempDir(), "chromium-profile")),
		chromedp.WindowSize(1400, 1000),
		chromedp.Flag("disable-gpu", true),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses its sandbox as root
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	// The first Run starts the browser; it must not have a timeout (it would stop the
	// browser with it).
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		cancel()
		acancel()
		t.Fatalf("start Chromium %s: %v", path, err)
	}
	if tok := os.Getenv("YT_TOKEN"); tok != "" {
		// A cluster with authentication: the page wants the token, as the CLI does.
		err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			if _, err := cdp.Call(ctx, t, network.Enable, network.EnableParams{}); err != nil {
				return err
			}
			_, err := cdp.Call(ctx, t, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": "OAuth " + tok}})
			return err
		}))
		if err != nil {
			cancel()
			acancel()
			t.Fatalf("give Chromium the token: %v", err)
		}
	}
	pid := 0
	if c := chromedp.FromContext(ctx); c != nil && c.Browser != nil && c.Browser.Process() != nil {
		pid = c.Browser.Process().Pid
	}
	t.Cleanup(func() {
		cancel()
		acancel()
		if pid != 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL) // gone already unless closing it failed
		}
	})
	return ctx
}

// eval evaluates a JavaScript expression in the tab, within 30 seconds.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(tctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// do runs browser actions within 30 seconds.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// statusText runs `yt-flow status` and returns its output.
func statusText(t *testing.T, c *Cluster, path string) string {
	t.Helper()
	p := Start(t, "status", "status", "--proxy", c.Proxy, "--path", path, "--log", "0")
	err, ok := p.Wait(time.Minute)
	if !ok || err != nil {
		t.Fatalf("yt-flow status: %v (exited %v)\n%s", err, ok, p.Log())
	}
	return p.Log()
}

var cols = regexp.MustCompile(`\s{2,}`)

// statusTable parses a table of `yt-flow status` (the lines under the line starting with
// header up to the next blank line) as first column → the other columns.
func statusTable(t *testing.T, out, header string) map[string][]string {
	t.Helper()
	rows := map[string][]string{}
	in := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, header):
			in = true
		case in && strings.TrimSpace(line) == "":
			return rows
		case in && strings.HasPrefix(line, "  ") && !strings.HasPrefix(strings.TrimSpace(line), "COMPUTATION") && !strings.HasPrefix(strings.TrimSpace(line), "STREAM"):
			f := cols.Split(strings.TrimSpace(line), -1)
			rows[f[0]] = f[1:]
		}
	}
	if !in {
		t.Fatalf("yt-flow status has no %q table:\n%s", header, out)
	}
	return rows
}

// pageRows reads a table of the page: row key (the attribute key of its tr) → data-field →
// text.
func pageRows(t *testing.T, ctx context.Context, table, key string) map[string]map[string]string {
	t.Helper()
	return eval[map[string]map[string]string](t, ctx, fmt.Sprintf(`Object.fromEntries(Array.from(document.querySelectorAll('#%s tr[data-%s]')).map(r =>
		[r.dataset[%q], Object.fromEntries(Array.from(r.querySelectorAll('td[data-field]')).map(td => [td.dataset.field, td.textContent.trim()]))]))`, table, key, key))
}

// compareWithStatus checks the numbers of the page against `yt-flow status`, read while
// the pipeline is at rest (paused or completed): state and target, spec versions, and per
// computation and stream the columns that do not age with the clock.
func compareWithStatus(t *testing.T, ctx context.Context, c *Cluster, path, url string) {
	t.Helper()
	do(t, ctx, "load the page", chromedp.Navigate(url), chromedp.WaitVisible(chromedp.ID("graph")))
	out := statusText(t, c, path)
	state := eval[string](t, ctx, `document.getElementById('pipeline-state').textContent`)
	target := eval[string](t, ctx, `document.getElementById('target-state').textContent`)
	if !stateRE(state, target).MatchString(out) {
		t.Errorf("page says state %s, target %s; yt-flow status says:\n%s", state, target, out)
	}
	specV := eval[string](t, ctx, `document.getElementById('spec-version').textContent`)
	dynV := eval[string](t, ctx, `document.getElementById('dynamic-spec-version').textContent`)
	if want := fmt.Sprintf("version %s, dynamic spec version %s", specV, dynV); !strings.Contains(out, want) {
		t.Errorf("page says spec %s, dynamic spec %s; yt-flow status says:\n%s", specV, dynV, out)
	}
	comps := statusTable(t, out, "computations (")
	page := pageRows(t, ctx, "computations", "computation")
	if len(page) != len(comps) || len(page) == 0 {
		t.Errorf("page computations %v, yt-flow status %v", page, comps)
	}
	for id, f := range comps { // PARTITIONS JOBS INPUT LAG IN FLIGHT LAG LAST COMMIT
		p := page[id]
		got := []string{p["partitions"], p["jobs"], p["input-lag"], p["in-flight"]}
		if strings.Join(got, "|") != strings.Join(f[:4], "|") {
			t.Errorf("computation %s: page %q, yt-flow status %q", id, got, f[:4])
		}
	}
	streams := statusTable(t, out, "streams (")
	pageStreams := pageRows(t, ctx, "streams", "stream")
	if len(pageStreams) != len(streams) || len(streams) == 0 {
		t.Errorf("page streams %v, yt-flow status %v", pageStreams, streams)
	}
	for id, f := range streams { // FROM TO IN FLIGHT LAG
		p := pageStreams[id]
		got := []string{p["from"], p["to"], p["in-flight"]}
		if strings.Join(got, "|") != strings.Join(f[:3], "|") {
			t.Errorf("stream %s: page %q, yt-flow status %q", id, got, f[:3])
		}
	}
	parts := eval[int](t, ctx, `document.querySelectorAll('#partitions tr[data-partition]').length`)
	if m := regexp.MustCompile(`partitions \((\d+)\), jobs`).FindStringSubmatch(out); m == nil || m[1] != fmt.Sprint(parts) {
		t.Errorf("page shows %d partitions; yt-flow status: %v", parts, m)
	}
}

// press clicks a button of the page and waits until the page it leads to is loaded; it
// returns that page's notice.
func press(t *testing.T, ctx context.Context, button string) string {
	t.Helper()
	// The mark tells the page the button leads to from the page it is on.
	eval[bool](t, ctx, `window.ytFlowPressed = true`)
	do(t, ctx, "press "+button, chromedp.Click(chromedp.ID("button-"+button)))
	var notice string
	Eventually(t, 30*time.Second, func() (bool, string) {
		notice = eval[string](t, ctx, `(!window.ytFlowPressed && document.readyState === 'complete' && document.getElementById('notice')) ? document.getElementById('notice').textContent : ''`)
		return notice != "", "no new page with a notice after pressing " + button
	})
	return notice
}

// stateRE matches the state line of `yt-flow status`.
func stateRE(state, target string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^state +` + regexp.QuoteMeta(state) + ` \(target ` + regexp.QuoteMeta(target) + `\)$`)
}

// waitState polls `yt-flow status` until it reports state (and target).
func waitState(t *testing.T, c *Cluster, path, state, target string) {
	t.Helper()
	want := stateRE(state, target)
	Eventually(t, 2*time.Minute, func() (bool, string) {
		out := statusText(t, c, path)
		return want.MatchString(out), "yt-flow status:\n" + out
	})
}

// pageState reloads the page until it shows state and target.
func pageState(t *testing.T, ctx context.Context, url, state, target string) {
	t.Helper()
	Eventually(t, time.Minute, func() (bool, string) {
		do(t, ctx, "load the page", chromedp.Navigate(url), chromedp.WaitVisible(chromedp.ID("graph")))
		s := eval[string](t, ctx, `document.getElementById('pipeline-state').textContent + '/' + document.getElementById('target-state').textContent`)
		return s == state+"/"+target, "page shows state/target " + s
	})
}

// TestStatusPageInChromium runs the word count with a controller serving its status page
// (--status-listen 127.0.0.1:0) and drives the page in a headless Chromium: the leader
// publishes the page's URL in @leader_controller_address and `yt-flow status` prints it; the
// page's graph holds the computations, source, sink and streams; at rest (paused, then
// completed) its numbers equal those of `yt-flow status`; Start and Pause set the target
// state, which the page and `yt-flow status` then show; a completed pipeline's buttons are
// disabled. One screenshot goes to the test's temp folder (STATUS_PAGE_SCREENSHOT names a
// file to copy it to).
func TestStatusPageInChromium(t *testing.T) {
	chrome := chromium(t)
	c := NewCluster(t)
	wc := NewWordCount(t, c, "statuspage", WordCountOptions{Messages: 60000, Words: 300, Tablets: 2, CountPartitions: 2, MaxRowsPerBatch: 200})
	wc.StartPipeline(t)
	// The pipeline starts paused: its first numbers are read at rest.
	if p := Start(t, "pause", "pause", "--proxy", c.Proxy, "--path", wc.Path); true {
		if err, ok := p.Wait(time.Minute); !ok || err != nil {
			t.Fatalf("yt-flow pause: %v\n%s", err, p.Log())
		}
	}
	ctl := Start(t, "controller", "controller", "--proxy", c.Proxy, "--path", wc.Path, "--period", "100ms",
		"--lease-timeout", "10s", "--session-timeout", "3s", "--status-listen", "127.0.0.1:0")
	var url string
	Eventually(t, 30*time.Second, func() (bool, string) {
		if ctl.Exited() {
			t.Fatalf("controller exited:\n%s", ctl.Log())
		}
		m := regexp.MustCompile(`status page at (http://127\.0\.0\.1:\d+/)`).FindStringSubmatch(ctl.Log())
		if m != nil {
			url = m[1]
		}
		return m != nil, "controller printed no status page URL"
	})
	wc.Worker(t, "worker-a")
	wc.Worker(t, "worker-b")
	waitState(t, c, wc.Path, "paused", "paused")
	out := statusText(t, c, wc.Path)
	if !regexp.MustCompile(`(?m)^leader +`+regexp.QuoteMeta(url)+`$`).MatchString(out) || !regexp.MustCompile(`(?m)^status page +`+regexp.QuoteMeta(url)+`$`).MatchString(out) {
		t.Errorf("yt-flow status does not name the page %s:\n%s", url, out)
	}
	if a, err := wc.Store.Attributes(context.Background()); err != nil || a.LeaderControllerAddress != url {
		t.Errorf("@leader_controller_address %v (%v), want %s", a, err, url)
	}

	ctx := browser(t, chrome)
	do(t, ctx, "load the page", chromedp.Navigate(url), chromedp.WaitVisible(chromedp.ID("graph")))
	nodes := eval[[]string](t, ctx, `Array.from(document.querySelectorAll('#graph g.node')).map(g => g.dataset.kind + ':' + g.dataset.id)`)
	sort.Strings(nodes)
	if want := "computation:count computation:split sink:out sink:table source:lines"; strings.Join(nodes, " ") != want {
		t.Errorf("graph nodes %v, want %s", nodes, want)
	}
	labels := eval[[]string](t, ctx, `Array.from(document.querySelectorAll('#graph text.stream')).map(e => e.textContent)`)
	for _, s := range []string{"lines", "words", "counts"} {
		if !strings.Contains(" "+strings.Join(labels, " ")+" ", " "+s+" ") {
			t.Errorf("graph lacks stream %s: labels %v", s, labels)
		}
	}
	compareWithStatus(t, ctx, c, wc.Path, url)

	// Start, then Pause while it works.
	if n := press(t, ctx, "start"); !strings.Contains(n, "working") {
		t.Errorf("notice after Start: %q", n)
	}
	waitState(t, c, wc.Path, "working", "working")
	Eventually(t, time.Minute, func() (bool, string) {
		n := wc.Counts(t)
		return len(n) > 0, "nothing counted yet"
	})
	if n := press(t, ctx, "pause"); !strings.Contains(n, "paused") {
		t.Errorf("notice after Pause: %q", n)
	}
	waitState(t, c, wc.Path, "paused", "paused")
	pageState(t, ctx, url, "paused", "paused")
	compareWithStatus(t, ctx, c, wc.Path, url)
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	png := filepath.Join(t.TempDir(), "status-page.png")
	if err := os.WriteFile(png, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	if dst := os.Getenv("STATUS_PAGE_SCREENSHOT"); dst != "" {
		_ = os.WriteFile(dst, shot, 0o644)
	}
	t.Logf("screenshot of the paused pipeline's page: %s", png)

	// Start again and let the finite pipeline complete.
	press(t, ctx, "start")
	waitState(t, c, wc.Path, "completed", "working")
	pageState(t, ctx, url, "completed", "working")
	compareWithStatus(t, ctx, c, wc.Path, url)
	disabled := eval[[]string](t, ctx, `Array.from(document.querySelectorAll('.controls button:disabled')).map(b => b.id)`)
	if strings.Join(disabled, " ") != "button-start button-pause button-stop" {
		t.Errorf("disabled buttons of a completed pipeline: %v", disabled)
	}
	wc.CheckExactlyOnce(t)
}
