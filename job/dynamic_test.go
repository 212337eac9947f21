package job

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/library/go/core/log/nop"
	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/spec"
	fyson "github.com/ytflow/yt-flow/yson"
	"github.com/ytflow/yt-flow/ytstore"
)

// countUnlessBanned is CountWords, except that it fails on the word its parameter banned
// names.
type countUnlessBanned struct{}

func (countUnlessBanned) Invoke(inv *flow.Invocation) (*flow.Result, error) {
	banned, _ := inv.Parameters["banned"].(string)
	for _, m := range inv.Messages {
		if w, _ := m.Payload["word"].(string); w == banned {
			return nil, fmt.Errorf("word %q is banned", w)
		}
	}
	f, err := flow.Lookup("CountWords")
	if err != nil {
		return nil, err
	}
	return f.Invoke(inv)
}

// dynTestSink is a sink class with one dynamic parameter, limit.
const dynTestSink = "test.dyn_sink"

type dynLimit struct{ Limit int64 }

func init() {
	flow.Register("test.CountUnlessBanned", countUnlessBanned{})
	registry.Register(registry.Class{
		Name: dynTestSink, Role: registry.Sink, Kind: registry.SyncSink, Guarantee: registry.ExactlyOnce,
		Parse:        func(f *fyson.Fields) any { return nil },
		ParseDynamic: func(f *fyson.Fields, static any) any { return dynLimit{Limit: f.Int("limit", 10, 1, 100)} },
	})
}

// TestDynamicSpecAppliesLive: a dynamic spec change reaches a running job without a restart.
// The count job retries a batch with a banned word for ever (failure_policy retry); the
// layout has no controller to restart a failed job, so the counts complete only because the
// running job applied the new processing_function_parameters between two epochs.
func TestDynamicSpecAppliesLive(t *testing.T) {
	specText := strings.Replace(wordCountSpec, `processing_function = "CountWords"`, `processing_function = "test.CountUnlessBanned"`, 1)
	require.NotEqual(t, wordCountSpec, specText)
	e := startWordCountSpec(t, specText, nil, nil)
	require.NoError(t, e.store.SetSpecs(e.ctx, ytstore.SpecUpdate{
		DynamicSpec:        yson.RawValue(`{computations = {count = {processing_function_parameters = {banned = "bad"}}}}`),
		DynamicSpecVersion: 1}))
	e.write("a bad b")
	e.putJob("split-0", "split", "split-p0", 0)
	lease := e.putJob("count-0", "count", "count-p0", -1)
	e.eventually("the banned word fails the count epoch", func() bool { return e.worker.Stats()["count-0"].ProcessFailures >= 2 })
	assert.Empty(t, e.counts(), "nothing counted while the batch fails")

	require.NoError(t, e.store.SetSpecs(e.ctx, ytstore.SpecUpdate{
		DynamicSpec:        yson.RawValue(`{computations = {count = {processing_function_parameters = {banned = "none"}}}}`),
		DynamicSpecVersion: 2}))
	e.waitCounts(map[string]int64{"a": 1, "bad": 1, "b": 1})
	assert.Equal(t, lease, e.jobLease("count-0"), "the same job, not a restarted one")
	e.worker.mu.Lock()
	h := e.worker.runners["count-0"]
	e.worker.mu.Unlock()
	require.NotNil(t, h)
	assert.Equal(t, int64(2), h.r.dynVersion.Load())
}

// reconfigurable records the dynamic parameters it was given.
type reconfigurable struct{ got []any }

func (s *reconfigurable) Reconfigure(_ context.Context, dynamic any) error {
	s.got = append(s.got, dynamic)
	return nil
}

// TestApplyDynamicReconfiguresOrRestarts: a connector whose dynamic parameters changed is
// reconfigured in place when it implements connector.Reconfigurer, and otherwise ends the job
// with connector.ErrRestartToReconfigure; unchanged parameters touch neither.
func TestApplyDynamicReconfiguresOrRestarts(t *testing.T) {
	class, ok := registry.Lookup(registry.Sink, dynTestSink)
	require.True(t, ok)
	newRunner := func(impl any) *runner {
		r := &runner{comp: &spec.Computation{ID: "c"}, log: (&nop.Logger{}).Structured(), job: ytstore.Job{JobID: "j"}}
		r.dynEntities = []*dynEntity{{id: "s", sink: true, name: "sink s", path: "dynamic_spec/computations/c/sinks/s/parameters",
			class: class, current: dynLimit{Limit: 10}, impl: impl}}
		r.dynVersion.Store(1)
		return r
	}
	offer := func(r *runner, limit string, v int64) error {
		d, err := spec.ParseDynamic([]byte(`{computations = {c = {batch_duration = 700; sinks = {s = {parameters = {` + limit + `}}}}}}`))
		require.NoError(t, err)
		r.offerDynamic(d, v)
		return r.applyPendingDynamic(context.Background())
	}

	rc := &reconfigurable{}
	r := newRunner(rc)
	require.NoError(t, offer(r, "", 2), "the default limit is the one in force")
	assert.Empty(t, rc.got)
	assert.Equal(t, int64(2), r.dynVersion.Load())
	assert.Equal(t, int64(700), r.dyn.BatchDuration.Milliseconds())
	require.NoError(t, offer(r, "limit = 20", 3))
	assert.Equal(t, []any{dynLimit{Limit: 20}}, rc.got)
	require.NoError(t, offer(r, "limit = 20", 3), "an offer of the version in force is no change")
	assert.Len(t, rc.got, 1)

	plain := newRunner(struct{}{})
	err := offer(plain, "limit = 20", 2)
	require.True(t, errors.Is(err, connector.ErrRestartToReconfigure), "got %v", err)
	assert.Contains(t, err.Error(), "sink s ("+dynTestSink+")")
	assert.Equal(t, int64(1), plain.dynVersion.Load(), "not applied")

	err = offer(newRunner(rc), "limit = 1000", 2)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "dynamic_spec/computations/c/sinks/s/parameters/limit")
}

// topoSink is an async sink with a topology fingerprint.
type topoSink struct{ fp string }

func (s topoSink) Deliver(context.Context, []connector.Batch) (int, error) { return 0, nil }
func (s topoSink) Topology() string                                        { return s.fp }

// TestTopologyChangeRefusedWithBacklog: a job whose async sink's topology fingerprint differs
// from the one its partition state keeps is refused while the partition holds outputs for
// that sink, naming the sink, the backlog and both fingerprints; without a backlog, or with
// no fingerprint kept yet, the new one is kept with the next commit; an equal one changes
// nothing.
func TestTopologyChangeRefusedWithBacklog(t *testing.T) {
	newRunner := func(fp string) *runner {
		return &runner{comp: &spec.Computation{ID: "c"}, job: ytstore.Job{JobID: "j", PartitionID: "c/0of1"},
			asyncSinks: map[string]connector.AsyncSink{"ch": topoSink{fp}, "plain": dynPlainSink{}}}
	}
	kept := map[string][]byte{topologyStatePrefix + "ch": []byte("shards [a b]")}
	backlog := []ytstore.OutputRow{{Destination: sinkDestPrefix + "ch"}, {Destination: sinkDestPrefix + "plain"}, {Destination: sinkDestPrefix + "ch"}}

	r := newRunner("shards [a b c]")
	err := r.checkTopologies(kept, backlog)
	require.ErrorIs(t, err, connector.ErrTopologyChanged)
	assert.Contains(t, err.Error(), "sink ch: ")
	assert.Contains(t, err.Error(), "2 outputs of partition c/0of1 wait for delivery along the old one (shards [a b], now shards [a b c])")

	r = newRunner("shards [a b c]")
	require.NoError(t, r.checkTopologies(kept, backlog[1:2]), "no backlog of the sink")
	assert.Equal(t, map[string]string{"ch": "shards [a b c]"}, r.topologyPending)

	r = newRunner("shards [a b]")
	require.NoError(t, r.checkTopologies(kept, backlog))
	assert.Empty(t, r.topologyPending, "unchanged")

	r = newRunner("shards [a b]")
	require.NoError(t, r.checkTopologies(map[string][]byte{}, backlog), "none kept yet (a partition of an older version)")
	assert.Equal(t, map[string]string{"ch": "shards [a b]"}, r.topologyPending)
}

type dynPlainSink struct{}

func (dynPlainSink) Deliver(context.Context, []connector.Batch) (int, error) { return 0, nil }
