package ytstore

import (
	"context"
	"errors"
	"sync"
	"testing"

	"go.ytsaurus.tech/library/go/core/log"
	"go.ytsaurus.tech/library/go/core/log/nop"

	"github.com/ytflow/yt-flow/ytlocal/ytlocaltest"
)

type nopLogger = nop.Logger

// recLogger records the messages logged at Debug and at Error.
type recLogger struct {
	nopLogger
	mu            sync.Mutex
	debug, errors []string
}

func (r *recLogger) Debug(msg string, _ ...log.Field) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.debug = append(r.debug, msg)
}

func (r *recLogger) Error(msg string, _ ...log.Field) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, msg)
}

func (r *recLogger) Logger() log.Logger         { return r }
func (r *recLogger) Structured() log.Structured { return r }

// TestFailedRequestsLoggedAtDebug: a request that fails (here: the attributes of a pipeline
// that does not exist) reaches the caller as a classified error, and the client logs it at
// Debug, not Error: a healthy run's expected failures (a commit fenced as a job ends) do not
// show as errors in the log.
func TestFailedRequestsLoggedAtDebug(t *testing.T) {
	rec := &recLogger{}
	st, err := Open(context.Background(), Config{Proxy: ytlocaltest.New(t), Path: "//home/p/missing", Logger: rec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, err := st.Attributes(context.Background()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("attributes of a missing pipeline: %v, want ErrNotFound", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.errors) != 0 {
		t.Errorf("logged at Error: %q", rec.errors)
	}
	found := false
	for _, m := range rec.debug {
		found = found || m == "request failed"
	}
	if !found {
		t.Errorf("the failed request is not logged at Debug: %q", rec.debug)
	}
}
