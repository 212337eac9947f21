package app

import (
	"context"
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
