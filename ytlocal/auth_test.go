package ytlocal_test

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	uzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.ytsaurus.tech/library/go/core/log"
	"go.ytsaurus.tech/library/go/core/log/zap"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yt"
	"go.ytsaurus.tech/yt/go/yt/ythttp"
	"go.ytsaurus.tech/yt/go/yterrors"

	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytlocal/ytlocaltest"
)

const (
	aliceToken = "alice-token-8d1f0c"
	bobToken   = "bob-token-37a9e2"
	rootToken  = "root-token-c44b01"
)

// TestAuthTokensAndACLs runs a server with authentication through the SDK: requests without
// a token or with an unknown one are refused (code 900); whoami names each token's user; a
// node whose @acl allows only alice (not inherited) is read and written by alice and root,
// refused to bob (code 901) for reads, writes and children created under it, and
// check_permission answers by the ACL; nodes without an ACL in force stay open to everyone.
// No token appears in the server's log, however verbose.
func TestAuthTokensAndACLs(t *testing.T) {
	ctx := context.Background()
	logs := &syncWriter{}
	logger := bufferLogger(logs)
	srv := ytlocaltest.Start(t, ytlocal.Config{
		Users:  map[string]string{aliceToken: "alice", bobToken: "bob", rootToken: "root"},
		Logger: logger,
	})
	logText := func() string {
		_ = logger.(*zap.Logger).L.Sync()
		return logs.String()
	}
	client := func(token string) yt.Client {
		yc, err := ythttp.NewClient(&yt.Config{Proxy: srv.Addr(), Token: token})
		require.NoError(t, err)
		t.Cleanup(yc.Stop)
		return yc
	}
	alice, bob, root, anon := client(aliceToken), client(bobToken), client(rootToken), client("")

	for token, want := range map[string]string{aliceToken: "alice", bobToken: "bob", rootToken: "root"} {
		me, err := client(token).WhoAmI(ctx, nil)
		require.NoError(t, err)
		assert.Equal(t, want, me.Login)
	}
	_, err := anon.WhoAmI(ctx, nil)
	assert.True(t, yterrors.ContainsErrorCode(err, yterrors.CodeAuthenticationError), "no token: %v", err)
	_, err = client("wrong-token-000").NodeExists(ctx, ypath.Path("//tmp"), nil)
	assert.True(t, yterrors.ContainsErrorCode(err, yterrors.CodeAuthenticationError), "unknown token: %v", err)
	assert.NotContains(t, err.Error(), "wrong-token-000", "an error names no token")
	req, err := http.NewRequest(http.MethodGet, "http://"+srv.Addr()+"/api/v4/get?path=//tmp", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a raw request without a token")

	open := ypath.Path("//tmp/open")
	_, err = bob.CreateNode(ctx, open, yt.NodeDocument, nil)
	require.NoError(t, err, "no ACL in force: anyone may write")
	require.NoError(t, alice.SetNode(ctx, open, "x", nil))

	private := ypath.Path("//tmp/private")
	acl := []map[string]any{{"action": "allow", "subjects": []string{"alice"}, "permissions": []string{"read", "write"}}}
	_, err = alice.CreateNode(ctx, private, yt.NodeMap, &yt.CreateNodeOptions{Attributes: map[string]any{"acl": acl, "inherit_acl": false}})
	require.NoError(t, err)
	_, err = alice.CreateNode(ctx, private.Child("secret"), yt.NodeDocument, &yt.CreateNodeOptions{Attributes: map[string]any{"value": "s3"}})
	require.NoError(t, err, "alice writes under her node")
	for _, yc := range []yt.Client{alice, root} {
		var v string
		require.NoError(t, yc.GetNode(ctx, private.Child("secret"), &v, nil))
		assert.Equal(t, "s3", v)
	}
	denied := func(what string, err error) {
		t.Helper()
		assert.True(t, yterrors.ContainsErrorCode(err, yterrors.CodeAuthorizationError), "%s: %v", what, err)
	}
	var v string
	denied("bob reads the document", bob.GetNode(ctx, private.Child("secret"), &v, nil))
	denied("bob reads an attribute", bob.GetNode(ctx, private.Child("secret").Attr("value"), &v, nil))
	var keys []string
	denied("bob lists", bob.ListNode(ctx, private, &keys, nil))
	denied("bob writes", bob.SetNode(ctx, private.Child("secret"), "mine", nil))
	_, err = bob.CreateNode(ctx, private.Child("other"), yt.NodeDocument, nil)
	denied("bob creates under it", err)
	denied("bob removes", bob.RemoveNode(ctx, private.Child("secret"), nil))
	denied("bob rewrites the ACL", bob.SetNode(ctx, private.Attr("acl"), []any{}, nil))

	for user, want := range map[string]yt.SecurityAction{"alice": yt.ActionAllow, "bob": yt.ActionDeny, "root": yt.ActionAllow} {
		r, err := root.CheckPermission(ctx, user, yt.PermissionRead, private.Child("secret"), nil)
		require.NoError(t, err)
		assert.Equal(t, want, r.Action, user)
	}
	var effective []map[string]any
	require.NoError(t, alice.GetNode(ctx, private.Child("secret").Attr("effective_acl"), &effective, nil))
	assert.Len(t, effective, 1, "the child inherits its parent's ACL, which does not inherit //tmp's")

	for _, token := range []string{aliceToken, bobToken, rootToken} {
		assert.NotContains(t, logText(), token, "the log holds no token")
	}
}

// bufferLogger is a debug-level logger writing to w.
func bufferLogger(w *syncWriter) log.Logger {
	enc := zapcore.NewJSONEncoder(uzap.NewProductionEncoderConfig())
	return zap.NewWithCore(zapcore.NewCore(enc, zapcore.AddSync(w), zapcore.DebugLevel))
}

// syncWriter is a buffer safe for concurrent writes and reads.
type syncWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *syncWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *syncWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
