// Package ytlocaltest starts an in-process ytlocal server for tests.
package ytlocaltest

import (
	"context"
	"testing"

	"github.com/ytflow/yt-flow/ytlocal"
)

// New starts an in-memory ytlocal server on a random loopback port and returns its
// proxy address (host:port, usable as yt.Config.Proxy or YT_PROXY). The server is
// closed in t.Cleanup.
func New(t testing.TB) string {
	t.Helper()
	return Start(t, ytlocal.Config{}).Addr()
}

// Start is New with an explicit configuration; it returns the server itself.
func Start(t testing.TB, cfg ytlocal.Config) *ytlocal.Server {
	t.Helper()
	s, err := ytlocal.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("ytlocaltest: start ytlocal: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("ytlocaltest: close ytlocal: %v", err)
		}
	})
	return s
}
