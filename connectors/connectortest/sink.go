package connectortest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/yson"
	"github.com/ytflow/yt-flow/ytstore"
)

// Sink is a sink class under test.
type Sink struct {
	// Class is the class's registered name.
	Class string
	// Rows is how many rows the pipeline writes to it; default 2000.
	Rows int
	// Payload, when set, names a second column of the sink's input rows: a required string
	// holding the row's id in decimal ("17"), for classes that send one string payload
	// column (the HTTP sink).
	Payload string
	// Setup prepares the target under root and returns the class's parameters (a YSON map).
	// The sink's input rows have one required uint64 column, id, running over 0..Rows-1, and
	// the string column named by Payload when it is set.
	Setup func(ctx context.Context, st *ytstore.Store, root string) (params string, err error)
	// ReadBack returns the ids the target holds, one per row it holds.
	ReadBack func(ctx context.Context, st *ytstore.Store, root string) ([]uint64, error)
	// Resources, when set, is the YSON map of the pipeline spec's resources (e.g. the client
	// resource a class takes its connection from).
	Resources string
	// OnSwiftSource puts the sink directly on the swift source computation instead of on the
	// keyed passthrough after it: a swift source persists no outputs and re-reads its rows
	// after a restart.
	OnSwiftSource bool
}

// Sink fault points.
const (
	AfterWrite   = "after_write"   // a sync write returned; the epoch is not committed yet
	AfterDeliver = "after_deliver" // an async delivery succeeded; it is not acknowledged yet
	TargetFails  = "target_fails"  // the target refuses a delivery (nothing delivered)
	Partial      = "partial"       // the target takes the first batch of a delivery, then fails
	Slow         = "slow"          // the target answers slowly
)

// errTarget is the failure of a target that refuses a delivery.
var errTarget = errors.New("conformance: the target refused the delivery")

// RunSink runs the sink conformance checks of s under the faults of its kind.
func RunSink(t *testing.T, s Sink) {
	if s.Rows == 0 {
		s.Rows = 2000
	}
	registerNumbers()
	c, ok := registry.Lookup(registry.Sink, s.Class)
	require.True(t, ok, "sink class %q is not registered", s.Class)
	wrapper := wrapClass(t, registry.Sink, s.Class, nil, func(wrapper string) {
		ctors, ok := connector.SinkOf(c.Name)
		require.True(t, ok, "sink class %q registered no runtime", c.Name)
		w := connector.Constructors{BestEffort: ctors.BestEffort}
		if ctors.SyncSink != nil {
			w.SyncSink = func(env connector.Env, params any) (connector.SyncSink, error) {
				inner, err := ctors.SyncSink(env, params)
				return &faultySync{inner: inner, env: env, in: injectorOf(wrapper)}, err
			}
		}
		if ctors.AtLeastOnceSyncSink != nil {
			w.AtLeastOnceSyncSink = func(env connector.Env, params any) (connector.AtLeastOnceSyncSink, error) {
				inner, err := ctors.AtLeastOnceSyncSink(env, params)
				return &faultyALOSync{inner: inner, env: env, in: injectorOf(wrapper)}, err
			}
		}
		if ctors.AsyncSink != nil {
			w.AsyncSink = func(env connector.Env, params any) (connector.AsyncSink, error) {
				inner, err := ctors.AsyncSink(env, params)
				return &faultyAsync{inner: inner, env: env, in: injectorOf(wrapper)}, err
			}
		}
		connector.RegisterSink(wrapper, w)
	})
	var faults []fault
	switch c.Kind {
	case registry.SyncSink, registry.AtLeastOnceSyncSink:
		faults = []fault{{AfterWrite, 3, 2}}
	case registry.AsyncSink:
		faults = []fault{{AfterDeliver, 2, 2}, {TargetFails, 2, 3}, {Partial, 2, 3}, {Slow, 3, 3}}
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			root := "//conformance/" + f.name
			e := newEnv(t, root+"/pipeline")
			params, err := s.Setup(e.ctx, e.st, root)
			require.NoError(t, err, "setup of %s", s.Class)
			startPipeline(t, e, sinkPipeline(wrapper, params, s.Rows, s.Payload, s.Resources, s.OnSwiftSource))
			in := &injector{fault: f}
			injectors.Store(wrapper, in)
			defer injectors.Delete(wrapper)
			fl := startFleet(t, e.proxy, root+"/pipeline")
			in.f = fl
			waitCompleted(t, e, fl)
			require.Positive(t, in.fired.Load(), "the fault %s was never injected", f.name)
			got, err := s.ReadBack(e.ctx, e.st, root)
			require.NoError(t, err, "read back %s", s.Class)
			t.Logf("%s: %d faults injected, %d workers killed, %d rows, %d read back", f.name, in.fired.Load(), fl.killed(), s.Rows, len(got))
			checkGuarantee(t, c.Guarantee, s.Rows, got, fmt.Sprintf("sink %s (%s), %s", s.Class, c.Guarantee, f.name))
		})
	}
}

// fire counts a step and tells whether its fault is due (without killing).
func (in *injector) due(name string) bool {
	if in == nil || in.fault.name != name {
		return false
	}
	n := in.seen.Add(1)
	if n%int64(in.fault.every) != 0 || in.fired.Load() >= int64(in.fault.max) {
		return false
	}
	in.fired.Add(1)
	return true
}

type faultySync struct {
	inner connector.SyncSink
	env   connector.Env
	in    *injector
}

func (s *faultySync) Write(msgs []flow.Message) (ytstore.SinkWrite, error) {
	w, err := s.inner.Write(msgs)
	if err == nil && len(msgs) > 0 {
		s.in.step(AfterWrite, s.env.WorkerID)
	}
	return w, err
}

type faultyALOSync struct {
	inner connector.AtLeastOnceSyncSink
	env   connector.Env
	in    *injector
}

func (s *faultyALOSync) WriteBeforeCommit(ctx context.Context, msgs []flow.Message) error {
	err := s.inner.WriteBeforeCommit(ctx, msgs)
	if err == nil && len(msgs) > 0 {
		s.in.step(AfterWrite, s.env.WorkerID)
	}
	return err
}

type faultyAsync struct {
	inner connector.AsyncSink
	env   connector.Env
	in    *injector
}

func (s *faultyAsync) Deliver(ctx context.Context, batches []connector.Batch) (int, error) {
	if len(batches) == 0 {
		return s.inner.Deliver(ctx, batches)
	}
	switch {
	case s.in.due(TargetFails):
		return 0, errTarget
	case s.in.due(Partial):
		n, err := s.inner.Deliver(ctx, batches[:1])
		if err != nil {
			return n, err
		}
		return n, errTarget
	case s.in.due(Slow):
		select {
		case <-time.After(300 * time.Millisecond):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	n, err := s.inner.Deliver(ctx, batches)
	if err == nil {
		s.in.step(AfterDeliver, s.env.WorkerID)
	}
	return n, err
}

// sinkPipeline is the static spec of a sink run: the numbers source (with the string column
// payload, when not ""), a keyed passthrough and the sink under test, on the passthrough or,
// with onSwift, on the source computation.
func sinkPipeline(class, params string, rows int, payload, resources string, onSwift bool) string {
	s, src := idSchema(), fmt.Sprintf("{count = %d}", rows)
	if resources == "" {
		resources = "{}"
	}
	if payload != "" {
		s = idSchema(schema.Column{Name: payload, Type: schema.TypeString, Required: true})
		src = fmt.Sprintf("{count = %d; payload = %q}", rows, payload)
	}
	sink := fmt.Sprintf(`sinks = {target = {sink_class_name = %q; input_stream_ids = ["stored"]; parameters = %s}};`, class, params)
	readSink, storeSink := "", sink
	if onSwift {
		readSink, storeSink = strings.Replace(sink, `["stored"]`, `["rows"]`, 1), ""
	}
	return fmt.Sprintf(`{
    resources = %s;
    computations = {
        read = {
            computation_class_name = "NYT::NFlow::TSwiftPassthroughOrderedSourceComputation";
            source_streams = {src = {source_class_name = %q; parameters = %s}};
            output_stream_ids = ["rows"];
            %s
        };
        store = {
            computation_class_name = "NYT::NFlow::TPassthroughComputation";
            group_by_schema = [
                {name = "hash"; type = "uint64"; required = %%true; expression = "farm_hash(id)"};
                {name = "id"; type = "uint64"; required = %%true};
            ];
            input_stream_ids = ["rows"];
            output_stream_ids = ["stored"];
            %s
        };
    };
    streams = {rows = {schema = %s}; stored = {schema = %s}};
}`, resources, numbersClass, src, readSink, storeSink, s, s)
}

// numbersClass is the conformance suite's own source: ids 0..count-1 over two partitions,
// and with payload = "<column>" that string column too, the id in decimal.
const numbersClass = "conformance_numbers"

type numbersParams struct {
	count   int64
	payload string
}

func (p *numbersParams) IsFinite() bool { return true }

func registerNumbers() {
	wrapMu.Lock()
	defer wrapMu.Unlock()
	if wrapped[numbersClass] {
		return
	}
	wrapped[numbersClass] = true
	registry.Register(registry.Class{
		Name: numbersClass, Role: registry.Source, Guarantee: registry.ExactlyOnce, Runs: true,
		Summary: "ids 0..count-1 over two partitions (conformance suite)",
		Parse: func(f *yson.Fields) any {
			return &numbersParams{count: f.Int("count", 0, 1, 1<<40), payload: f.String("payload", "")}
		},
	})
	connector.RegisterSource(numbersClass, connector.Constructors{
		Partitions: func(context.Context, connector.Env, any) ([]int64, error) { return []int64{0, 1}, nil },
		Source: func(env connector.Env, params any) (connector.Source, error) {
			p := params.(*numbersParams)
			return &numbers{count: p.count, payload: p.payload, partition: env.SourcePartition}, nil
		},
	})
}

// numbers emits the ids i*2+partition below count (and the payload column, when set);
// offset i is the row's index.
type numbers struct {
	count, partition int64
	payload          string
}

func (n *numbers) Read(_ context.Context, from connector.Position, max int64) ([]connector.Row, error) {
	offset, err := connector.PositionOffset(from)
	if err != nil {
		return nil, err
	}
	var rows []connector.Row
	for i := offset; i*2+n.partition < n.count && int64(len(rows)) < max; i++ {
		id := uint64(i*2 + n.partition)
		cols := map[string]any{"id": id}
		if n.payload != "" {
			cols[n.payload] = strconv.FormatUint(id, 10)
		}
		rows = append(rows, connector.Row{Offset: i, Columns: cols})
	}
	connector.OffsetRows(rows)
	return rows, nil
}

func (n *numbers) Advance(context.Context, connector.Position) error { return nil }
func (n *numbers) Finite() bool                                      { return true }
func (n *numbers) String() string                                    { return fmt.Sprintf("numbers partition %d", n.partition) }
