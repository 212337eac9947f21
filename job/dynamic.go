// Applying a new dynamic spec to a running job (runner.applyDynamic): the worker hands each
// runner the pipeline's dynamic spec when its version changes (Worker.offerDynamic); the
// runner applies it between two epochs.

package job

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"go.ytsaurus.tech/library/go/core/log"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/spec"
)

// dynEntity is a source or sink of the job with the dynamic parameters it was opened with
// (or last reconfigured to).
type dynEntity struct {
	id      string
	sink    bool
	name    string // "sink ch", "source lines"
	path    string // YSON path of its dynamic parameters
	class   *registry.Class
	static  any
	current any
	// atMostOnce is the sink's dynamic at_most_once_strategy block as opened (nil if none).
	atMostOnce *spec.AtMostOnceStrategy
	impl       any
}

// dynamicOffer is a dynamic spec a runner has yet to apply.
type dynamicOffer struct {
	spec    *spec.DynamicPipeline
	version int64
}

// offerDynamic hands the runner dynamic spec version v; its loop applies it before its next
// epoch (wakes an idle one).
func (r *runner) offerDynamic(d *spec.DynamicPipeline, v int64) {
	if r.dynVersion.Load() == v {
		return
	}
	r.pendingDyn.Store(&dynamicOffer{spec: d, version: v})
	r.wake()
}

// setParams computes the process function's parameters: the static ones overlaid with the
// dynamic spec's.
func (r *runner) setParams() {
	r.params = flow.Row{}
	for k, v := range r.comp.ProcessingFunctionParameters {
		r.params[k] = v
	}
	for k, v := range r.dyn.ProcessingFunctionParameters {
		r.params[k] = v
	}
}

// applyPendingDynamic applies an offered dynamic spec, if there is one. It returns an error
// (connector.ErrRestartToReconfigure or a connector's Reconfigure error) when the job must
// restart to apply it.
// Invariant: a dynamic spec change reaches a running job between two epochs — batch
// settings, process function parameters and failure_policy at once, a connector's dynamic
// parameters by its Reconfigure or by a job restart (TestDynamicSpecAppliesLive).
func (r *runner) applyPendingDynamic(ctx context.Context) error {
	offer := r.pendingDyn.Swap(nil)
	if offer == nil || offer.version == r.dynVersion.Load() {
		return nil
	}
	next := offer.spec.Computation(r.comp.ID)
	for _, e := range r.dynEntities {
		var params map[string]any
		var amo *spec.AtMostOnceStrategy
		if ds := next.Sinks[e.id]; e.sink && ds != nil {
			params, amo = ds.Parameters, ds.AtMostOnce
		} else if ds := next.SourceStreams[e.id]; !e.sink && ds != nil {
			params = ds.Parameters
		}
		if !reflect.DeepEqual(amo, e.atMostOnce) {
			return fmt.Errorf("job %s: computation %s: %s: at_most_once_strategy: %w", r.job.JobID, r.comp.ID, e.name, connector.ErrRestartToReconfigure)
		}
		dyn, err := spec.DynamicParams(e.class, e.static, params, e.path)
		if err != nil {
			return fmt.Errorf("job %s: computation %s: %s: dynamic spec version %d: %w", r.job.JobID, r.comp.ID, e.name, offer.version, err)
		}
		if reflect.DeepEqual(dyn, e.current) {
			continue
		}
		rc, ok := e.impl.(connector.Reconfigurer)
		if !ok {
			return fmt.Errorf("job %s: computation %s: %s (%s): %w", r.job.JobID, r.comp.ID, e.name, e.class.Name, connector.ErrRestartToReconfigure)
		}
		if err := rc.Reconfigure(ctx, dyn); err != nil {
			return fmt.Errorf("job %s: computation %s: %s (%s): apply dynamic spec version %d: %w", r.job.JobID, r.comp.ID, e.name, e.class.Name, offer.version, err)
		}
		e.current = dyn
		r.log.Info("connector reconfigured", log.String("entity", e.name), log.Int64("dynamic_spec_version", offer.version))
	}
	r.dyn = next
	r.dynDraining.Store(next.Draining)
	r.setParams()
	r.dynVersion.Store(offer.version)
	r.log.Info("dynamic spec applied", log.Int64("dynamic_spec_version", offer.version))
	return nil
}

// unavailableAfter is the unavailable_threshold of source id as its dynamic parameters give
// it (connector.Unavailability); 0 when it has none.
func (r *runner) unavailableAfter(id string) time.Duration {
	for _, e := range r.dynEntities {
		if e.sink || e.id != id {
			continue
		}
		if u, ok := e.current.(connector.Unavailability); ok {
			return u.UnavailableAfter()
		}
	}
	return 0
}
