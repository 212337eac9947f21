// Package statuspage is the status page of a pipeline, served by its leader controller
// (`yt-flow controller --status-listen ADDR`): the graph of computations, streams and sinks,
// per computation and stream the lag and backlog `yt-flow status` shows (package status),
// partitions with their jobs and workers, the errors jobs report, spec versions, pipeline
// and target state, and Start, Pause and Stop buttons that set the target state behind the
// checks of the CLI (status.SetTarget).
//
// Security, as YTsaurus Flow has it: showing the page needs the read permission on the
// pipeline node, changing the target state the write permission, both checked by the
// YTsaurus proxy for the requester's own token (ytstore.CheckPermission; a proxy without
// authentication, like ytlocal, allows everything and needs none). The token comes in an
// "Authorization: OAuth …" header or a cookie the sign-in form sets (HttpOnly,
// SameSite=Strict); it is never logged, shown or put in an error. State changes are POST
// only and carry a CSRF token: an HMAC, under a per-process secret, of a random nonce in a
// SameSite=Strict cookie (signed double submit). The page answers only to requests whose
// Host is an IP literal, localhost or a configured name (against DNS rebinding), and forbids
// framing.
package statuspage

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.ytsaurus.tech/library/go/core/log"
	"go.ytsaurus.tech/library/go/core/log/nop"

	"github.com/ytflow/yt-flow/status"
	"github.com/ytflow/yt-flow/ytstore"
)

// Pipeline is what the page needs of the pipeline it shows. Methods are called
// concurrently, one set per request.
type Pipeline interface {
	// Path names the pipeline node.
	Path() string
	// Snapshot reads the pipeline's status; ytstore.ErrNotFound when it does not exist.
	Snapshot(ctx context.Context) (*status.Snapshot, error)
	// SetTarget sets the target state behind status.CheckTarget: a *status.Refusal when
	// the pipeline's state does not allow it.
	SetTarget(ctx context.Context, target string) error
	// CheckPermission is ytstore.Store.CheckPermission: the user of token ("" none) and
	// whether they hold perm; ytstore.ErrUnauthenticated, ytstore.ErrAccessDenied.
	CheckPermission(ctx context.Context, token, perm string) (string, error)
}

// StorePipeline is the Pipeline of st, showing the last logLines controller log records.
func StorePipeline(st *ytstore.Store, logLines int) Pipeline { return storePipeline{st, logLines} }

type storePipeline struct {
	st       *ytstore.Store
	logLines int
}

func (p storePipeline) Path() string { return p.st.Path() }
func (p storePipeline) Snapshot(ctx context.Context) (*status.Snapshot, error) {
	return status.Read(ctx, p.st, p.logLines)
}
func (p storePipeline) SetTarget(ctx context.Context, target string) error {
	_, err := status.SetTarget(ctx, p.st, target)
	return err
}
func (p storePipeline) CheckPermission(ctx context.Context, token, perm string) (string, error) {
	return p.st.CheckPermission(ctx, token, perm)
}

// Config configures New.
type Config struct {
	// Pipeline is the pipeline shown. Required.
	Pipeline Pipeline
	// Secret keys the CSRF tokens. Default (nil): 32 random bytes, so the tokens of one
	// process are void in another.
	Secret []byte
	// Hosts are the host names, besides IP literals and "localhost", that requests may
	// name in their Host header (the name of a published URL). Default none.
	Hosts []string
	// Logger gets one line per target-state change (user, target) and per refused
	// request; nil discards. Tokens are never logged.
	Logger log.Structured
	// Timeout bounds the YTsaurus requests of one page request. Default 15s.
	Timeout time.Duration
	// Self is the URL this page is published under while its controller leads: a page
	// whose pipeline names another leader says that it is a standby's and links the
	// leader's. Default "": not compared.
	Self string
}

const (
	csrfCookie  = "yt_flow_csrf"
	tokenCookie = "yt_flow_token"
	csrfField   = "csrf_token"
)

// targets are the target states the page sets, by button.
var buttons = []struct{ Name, Label, Target string }{
	{"start", "Start", ytstore.TargetWorking},
	{"pause", "Pause", ytstore.TargetPaused},
	{"stop", "Stop", ytstore.TargetStopped},
}

//go:embed page.html
var pageHTML string

//go:embed style.css
var styleCSS []byte

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"add": func(a, b int) int { return a + b },
	"trunc": func(s string, n int) string {
		if r := []rune(s); len(r) > n {
			return string(r[:n-1]) + "…"
		}
		return s
	},
	"clock": func(us uint64) string { return time.UnixMicro(int64(us)).UTC().Format("15:04:05.000") },
}).Parse(pageHTML))

// Handler serves the status page; see the package comment for its endpoints and checks.
type Handler struct {
	cfg    Config
	secret []byte
	lg     log.Structured
}

// New returns the page's handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Pipeline == nil {
		return nil, errors.New("statuspage: no pipeline")
	}
	h := &Handler{cfg: cfg, secret: cfg.Secret, lg: cfg.Logger}
	if len(h.secret) == 0 {
		h.secret = make([]byte, 32)
		if _, err := rand.Read(h.secret); err != nil {
			return nil, fmt.Errorf("statuspage: secret: %w", err)
		}
	}
	if h.lg == nil {
		h.lg = (&nop.Logger{}).Structured()
	}
	if h.cfg.Timeout <= 0 {
		h.cfg.Timeout = 15 * time.Second
	}
	return h, nil
}

// ServeHTTP routes: GET / the page, GET /style.css, POST /target (target=working|paused|
// stopped), POST /login (token), POST /logout.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "same-origin") // not no-referrer: with it a browser sends "Origin: null" on the page's own POSTs
	hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	if !h.hostAllowed(r.Host) {
		http.Error(w, "unknown host name: open the page by its IP address or localhost", http.StatusMisdirectedRequest)
		return
	}
	post := map[string]func(http.ResponseWriter, *http.Request){"/target": h.setTarget, "/login": h.login, "/logout": h.logout}
	switch p := r.URL.Path; {
	case p == "/" || p == "/style.css":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			hd.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if p == "/style.css" {
			hd.Set("Content-Type", "text/css; charset=utf-8")
			_, _ = w.Write(styleCSS)
			return
		}
		h.page(w, r, notice{}, http.StatusOK)
	case post[p] != nil:
		if r.Method != http.MethodPost {
			hd.Set("Allow", "POST")
			http.Error(w, "method not allowed: state changes are POST only", http.StatusMethodNotAllowed)
			return
		}
		if !h.sameOrigin(r) {
			h.refuse(r, "cross-origin request")
			http.Error(w, "cross-origin request refused", http.StatusForbidden)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		if err := r.ParseForm(); err != nil {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		if !h.csrfValid(r) {
			h.refuse(r, "missing or wrong CSRF token")
			http.Error(w, "missing or wrong CSRF token: reload the page and try again", http.StatusForbidden)
			return
		}
		post[p](w, r)
	default:
		http.NotFound(w, r)
	}
}

func (h *Handler) refuse(r *http.Request, why string) {
	h.lg.Warn("status page refused a request", log.String("path", r.URL.Path), log.String("reason", why))
}

// hostAllowed reports whether the Host of a request is an IP literal, localhost or one of
// Config.Hosts (a name that an attacker's DNS could point at this address is not).
func (h *Handler) hostAllowed(host string) bool {
	name := host
	if hn, _, err := net.SplitHostPort(host); err == nil {
		name = hn
	}
	name = strings.Trim(name, "[]")
	if name == "localhost" || net.ParseIP(name) != nil {
		return true
	}
	for _, n := range h.cfg.Hosts {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

// sameOrigin reports whether a POST's Origin, when it has one, is this page's.
func (h *Handler) sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// csrfToken returns the CSRF token of the request's browser, setting the nonce cookie it
// derives from when the request has none.
func (h *Handler) csrfToken(w http.ResponseWriter, r *http.Request) string {
	nonce := ""
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) >= 16 {
		nonce = c.Value
	} else {
		b := make([]byte, 18)
		_, _ = rand.Read(b)
		nonce = base64.RawURLEncoding.EncodeToString(b)
		http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: nonce, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	}
	return h.mac(nonce)
}

func (h *Handler) mac(nonce string) string {
	m := hmac.New(sha256.New, h.secret)
	m.Write([]byte("yt-flow status page csrf\x00" + nonce))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// csrfValid reports whether a POST carries the token of its nonce cookie.
func (h *Handler) csrfValid(r *http.Request) bool {
	c, err := r.Cookie(csrfCookie)
	if err != nil || len(c.Value) < 16 {
		return false
	}
	got := r.PostForm.Get(csrfField)
	return got != "" && hmac.Equal([]byte(got), []byte(h.mac(c.Value)))
}

// requestToken is the YTsaurus token of a request: its Authorization header (OAuth or
// Bearer), else the sign-in cookie, else "".
func requestToken(r *http.Request) string {
	if a := r.Header.Get("Authorization"); a != "" {
		for _, scheme := range []string{"OAuth ", "Bearer "} {
			if len(a) > len(scheme) && strings.EqualFold(a[:len(scheme)], scheme) {
				return strings.TrimSpace(a[len(scheme):])
			}
		}
	}
	if c, err := r.Cookie(tokenCookie); err == nil {
		return c.Value
	}
	return ""
}

// notice is a line shown above the page.
type notice struct {
	text string
	ok   bool
}

// authorize checks that the requester holds perm; on failure it answers the request (the
// sign-in form for a missing or refused token) and returns false.
func (h *Handler) authorize(ctx context.Context, w http.ResponseWriter, r *http.Request, perm string) (string, bool) {
	user, err := h.cfg.Pipeline.CheckPermission(ctx, requestToken(r), perm)
	switch {
	case err == nil:
		return user, true
	case errors.Is(err, ytstore.ErrUnauthenticated):
		text := "The proxy refused the token."
		if requestToken(r) == "" {
			text = ""
		}
		h.login401(w, r, text)
	case errors.Is(err, ytstore.ErrAccessDenied):
		h.refuse(r, "permission denied")
		who := user
		if who == "" {
			who = "this user"
		}
		http.Error(w, fmt.Sprintf("permission denied: %s has no %s permission on %s", who, perm, h.cfg.Pipeline.Path()), http.StatusForbidden)
	case errors.Is(err, ytstore.ErrNotFound):
		http.Error(w, fmt.Sprintf("pipeline %s does not exist", h.cfg.Pipeline.Path()), http.StatusNotFound)
	default:
		http.Error(w, "cannot check permissions with the YTsaurus proxy: "+err.Error(), http.StatusBadGateway)
	}
	return "", false
}

func (h *Handler) login401(w http.ResponseWriter, r *http.Request, text string) {
	w.Header().Set("WWW-Authenticate", `OAuth realm="YTsaurus"`)
	h.render(w, http.StatusUnauthorized, &view{Login: true, Path: h.cfg.Pipeline.Path(), Base: "/", CSRF: h.csrfToken(w, r), Notice: text})
}

// page renders the status page with n.
func (h *Handler) page(w http.ResponseWriter, r *http.Request, n notice, code int) {
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.Timeout)
	defer cancel()
	user, ok := h.authorize(ctx, w, r, ytstore.PermissionRead)
	if !ok {
		return
	}
	if n.text == "" {
		if t := r.URL.Query().Get("set"); t != "" {
			for _, b := range buttons {
				if b.Target == t {
					n = notice{"Target state set to " + t + ".", true}
				}
			}
		}
	}
	s, err := h.cfg.Pipeline.Snapshot(ctx)
	if errors.Is(err, ytstore.ErrNotFound) {
		http.Error(w, fmt.Sprintf("pipeline %s does not exist", h.cfg.Pipeline.Path()), http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, "cannot read the pipeline: "+err.Error(), http.StatusBadGateway)
		return
	}
	v := newView(s, h.cfg.Pipeline.Path())
	if l := s.Attrs.LeaderControllerAddress; h.cfg.Self != "" && l != h.cfg.Self {
		v.Standby = "This controller is not the leader; the leader's page is at " + orDash(l) + "."
	}
	v.CSRF, v.User, v.Notice, v.NoticeOK = h.csrfToken(w, r), user, n.text, n.ok
	h.render(w, code, v)
}

func (h *Handler) render(w http.ResponseWriter, code int, v *view) {
	var b strings.Builder
	if err := pageTemplate.Execute(&b, v); err != nil {
		http.Error(w, "render: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(b.String()))
}

// setTarget is POST /target: with the write permission, set the target state and go back
// to the page (303), or show the page with the refusal (409).
func (h *Handler) setTarget(w http.ResponseWriter, r *http.Request) {
	target := r.PostForm.Get("target")
	known := false
	for _, b := range buttons {
		known = known || b.Target == target
	}
	if !known {
		http.Error(w, fmt.Sprintf("unknown target state %q", target), http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.Timeout)
	defer cancel()
	user, ok := h.authorize(ctx, w, r, ytstore.PermissionWrite)
	if !ok {
		return
	}
	err := h.cfg.Pipeline.SetTarget(ctx, target)
	var refusal *status.Refusal
	switch {
	case errors.As(err, &refusal):
		h.page(w, r, notice{text: "Refused: " + refusal.Reason}, http.StatusConflict)
		return
	case err != nil:
		http.Error(w, "cannot set the target state: "+err.Error(), http.StatusBadGateway)
		return
	}
	h.lg.Info("target state set from the status page", log.String("pipeline", h.cfg.Pipeline.Path()), log.String("user", user), log.String("target", target))
	http.Redirect(w, r, "/?set="+target, http.StatusSeeOther)
}

// login is POST /login: keep a token the proxy accepts with the read permission in an
// HttpOnly cookie.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	token := strings.TrimSpace(r.PostForm.Get("token"))
	if token == "" {
		h.login401(w, r, "Enter a token.")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.Timeout)
	defer cancel()
	if _, err := h.cfg.Pipeline.CheckPermission(ctx, token, ytstore.PermissionRead); err != nil {
		text := "The token has no read permission on the pipeline."
		if errors.Is(err, ytstore.ErrUnauthenticated) {
			text = "The proxy refused the token."
		} else if !errors.Is(err, ytstore.ErrAccessDenied) {
			text = "Cannot check the token with the YTsaurus proxy."
		}
		h.login401(w, r, text)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// logout is POST /logout: forget the token cookie.
func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
