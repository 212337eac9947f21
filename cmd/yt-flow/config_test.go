package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConfigThroughTheBinary runs `yt-flow config` as a process: flags beat the process
// environment, which beats a YSON config file, which beats the defaults; the token is masked;
// an unknown key in the file fails the command naming the key and the file.
func TestConfigThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	const token = "binary-test-token-5f1e"
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token+"\n"), 0o600))
	file := filepath.Join(dir, "yt-flow.yson")
	require.NoError(t, os.WriteFile(file, []byte(`{
    proxy = "file-proxy:80";
    worker = {poll_period = "1s"; listen = "127.0.0.1:7000"; id = "from-file"};
}`), 0o600))

	run := func(env []string, args ...string) (int, string, string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return code, out.String(), errb.String()
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "YT_PROXY=env-proxy:80", "YT_FLOW_ID=from-env", "YT_TOKEN_PATH=" + tokenFile}
	code, out, errs := run(env, "config", "worker", "--config", file, "--id", "from-flag")
	require.Equal(t, 0, code, errs)
	for _, want := range []string{
		`(?m)^id\s+from-flag\s+\(--id\)$`,
		`(?m)^proxy\s+env-proxy:80\s+\(\$YT_PROXY\)$`,
		`(?m)^poll_period\s+1s\s+\(` + regexp.QuoteMeta(file) + `\)$`,
		`(?m)^listen\s+127\.0\.0\.1:7000\s+\(` + regexp.QuoteMeta(file) + `\)$`,
		`(?m)^test_ack_delay\s+0s\s+\(default\)$`,
		`(?m)^token_path\s+` + regexp.QuoteMeta(tokenFile) + `\s+\(\$YT_TOKEN_PATH\)$`,
	} {
		assert.Regexp(t, want, out)
	}
	assert.NotContains(t, out+errs, token)

	require.NoError(t, os.WriteFile(file, []byte(`{proxy = "p:80"; worker = {pol_period = "1s"}}`), 0o600))
	code, out, errs = run(env, "worker", "--config", file, "--path", "//p")
	assert.Equal(t, 2, code)
	assert.Empty(t, out)
	assert.Contains(t, errs, "config file "+file+": worker/pol_period: unknown key")
}
