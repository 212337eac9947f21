package connectortest

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytstore"
)

// Source is a source class under test.
type Source struct {
	// Class is the class's registered name.
	Class string
	// Rows is how many rows Setup writes; default 2000.
	Rows int
	// Setup writes rows rows under root whose uint64 column id runs over 0..rows-1 (in any
	// order and partitions) and returns the class's parameters — a YSON map; the source must
	// be finite — and the columns its rows have besides id.
	Setup func(ctx context.Context, st *ytstore.Store, root string, rows int) (params string, extra []schema.Column, err error)
}

// Source fault points.
const (
	AfterRead         = "after_read"         // a read returned rows; nothing is committed yet
	AfterCommit       = "after_commit"       // the runtime advanced the source after a commit
	BetweenPartitions = "between_partitions" // a worker reads another partition than before
)

// RunSource runs the source conformance checks of s: for each fault point, a pipeline reads
// every row while workers are killed at that point, and every row must arrive exactly once.
func RunSource(t *testing.T, s Source) {
	if s.Rows == 0 {
		s.Rows = 2000
	}
	wrapper := wrapClass(t, registry.Source, s.Class, func(wrapper string) {
		ctors, ok := connector.SourceOf(s.Class)
		require.True(t, ok, "source class %q registered no runtime", s.Class)
		connector.RegisterSource(wrapper, connector.Constructors{
			Partitions: ctors.Partitions,
			Ends:       ctors.Ends,
			Source: func(env connector.Env, params any) (connector.Source, error) {
				src, err := ctors.Source(env, params)
				if err != nil {
					return nil, err
				}
				return &faultySource{Source: src, env: env, in: injectorOf(wrapper)}, nil
			},
		})
	})
	for _, f := range []fault{{AfterRead, 3, 2}, {AfterCommit, 3, 2}, {BetweenPartitions, 1, 2}} {
		t.Run(f.name, func(t *testing.T) {
			root := "//conformance/" + f.name
			e := newEnv(t, root+"/pipeline")
			params, extra, err := s.Setup(e.ctx, e.st, root, s.Rows)
			require.NoError(t, err, "setup of %s", s.Class)
			check := root + "/check"
			require.NoError(t, e.st.EnsureUserTable(e.ctx, ytstore.UserTable{Path: check, Kind: ytstore.UserQueue,
				Schema: schema.Schema{Columns: []schema.Column{{Name: "id", Type: schema.TypeUint64}}}}))
			require.NoError(t, e.st.EnsureUserTable(e.ctx, ytstore.UserTable{Path: check + "_consumer", Kind: ytstore.UserConsumer, Queue: check}))
			startPipeline(t, e, sourcePipeline(wrapper, params, idSchema(extra...), check))
			in := &injector{fault: f}
			injectors.Store(wrapper, in)
			defer injectors.Delete(wrapper)
			fl := startFleet(t, e.proxy, root+"/pipeline")
			in.f = fl
			waitCompleted(t, e, fl)
			require.Positive(t, fl.killed(), "no worker was killed at %s: the fault point was never reached", f.name)
			t.Logf("%s: %d workers killed, %d rows", f.name, fl.killed(), s.Rows)
			checkGuarantee(t, registry.ExactlyOnce, s.Rows, readQueueIDs(t, e, check, check+"_consumer"),
				fmt.Sprintf("source %s, workers killed %s (%d kills)", s.Class, f.name, fl.killed()))
		})
	}
}

// faultySource is the class under test with the fault points of its runs.
type faultySource struct {
	connector.Source
	env connector.Env
	in  *injector
}

// lastPartition is the partition each worker read last.
var lastPartition sync.Map // worker id -> partition id

// positionTag prefixes the positions of a wrapped source, so that a runtime that read a
// position as anything but opaque bytes would fail the suite.
var positionTag = []byte("conformance:")

func untag(pos connector.Position) (connector.Position, error) {
	if pos == nil {
		return nil, nil
	}
	inner, ok := bytes.CutPrefix(pos, positionTag)
	if !ok {
		return nil, fmt.Errorf("%w: %q was not made by this source", connector.ErrBadPosition, pos)
	}
	return inner, nil
}

func (s *faultySource) Read(ctx context.Context, from connector.Position, max int64) ([]connector.Row, error) {
	inner, err := untag(from)
	if err != nil {
		return nil, err
	}
	rows, err := s.Source.Read(ctx, inner, max)
	for i := range rows {
		rows[i].Next = append(append(connector.Position{}, positionTag...), rows[i].Next...)
	}
	if err == nil && len(rows) > 0 {
		if prev, ok := lastPartition.Swap(s.env.WorkerID, s.env.PartitionID); ok && prev != s.env.PartitionID {
			s.in.step(BetweenPartitions, s.env.WorkerID)
		}
		s.in.step(AfterRead, s.env.WorkerID)
	}
	return rows, err
}

func (s *faultySource) Advance(ctx context.Context, pos connector.Position) error {
	inner, err := untag(pos)
	if err != nil {
		return err
	}
	err = s.Source.Advance(ctx, inner)
	s.in.step(AfterCommit, s.env.WorkerID)
	return err
}

// sourcePipeline is the static spec of a source run: the source, a keyed passthrough and a
// sync queue sink recording ids.
func sourcePipeline(class, params, rowSchema, check string) string {
	return fmt.Sprintf(`{
    computations = {
        read = {
            computation_class_name = "NYT::NFlow::TSwiftPassthroughOrderedSourceComputation";
            source_streams = {src = {source_class_name = %q; parameters = %s}};
            output_stream_ids = ["rows"];
        };
        store = {
            computation_class_name = "NYT::NFlow::TPassthroughComputation";
            group_by_schema = [
                {name = "hash"; type = "uint64"; required = %%true; expression = "farm_hash(id)"};
                {name = "id"; type = "uint64"; required = %%true};
            ];
            input_stream_ids = ["rows"];
            output_stream_ids = ["stored"];
            sinks = {check = {
                sink_class_name = "NYT::NFlow::TSyncQueueSink";
                input_stream_ids = ["stored"];
                parameters = {queue_path = %q; column_filter = ["id"]};
            }};
        };
    };
    streams = {rows = {schema = %s}; stored = {schema = %s}};
}`, class, params, check, rowSchema, rowSchema)
}

// dynamicSpec keeps epochs small, so that a run has many of them to kill workers in.
const dynamicSpec = `{computations = {
    read = {batch_duration = 50; max_rows_per_batch = 100};
    store = {batch_duration = 50; max_rows_per_batch = 100; parameters = {desired_partition_count = 2}};
}}`

// startPipeline creates the pipeline of e with the static spec text and dynamicSpec, target
// state working.
func startPipeline(t *testing.T, e *env, static string) {
	t.Helper()
	_, err := spec.ParsePipeline([]byte(static))
	require.NoError(t, err, "conformance pipeline spec")
	require.NoError(t, e.st.CreatePipeline(e.ctx))
	require.NoError(t, e.st.SetSpecs(e.ctx, ytstore.SpecUpdate{
		Spec: binary(t, static), SpecVersion: 1, DynamicSpec: binary(t, dynamicSpec), DynamicSpecVersion: 1,
		TargetState: ytstore.TargetWorking,
	}))
}

func binary(t *testing.T, text string) yson.RawValue {
	var v any
	require.NoError(t, yson.Unmarshal([]byte(text), &v))
	b, err := yson.Marshal(v)
	require.NoError(t, err)
	return b
}
