// Package connectortest is the conformance suite every connector class runs: it runs a real
// pipeline with the class on an embedded YTsaurus server (ytlocal, through the real SDK), a
// controller and two workers in the test process, kills workers at the steps where a
// connector's guarantee can break, and checks the guarantee the class declares.
//
//   - Sources (RunSource): the source feeds a keyed passthrough computation whose sync queue
//     sink records every row's id; workers are killed right after a read, right after a
//     commit (when the runtime advances the source) and when a worker moves on to another
//     partition. Every row must arrive exactly once.
//   - Sinks (RunSink): a finite numbers source feeds a keyed passthrough computation with the
//     sink under test; workers are killed right after a sync write (before its commit) and
//     right after an async delivery (before its acknowledgement), and the target fails,
//     answers for only part of a delivery, and is slow. The rows the target holds must match
//     the class's guarantee: each exactly once, at least once, or at most once.
//
// Faults are injected by wrapping the class under test in a class of the same kind
// ("conformance_<name>") that delegates to it; nothing in the runtime knows about tests. The
// wrapper of a source also prefixes every position it hands out and refuses any it did not:
// the runtime must keep positions as opaque bytes.
package connectortest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytstore"
)

// env is one embedded server with a store on it.
type env struct {
	proxy string
	st    *ytstore.Store
	ctx   context.Context
}

func newEnv(t *testing.T, path string) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	srv, err := ytlocal.Start(ctx, ytlocal.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: srv.Addr(), Path: path})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	return &env{proxy: srv.Addr(), st: st, ctx: ctx}
}

// fault says where a wrapped connector kills its worker.
type fault struct {
	name string
	// every: kill at every every-th occurrence of the step (1: each), at most max times.
	every, max int
}

// injector counts a step's occurrences and kills the worker of the one that is due.
type injector struct {
	f     *fleet
	fault fault
	seen  atomic.Int64
	fired atomic.Int64
}

func (in *injector) step(name, workerID string) {
	if in == nil || in.fault.name != name {
		return
	}
	n := in.seen.Add(1)
	if n%int64(in.fault.every) != 0 || in.fired.Load() >= int64(in.fault.max) {
		return
	}
	in.fired.Add(1)
	in.f.kill(workerID)
}

// wrappers holds the injector of each wrapped class, set per run.
var (
	wrapMu    sync.Mutex
	wrapped   = map[string]bool{} // "<role>/<wrapper class name>", and numbersClass
	injectors sync.Map            // wrapper class name -> *injector
)

func injectorOf(class string) *injector {
	v, _ := injectors.Load(class)
	in, _ := v.(*injector)
	return in
}

// wrapClass registers "conformance_<name>" for the class named name of role once, as a copy
// of its registry entry (that adjust, when set, may change).
func wrapClass(t *testing.T, role registry.Role, name string, adjust func(*registry.Class), runtime func(wrapper string)) string {
	t.Helper()
	c, ok := registry.Lookup(role, name)
	require.True(t, ok, "%s class %q is not registered", role, name)
	require.True(t, c.Runs, "%s class %q does not run", role, name)
	wrapper := "conformance_" + c.Name
	key := role.String() + "/" + wrapper // a source and a sink class may share a name
	wrapMu.Lock()
	defer wrapMu.Unlock()
	if wrapped[key] {
		return wrapper
	}
	w := *c
	w.Name, w.FlowNames, w.Aliases = wrapper, nil, nil
	if adjust != nil {
		adjust(&w)
	}
	registry.Register(w)
	runtime(wrapper)
	wrapped[key] = true
	return wrapper
}

// waitCompleted waits until the pipeline completed, failing on a component's error.
func waitCompleted(t *testing.T, e *env, f *fleet) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		a, err := e.st.Attributes(e.ctx)
		if err == nil && a.PipelineState == ytstore.StateCompleted {
			return
		}
		require.NoError(t, f.err())
		if time.Now().After(deadline) {
			state := ""
			if a != nil {
				state = a.PipelineState
			}
			t.Fatalf("pipeline did not complete (state %q, %d workers killed)", state, f.killed())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// readQueueIDs reads the uint64 column id of every row of queue (one tablet) through
// consumer.
func readQueueIDs(t *testing.T, e *env, queue, consumer string) []uint64 {
	t.Helper()
	var ids []uint64
	for off := int64(0); ; {
		rows, err := e.st.PullQueue(e.ctx, queue, consumer, 0, off, 10000)
		require.NoError(t, err)
		if len(rows) == 0 {
			return ids
		}
		for _, r := range rows {
			ids = append(ids, asUint(t, r.Columns["id"]))
		}
		off = rows[len(rows)-1].Offset + 1
	}
}

func asUint(t *testing.T, v any) uint64 {
	switch x := v.(type) {
	case uint64:
		return x
	case int64:
		return uint64(x)
	}
	t.Fatalf("id %v (%T) is not an integer", v, v)
	return 0
}

// checkGuarantee checks that got holds the ids 0..n-1 as guarantee g allows.
func checkGuarantee(t *testing.T, g registry.Guarantee, n int, got []uint64, what string) {
	t.Helper()
	count := map[uint64]int{}
	for _, id := range got {
		count[id]++
	}
	var missing, dup, foreign []string
	for id := range uint64(n) {
		switch c := count[id]; {
		case c == 0:
			missing = append(missing, fmt.Sprint(id))
		case c > 1:
			dup = append(dup, fmt.Sprintf("%d×%d", id, c))
		}
		delete(count, id)
	}
	for id := range count {
		foreign = append(foreign, fmt.Sprint(id))
	}
	slices.Sort(foreign)
	require.Empty(t, foreign, "%s: ids that were never written", what)
	if g != registry.AtMostOnce {
		require.Empty(t, missing, "%s: %s lost rows (of %d)", what, g, n)
	}
	if g != registry.AtLeastOnce {
		require.Empty(t, dup, "%s: %s duplicated rows", what, g)
	}
}

// idSchema is a stream schema with the uint64 id column first.
func idSchema(extra ...schema.Column) string {
	cols := append([]schema.Column{{Name: "id", Type: schema.TypeUint64, Required: true}}, extra...)
	var parts []string
	for _, c := range cols {
		parts = append(parts, fmt.Sprintf("{name = %q; type = %q; required = %%%v}", c.Name, c.Type, c.Required))
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// ensure the wrapped runtime matches the SPI.
var _ connector.Source = (*faultySource)(nil)
