// Opening a job's sinks and sources through the connector registry (openSink, openSource).

package job

import (
	"context"
	"errors"
	"fmt"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytstore"

	// Every connector class of this build registers itself.
	_ "github.com/ytflow/yt-flow/connectors/all"
)

// env is what a connector opened for job j gets.
func (r *runner) env(j ytstore.Job, comp *spec.Computation) connector.Env {
	return connector.Env{
		Store: r.w.store, PipelinePath: r.w.cfg.Path, WorkerID: r.w.id, ComputationID: comp.ID, PartitionID: j.PartitionID, JobID: j.JobID,
		SourcePartition: j.SourcePartition,
	}
}

// openSink opens sink id of comp through the connector SPI by its kind and returns its
// destination in the epoch's routes.
func (r *runner) openSink(j ytstore.Job, comp *spec.Computation, id string) (epoch.Destination, error) {
	s := comp.Sinks[id]
	dest := epoch.Destination{ID: sinkDestPrefix + id}
	unsupported := fmt.Errorf("job %s: computation %s: sink %s: class %s is not supported by this runtime", j.JobID, comp.ID, id, s.ClassName)
	if s.Class == nil || !s.Class.Runs {
		return dest, unsupported
	}
	ctors, ok := connector.SinkOf(s.Class.Name)
	if !ok {
		return dest, unsupported
	}
	env := r.env(j, comp)
	env.SinkID, env.SourcePartition = id, -1
	var dynParams map[string]any
	if ds := r.dyn.Sinks[id]; ds != nil {
		dynParams = ds.Parameters
	}
	dyn, err := spec.DynamicParams(s.Class, s.Params, dynParams, "dynamic_spec/computations/"+comp.ID+"/sinks/"+id+"/parameters")
	if err != nil {
		return dest, fmt.Errorf("job %s: computation %s: sink %s: %w", j.JobID, comp.ID, id, err)
	}
	env.Dynamic = dyn
	entity := &dynEntity{id: id, sink: true, name: "sink " + id, path: "dynamic_spec/computations/" + comp.ID + "/sinks/" + id + "/parameters",
		class: s.Class, static: s.Params, current: dyn}
	if ds := r.dyn.Sinks[id]; ds != nil {
		entity.atMostOnce = ds.AtMostOnce
	}
	opened := func(impl any, err error) error {
		if err != nil {
			return fmt.Errorf("job %s: computation %s: sink %s (%s): %w", j.JobID, comp.ID, id, s.Class.Name, err)
		}
		entity.impl = impl
		r.dynEntities = append(r.dynEntities, entity)
		return nil
	}
	switch {
	case s.Class.Kind == registry.SyncSink && ctors.SyncSink != nil:
		sink, err := ctors.SyncSink(env, s.Params)
		dest.Kind, r.syncSinks[dest.ID] = epoch.ToSyncSink, sink
		return dest, opened(sink, err)
	case s.Class.Kind == registry.AtLeastOnceSyncSink && ctors.AtLeastOnceSyncSink != nil:
		// The core routes its outputs as a sync sink's; the epoch writes them before it
		// commits (writeBeforeCommit).
		sink, err := ctors.AtLeastOnceSyncSink(env, s.Params)
		dest.Kind, r.aloSinks[dest.ID] = epoch.ToSyncSink, sink
		return dest, opened(sink, err)
	case s.Class.Kind == registry.AsyncSink && s.AtMostOnce != nil && s.AtMostOnce.Enabled && ctors.BestEffort != nil:
		w, err := ctors.BestEffort(env, s.Params)
		if err != nil {
			return dest, opened(nil, err)
		}
		limit, suspend := s.AtMostOnce.TotalQueueBytesLimit, s.AtMostOnce.SuspendDestructionDuration
		if ds, ok := r.dyn.Sinks[id]; ok && ds != nil && ds.AtMostOnce != nil {
			if ds.AtMostOnce.TotalQueueBytesLimit > 0 {
				limit = ds.AtMostOnce.TotalQueueBytesLimit
			}
			if ds.AtMostOnce.SuspendDestructionDuration > 0 {
				suspend = ds.AtMostOnce.SuspendDestructionDuration
			}
		}
		dest.Kind, r.bestEffort[dest.ID] = epoch.ToBestEffortSink, connector.NewAtMostOnce(w, limit, suspend)
		return dest, opened(w, nil)
	case s.Class.Kind == registry.AsyncSink && ctors.AsyncSink != nil:
		sink, err := ctors.AsyncSink(env, s.Params)
		dest.Kind, r.asyncSinks[dest.ID] = epoch.ToAsyncSink, sink
		return dest, opened(sink, err)
	}
	return dest, unsupported
}

// openSource opens the partition of source id of comp that job j reads.
func (r *runner) openSource(j ytstore.Job, comp *spec.Computation, id string) (connector.Source, error) {
	s := comp.Sources[id]
	unsupported := fmt.Errorf("job %s: computation %s: source %s: class %s is not supported by this runtime", j.JobID, comp.ID, id, s.ClassName)
	if s.Class == nil || !s.Class.Runs {
		return nil, unsupported
	}
	ctors, ok := connector.SourceOf(s.Class.Name)
	if !ok || ctors.Source == nil {
		return nil, unsupported
	}
	if j.SourcePartition < 0 {
		return nil, fmt.Errorf("job %s: computation %s: source job without a source partition", j.JobID, comp.ID)
	}
	env := r.env(j, comp)
	env.SourceID = id
	var dynParams map[string]any
	if ds := r.dyn.SourceStreams[id]; ds != nil {
		dynParams = ds.Parameters
	}
	dyn, err := spec.DynamicParams(s.Class, s.Params, dynParams, "dynamic_spec/computations/"+comp.ID+"/source_streams/"+id+"/parameters")
	if err != nil {
		return nil, fmt.Errorf("job %s: computation %s: source %s: %w", j.JobID, comp.ID, id, err)
	}
	env.Dynamic = dyn
	src, err := ctors.Source(env, s.Params)
	if err != nil {
		return nil, fmt.Errorf("job %s: computation %s: source %s (%s): %w", j.JobID, comp.ID, id, s.Class.Name, err)
	}
	r.dynEntities = append(r.dynEntities, &dynEntity{id: id, name: "source " + id, path: "dynamic_spec/computations/" + comp.ID + "/source_streams/" + id + "/parameters",
		class: s.Class, static: s.Params, current: dyn, impl: src})
	return src, nil
}

// aloWrite is one epoch's messages for an at-least-once sync sink.
type aloWrite struct {
	dest string
	sink connector.AtLeastOnceSyncSink
	msgs []flow.Message
}

// errSinkWrite marks an epoch that did not commit because an at-least-once sync sink's write
// failed; the epoch is retried like one that did not apply.
var errSinkWrite = errors.New("at-least-once sink write failed")

// writeBeforeCommit writes the epoch's messages to its at-least-once sync sinks, in
// destination order, and returns once each acknowledged them. An error means the epoch must
// not commit: it is recomputed and written again (the sink is at-least-once).
//
// Invariant: an epoch commits only after every at-least-once sync sink acknowledged its
// messages (TestAtLeastOnceSyncSinkConformance).
func (r *runner) writeBeforeCommit(ctx context.Context) error {
	for _, w := range r.beforeCommit {
		if err := w.sink.WriteBeforeCommit(ctx, w.msgs); err != nil {
			r.stats.sink(w.dest).failures.Add(1)
			return fmt.Errorf("%w: job %s: %s: %w", errNotApplied, r.job.JobID, w.dest, errors.Join(errSinkWrite, err))
		}
		r.stats.sink(w.dest).delivered.Add(1)
	}
	return nil
}
