package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLocalRejectsBadFlags(t *testing.T) {
	var stderr strings.Builder
	env := &environ{stdout: &strings.Builder{}, stderr: &stderr, getenv: func(string) string { return "" }}
	require.Equal(t, 2, runMain(context.Background(), env, []string{"local", "--port", "70000"}))
	require.Contains(t, stderr.String(), "out of range")
	require.Equal(t, 2, runMain(context.Background(), env, []string{"local", "extra"}))
}

// TestLocalAuthFlags: --auth needs a token (from --users or $YT_TOKEN), --users needs --auth,
// a malformed users file is refused naming the line, never a token.
func TestLocalAuthFlags(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad")
	require.NoError(t, os.WriteFile(bad, []byte("# users\nalice tok-alice-123\nbob\n"), 0o600))
	good := filepath.Join(dir, "good")
	require.NoError(t, os.WriteFile(good, []byte("alice tok-alice-123\n"), 0o600))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"local", "--auth"}, "--auth needs a token"},
		{[]string{"local", "--users", good}, "--users needs --auth"},
		{[]string{"local", "--auth", "--users", bad}, "line 3"},
	} {
		var stderr strings.Builder
		env := &environ{stdout: &strings.Builder{}, stderr: &stderr, getenv: func(string) string { return "" }}
		require.Equal(t, 2, runMain(context.Background(), env, tc.args), "%q", tc.args)
		require.Contains(t, stderr.String(), tc.want, "%q", tc.args)
		require.NotContains(t, stderr.String(), "tok-alice-123")
	}

	users, err := localAuth{on: true, usersFile: good, user: "root", token: "tok-env"}.users()
	require.NoError(t, err)
	require.Equal(t, map[string]string{"tok-alice-123": "alice", "tok-env": "root"}, users)
	users, err = localAuth{on: true, usersFile: good, user: "root", token: "tok-alice-123"}.users()
	require.NoError(t, err)
	require.Equal(t, map[string]string{"tok-alice-123": "alice"}, users, "the file names the user of a token it holds")
}
