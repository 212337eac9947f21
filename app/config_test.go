package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runWithEnv runs `yt-flow args...` in process with exactly the environment vars.
func runWithEnv(vars map[string]string, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	env := &environ{stdout: &out, stderr: &errb, getenv: func(k string) string { return vars[k] }}
	code := runMain(context.Background(), env, args)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

// shown returns the value and origin `yt-flow config` printed for key.
func shown(t *testing.T, out, key string) (value, from string) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + key + `\s+(\S+)\s+\((.*)\)$`).FindStringSubmatch(out)
	require.NotNil(t, m, "no line for %s in:\n%s", key, out)
	return m[1], m[2]
}

// TestConfigPrecedence: a flag beats the environment, which beats the config file (a
// command's section over the top level), which beats the default — for every format.
func TestConfigPrecedence(t *testing.T) {
	for _, tc := range []struct{ name, text string }{
		{"c.yaml", "workers: 3\nprogress: 3s\nsetup: top.yson\nlog: top.log\nrun:\n  log: run.log\n  data-dir: file-data\nstatus:\n  log: 20\n"},
		{"c.yson", `{workers = 3; progress = "3s"; setup = "top.yson"; log = "top.log"; run = {log = "run.log"; data_dir = "file-data"}; status = {log = 20}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeFile(t, tc.name, tc.text)
			env := map[string]string{
				"YT_FLOW_WORKERS":  "4",           // beaten by the flag
				"YT_FLOW_DATA_DIR": "env-data",    // beats the file's run section
				"YT_PROXY":         "yt-proxy:80", // beaten by YT_FLOW_PROXY
				"YT_FLOW_PROXY":    "flow-proxy:80",
			}
			code, out, errs := runWithEnv(env, "config", "run", "--config", file, "--workers", "5")
			require.Equal(t, 0, code, errs)
			for _, want := range []struct{ key, value, from string }{
				{"workers", "5", "--workers"},
				{"data_dir", "env-data", "$YT_FLOW_DATA_DIR"},
				{"proxy", "flow-proxy:80", "$YT_FLOW_PROXY"},
				{"progress", "3s", file},
				{"log", "run.log", file}, // the run section over the top level
				{"setup", "top.yson", file},
				{"spec", `""`, "default"},
				{"config", file, "--config"},
			} {
				value, from := shown(t, out, want.key)
				assert.Equal(t, want.value, value, want.key)
				assert.Equal(t, want.from, from, want.key)
			}

			// The same file and environment for status: its own section, YT_PROXY alone.
			delete(env, "YT_FLOW_PROXY")
			code, out, errs = runWithEnv(env, "config", "status", "--config", file)
			require.Equal(t, 0, code, errs)
			value, _ := shown(t, out, "log")
			assert.Equal(t, "20", value)
			value, from := shown(t, out, "proxy")
			assert.Equal(t, "yt-proxy:80", value)
			assert.Equal(t, "$YT_PROXY", from)
		})
	}
}

// TestConfigReachesTheCommand: the layered values are the ones the command runs with.
func TestConfigReachesTheCommand(t *testing.T) {
	file := writeFile(t, "c.yaml", "proxy: localhost:1\n")
	// status has what it needs from the file and the environment: it gets as far as
	// connecting (and fails there), not to a usage error.
	code, _, errs := runWithEnv(map[string]string{"YT_FLOW_PATH": "//p", "YT_FLOW_CONFIG_FILE": file}, "status")
	assert.Equal(t, 1, code, errs)
	code, out, errs := runWithEnv(map[string]string{"YT_FLOW_CONFIG_FILE": file}, "config", "status")
	require.Equal(t, 0, code, errs)
	value, from := shown(t, out, "config")
	assert.Equal(t, file, value)
	assert.Equal(t, "$YT_FLOW_CONFIG_FILE", from)
	value, from = shown(t, out, "proxy")
	assert.Equal(t, "localhost:1", value)
	assert.Equal(t, file, from)
	// Without the path it is a usage error, as without the flags.
	code, _, errs = runWithEnv(map[string]string{"YT_FLOW_CONFIG_FILE": file}, "status")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "--path is required")
	// YT_FLOW_CONFIG is YTsaurus Flow's patch of the node config, not a file name.
	code, out, errs = runWithEnv(map[string]string{"YT_FLOW_CONFIG": file}, "config")
	require.Equal(t, 0, code, errs)
	value, _ = shown(t, out, "proxy")
	assert.Equal(t, `""`, value)
}

func TestConfigBadValues(t *testing.T) {
	code, _, errs := runWithEnv(map[string]string{"YT_FLOW_WORKERS": "many"}, "run", "--spec", "x.yson")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, `yt-flow run: $YT_FLOW_WORKERS: invalid value "many" for --workers`)

	file := writeFile(t, "c.yaml", "run:\n  progress: soon\n")
	code, _, errs = runWithEnv(nil, "config", "run", "--config", file)
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, file+`: invalid value "soon" for --progress`)

	code, _, errs = runWithEnv(nil, "config", "--config", filepath.Join(t.TempDir(), "missing.yaml"))
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "missing.yaml")

	code, _, errs = runWithEnv(nil, "config", "--config", writeFile(t, "c.toml", "workers = 3\n"))
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "want .yaml, .yml or .yson")

	code, _, errs = runWithEnv(nil, "config", "--config", writeFile(t, "c.yaml", "data-dir: a\ndata_dir: b\n"))
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "data_dir: given twice")

	code, _, errs = runWithEnv(nil, "config", "nosuch")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, `"nosuch" is not a command`)
}

// TestConfigUnknownKeys: every unknown key of a file is reported, with the file's name and
// the key's path, whatever the command; the command does not run.
func TestConfigUnknownKeys(t *testing.T) {
	for _, tc := range []struct{ name, text string }{
		{"c.yaml", "workers: 2\nworkres: 3\nrun:\n  bogus: 1\n  path: //p\nstatus:\n  log: 5\n"},
		{"c.yson", `{workers = 2; workres = 3; run = {bogus = 1; path = "//p"}; status = {log = 5}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeFile(t, tc.name, tc.text)
			for _, args := range [][]string{
				{"config", "--config", file},
				{"status", "--config", file, "--proxy", "localhost:1", "--path", "//p"},
				{"local", "--config", file},
			} {
				code, out, errs := runWithEnv(nil, args...)
				assert.Equal(t, 2, code, "%v", args)
				assert.Empty(t, out, "%v", args)
				for _, want := range []string{
					"config file " + file + ": workres: unknown key",
					"config file " + file + ": run/bogus: unknown key",
					"config file " + file + ": run/path: unknown key", // run has no --path
				} {
					assert.Contains(t, errs, want, "%v", args)
				}
				assert.NotContains(t, errs, "status/log", "%v", args)
			}
		})
	}
	// A config file does not name another one.
	code, _, errs := runWithEnv(nil, "config", "--config", writeFile(t, "c.yaml", "config: other.yaml\n"))
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "config: unknown key")
}

// TestConfigMasksSecrets: `yt-flow config` shows that a token is set and where it comes
// from, never the token; nor does any error.
func TestConfigMasksSecrets(t *testing.T) {
	const fileToken, envToken = "file-token-0123456789", "env-token-9876543210"
	file := writeFile(t, "c.yaml", "token: "+fileToken+"\nproxy: localhost:1\n")
	for _, tc := range []struct {
		env  map[string]string
		from string
	}{
		{nil, file},
		{map[string]string{"YT_TOKEN": envToken}, "$YT_TOKEN"},
		{map[string]string{"YT_FLOW_TOKEN": envToken, "YT_TOKEN": "other"}, "$YT_FLOW_TOKEN"},
	} {
		code, out, errs := runWithEnv(tc.env, "config", "worker", "--config", file)
		require.Equal(t, 0, code, errs)
		value, from := shown(t, out, "token")
		assert.Equal(t, "********", value)
		assert.Equal(t, tc.from, from)
		for _, secret := range []string{fileToken, envToken} {
			assert.NotContains(t, out+errs, secret)
		}
	}
	code, out, _ := runWithEnv(nil, "config")
	require.Equal(t, 0, code)
	value, _ := shown(t, out, "token")
	assert.Equal(t, `""`, value, "an unset token shows as unset")

	// Errors: a bad value elsewhere, an unknown key next to the token, an unparsable file.
	bad := writeFile(t, "bad.yaml", "token: "+fileToken+"\nworkers: many\npassword: "+fileToken+"\n")
	for _, args := range [][]string{
		{"run", "--spec", "x.yson", "--config", bad},
		{"config", "--config", writeFile(t, "broken.yaml", "token: "+fileToken+"\nworkers: [1,\n")},
		{"config", "--config", writeFile(t, "broken.yson", "{token = \""+fileToken+"\"; ]")},
	} {
		code, out, errs := runWithEnv(map[string]string{"YT_TOKEN": envToken}, args...)
		assert.Equal(t, 2, code, "%v: %s", args, errs)
		assert.NotContains(t, out+errs, fileToken, "%v", args)
		assert.NotContains(t, out+errs, envToken, "%v", args)
	}
	assert.True(t, isSecret("token") && isSecret("db_password") && isSecret("client_secret") && !isSecret("token_path") && !isSecret("proxy"))
}

// TestConfigTokenPath: $YT_TOKEN_PATH (or --token-path) names a file holding the token; a
// token given at a higher precedence wins over it, and at the same one too (as in the
// YTsaurus clients); an unreadable file is an error that names the file.
func TestConfigTokenPath(t *testing.T) {
	tokenFile := writeFile(t, "token", "  from-file-token\n")
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"YT_TOKEN_PATH", map[string]string{"YT_TOKEN_PATH": tokenFile}, nil, "from-file-token"},
		{"YT_FLOW_TOKEN_PATH", map[string]string{"YT_FLOW_TOKEN_PATH": tokenFile}, nil, "from-file-token"},
		{"flag over the env token", map[string]string{"YT_TOKEN": "env-token"}, []string{"--token-path", tokenFile}, "from-file-token"},
		{"env token on a tie", map[string]string{"YT_TOKEN": "env-token", "YT_TOKEN_PATH": tokenFile}, nil, "env-token"},
		{"no token", nil, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := &environ{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: func(k string) string { return tc.env[k] }}
			fs := newFlagSet("status", env)
			commands["status"].setup(fs, env)
			s, code := parseSettings("status", fs, env, append([]string{"--path", "//p"}, tc.args...))
			require.Equal(t, -1, code)
			token, err := s.token()
			require.NoError(t, err)
			assert.Equal(t, tc.want, token)
		})
	}

	missing := filepath.Join(t.TempDir(), "no-token")
	code, _, errs := runWithEnv(map[string]string{"YT_TOKEN_PATH": missing}, "status", "--proxy", "localhost:1", "--path", "//p")
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "token_path (from $YT_TOKEN_PATH)")
	assert.Contains(t, errs, missing)
	empty := writeFile(t, "empty", "\n")
	code, _, errs = runWithEnv(nil, "status", "--proxy", "localhost:1", "--path", "//p", "--token-path", empty)
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, empty+" is empty")
	assert.False(t, strings.Contains(errs, "from-file-token"))
}
