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
	fyson "github.com/ytflow/yt-flow/yson"
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
	// Resources, when set, is the YSON map of the pipeline spec's resources (e.g. the client
	// resource a class takes its connection from).
	Resources string
	// Map, when set, maps the columns of each row the source returns before the pipeline sees
	// it: for a class whose rows have a fixed schema without a uint64 id (Setup then writes the
	// id into the source's data, and Map takes it out). The result must have id and the extra
	// columns.
	Map func(columns map[string]any) (map[string]any, error)
	// Unbounded marks a source that never completes (its parameters are not finite). The suite
	// then completes each partition at the end offset the class's Ends reports once Setup is
	// done: an empty read at or past it ends the partition, an empty read below it does not.
	// The class must have Ends, and Setup must have written every row before it returns.
	Unbounded bool
}

// bounded wraps the parameters of an Unbounded source: the wrapper class is finite.
type bounded struct{ inner any }

func (bounded) IsFinite() bool { return true }

// unwrap returns the class's own parameters of what the wrapper class parsed.
func unwrap(params any) any {
	if b, ok := params.(bounded); ok {
		return b.inner
	}
	return params
}

// boundParams makes the wrapper class of an Unbounded source finite.
func boundParams(c *registry.Class) {
	parse, dyn := c.Parse, c.ParseDynamic
	c.Parse = func(f *fyson.Fields) any { return bounded{parse(f)} }
	if dyn != nil {
		c.ParseDynamic = func(f *fyson.Fields, static any) any { return dyn(f, unwrap(static)) }
	}
	if cols := c.Columns; cols != nil {
		c.Columns = func(params any) map[string][]string { return cols(unwrap(params)) }
	}
	if v := c.Validate; v != nil {
		c.Validate = func(params any, in []registry.Input, report func(key, format string, args ...any)) {
			v(unwrap(params), in, report)
		}
	}
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
	var adjust func(*registry.Class)
	if s.Unbounded {
		adjust = boundParams
	}
	wrapper := wrapClass(t, registry.Source, s.Class, adjust, func(wrapper string) {
		ctors, ok := connector.SourceOf(s.Class)
		require.True(t, ok, "source class %q registered no runtime", s.Class)
		require.True(t, !s.Unbounded || ctors.Ends != nil, "unbounded source class %q has no Ends", s.Class)
		w := connector.Constructors{
			Source: func(env connector.Env, params any) (connector.Source, error) {
				src, err := ctors.Source(env, unwrap(params))
				if err != nil {
					return nil, err
				}
				fs := &faultySource{Source: src, env: env, in: injectorOf(wrapper), mapRow: s.Map}
				if _, ok := params.(bounded); ok {
					fs.ends = func(ctx context.Context) (map[int64]int64, error) { return ctors.Ends(ctx, env, unwrap(params)) }
				}
				return fs, nil
			},
		}
		if ctors.Partitions != nil {
			w.Partitions = func(ctx context.Context, env connector.Env, params any) ([]int64, error) {
				return ctors.Partitions(ctx, env, unwrap(params))
			}
		}
		if ctors.Ends != nil {
			w.Ends = func(ctx context.Context, env connector.Env, params any) (map[int64]int64, error) {
				return ctors.Ends(ctx, env, unwrap(params))
			}
		}
		connector.RegisterSource(wrapper, w)
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
			startPipeline(t, e, sourcePipeline(wrapper, params, idSchema(extra...), check, s.Resources))
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

// faultySource is the class under test with the fault points of its runs (and, for an
// Unbounded source, its end; see Source.Unbounded).
type faultySource struct {
	connector.Source
	env    connector.Env
	in     *injector
	mapRow func(map[string]any) (map[string]any, error)
	// ends, for an Unbounded source, lists the end offsets; end is the partition's, once read.
	ends  func(ctx context.Context) (map[int64]int64, error)
	end   *int64
	atEnd bool
}

// Finite: an Unbounded source is complete once a read came back empty at its end.
func (s *faultySource) Finite() bool {
	if s.ends != nil {
		return s.atEnd
	}
	return s.Source.Finite()
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

// seqAt remembers the sequence number at each position a wrapped source handed out (the
// offset after its row), for the end check of Unbounded sources; the runtime keeps positions
// opaque, the suite may look.
var seqAt sync.Map // string(position) -> int64

func (s *faultySource) Read(ctx context.Context, from connector.Position, max int64) ([]connector.Row, error) {
	inner, err := untag(from)
	if err != nil {
		return nil, err
	}
	rows, err := s.Source.Read(ctx, inner, max)
	for i := range rows {
		rows[i].Next = append(append(connector.Position{}, positionTag...), rows[i].Next...)
		seqAt.Store(string(rows[i].Next), rows[i].Offset+1)
	}
	if err == nil && s.mapRow != nil {
		for i := range rows {
			if rows[i].Columns, err = s.mapRow(rows[i].Columns); err != nil {
				return nil, fmt.Errorf("conformance: map row at offset %d: %w", rows[i].Offset, err)
			}
		}
	}
	if err == nil && len(rows) == 0 && s.ends != nil {
		if s.end == nil {
			m, err := s.ends(ctx)
			if err != nil {
				return nil, err
			}
			end := m[s.env.SourcePartition]
			s.end = &end
		}
		var offset int64
		if v, ok := seqAt.Load(string(from)); ok {
			offset = v.(int64)
		}
		s.atEnd = offset >= *s.end
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
func sourcePipeline(class, params, rowSchema, check, resources string) string {
	if resources == "" {
		resources = "{}"
	}
	return fmt.Sprintf(`{
    resources = %s;
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
}`, resources, class, params, check, rowSchema, rowSchema)
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
