package ytstore

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestCheckPermissionOnYtlocal: ytlocal has no authentication, so any token, and none, is
// root and holds every permission on an existing pipeline; a missing one is ErrNotFound.
func TestCheckPermissionOnYtlocal(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t, "//home/perm/pipe")
	if _, err := st.CheckPermission(ctx, "", PermissionRead); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing pipeline: %v, want ErrNotFound", err)
	}
	if err := st.CreatePipeline(ctx); err != nil {
		t.Fatal(err)
	}
	for _, token := range []string{"", "some-token"} {
		for _, perm := range []string{PermissionRead, PermissionWrite} {
			user, err := st.CheckPermission(ctx, token, perm)
			if err != nil || user != "root" {
				t.Errorf("token given %v, %s: user %q, %v; want root, nil", token != "", perm, user, err)
			}
		}
	}
}

// TestCheckPermissionRefusedToken: a proxy that refuses the token (401, code 900) gives
// ErrUnauthenticated, and the error does not hold the token even when the proxy quotes it;
// a request without a token carries no credentials (not the store's own).
func TestCheckPermissionRefusedToken(t *testing.T) {
	const secret = "AQAD-very-secret"
	var mu sync.Mutex
	var sawAuth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sawAuth = append(sawAuth, r.Header.Get("Authorization"))
		mu.Unlock()
		body := `{"code":900,"message":"Authentication failed for token ` + secret + `"}`
		w.Header().Set("X-YT-Error", body)
		w.Header().Set("X-YT-Response-Code", "900")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	st, err := Open(context.Background(), Config{Proxy: srv.Listener.Addr().String(), Path: "//p", Token: "store-own-token"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	ctx := context.Background()
	_, err = st.CheckPermission(ctx, secret, PermissionWrite)
	if !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("refused token: %v, want ErrUnauthenticated", err)
	}
	if strings.Contains(err.Error(), secret) {
		t.Fatalf("the error holds the token: %v", err)
	}
	_, err = st.CheckPermission(ctx, "", PermissionRead)
	if !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("no token: %v, want ErrUnauthenticated", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, a := range sawAuth {
		if strings.Contains(a, "store-own-token") {
			t.Fatalf("a permission check was sent with the store's own token")
		}
	}
	if len(sawAuth) < 2 || sawAuth[0] != "OAuth "+secret || sawAuth[len(sawAuth)-1] != "" {
		t.Fatalf("Authorization headers %q: want the token's, then none", sawAuth)
	}
}
