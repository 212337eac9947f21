package app

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWorkerUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"no proxy", []string{"worker", "--path", "//p"}, nil, "--proxy (or $YT_PROXY) is required"},
		{"no path", []string{"worker"}, map[string]string{"YT_PROXY": "localhost:1"}, "--path is required"},
		{"extra argument", []string{"worker", "--proxy", "x", "--path", "//p", "extra"}, nil, "unexpected arguments"},
		{"unknown flag", []string{"worker", "--nope"}, nil, "flag provided but not defined"},
		{"bad ack delay", []string{"worker", "--proxy", "x", "--path", "//p", "--test-ack-delay", "soon"}, nil, "invalid value \"soon\" for flag -test-ack-delay"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			env := &environ{stdout: &out, stderr: &errOut, getenv: func(k string) string { return tc.env[k] }}
			code := runMain(context.Background(), env, tc.args)
			assert.Equal(t, 2, code, "usage errors exit 2")
			assert.Contains(t, errOut.String(), tc.want)
		})
	}
}

// TestWorkerHelpMarksTestingAid: the fault-injection flag is listed as a testing aid.
func TestWorkerHelpMarksTestingAid(t *testing.T) {
	var out, errOut bytes.Buffer
	env := &environ{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }}
	assert.Equal(t, 0, runMain(context.Background(), env, []string{"worker", "-h"}))
	assert.Regexp(t, `-test-ack-delay duration\s+TESTING AID`, errOut.String())
}
