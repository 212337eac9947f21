package ytstore

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"go.ytsaurus.tech/yt/go/proto/core/rpc"
	"go.ytsaurus.tech/yt/go/yt"
	"go.ytsaurus.tech/yt/go/yterrors"
)

// Permissions checked on the pipeline node (YTsaurus permission names).
const (
	PermissionRead  = "read"
	PermissionWrite = "write"
)

var (
	// ErrUnauthenticated: the proxy refused the credentials of a request, or wanted some
	// and got none (YTsaurus code 900, HTTP 401).
	ErrUnauthenticated = errors.New("not authenticated")
	// ErrAccessDenied: the user lacks the permission (check_permission said deny; code 901).
	ErrAccessDenied = errors.New("access denied")
)

// CheckPermission checks that the bearer of token holds permission perm (PermissionRead,
// PermissionWrite) on the pipeline node, as YTsaurus Flow checks a user's request: it asks
// the proxy who token is (whoami) and whether that user may perm the node
// (check_permission), both with token's credentials — never with the store's own. An empty
// token sends the requests without credentials: a proxy without authentication (ytlocal)
// answers them, one with authentication refuses them. It returns the user's login.
//
// Errors: ErrUnauthenticated when the proxy refuses the token (or its absence),
// ErrAccessDenied when the user lacks the permission, ErrNotFound when the pipeline does
// not exist; others are failures to ask. No error holds the token.
func (s *Store) CheckPermission(ctx context.Context, token, perm string) (string, error) {
	var creds yt.Credentials = noCredentials{}
	if token != "" {
		creds = &yt.TokenCredentials{Token: token}
	}
	ctx = yt.WithCredentials(ctx, creds)
	who, err := s.yc.WhoAmI(ctx, nil)
	if err != nil {
		return "", fmt.Errorf("ytstore: authenticate for %s of %s: %w", perm, s.path, classifyAuth(err, token))
	}
	r, err := s.yc.CheckPermission(ctx, who.Login, perm, s.path, nil)
	if err != nil {
		return who.Login, fmt.Errorf("ytstore: check %s permission of %s on %s: %w", perm, who.Login, s.path, classifyAuth(err, token))
	}
	if r.Action != yt.ActionAllow {
		return who.Login, fmt.Errorf("ytstore: %w: user %s has no %s permission on %s", ErrAccessDenied, who.Login, perm, s.path)
	}
	return who.Login, nil
}

// noCredentials sends a request without credentials (the client's own would be used
// otherwise).
type noCredentials struct{}

func (noCredentials) Set(*http.Request)                {}
func (noCredentials) SetExtension(*rpc.TRequestHeader) {}

// classifyAuth is classify with the authentication and authorization codes, and with token
// cut out of the message should the proxy ever quote it.
func classifyAuth(err error, token string) error {
	var httpErr *yterrors.HTTPError
	switch {
	case yterrors.ContainsErrorCode(err, yterrors.CodeAuthenticationError),
		errors.As(err, &httpErr) && httpErr.StatusCode == http.StatusUnauthorized:
		err = fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	case yterrors.ContainsErrorCode(err, yterrors.CodeAuthorizationError),
		errors.As(err, &httpErr) && httpErr.StatusCode == http.StatusForbidden:
		err = fmt.Errorf("%w: %w", ErrAccessDenied, err)
	default:
		err = classify(err)
	}
	if token != "" && strings.Contains(err.Error(), token) {
		return redacted{err, token}
	}
	return err
}

// redacted is an error whose message hides a secret; errors.Is and As still see the chain.
type redacted struct {
	err    error
	secret string
}

func (r redacted) Error() string { return strings.ReplaceAll(r.err.Error(), r.secret, "********") }
func (r redacted) Unwrap() error { return r.err }
