// Dynamic spec changes that apply to running jobs: processing_function_parameters and
// failure_policy.

package job

import (
	"go.ytsaurus.tech/library/go/core/log"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/spec"
)

// mergeParams is the process function's parameters: the dynamic spec's
// processing_function_parameters over the static ones.
func mergeParams(static, dynamic map[string]any) flow.Row {
	params := flow.Row{}
	for k, v := range static {
		params[k] = v
	}
	for k, v := range dynamic {
		params[k] = v
	}
	return params
}

// noteDynamicSpec reads the pipeline's dynamic spec when its version changed and hands
// each running job its computation's part (runner.setDynamic). Called by the worker's loop
// after each read of the attributes.
func (w *Worker) noteDynamicSpec(version int64, raw []byte) {
	if version == w.dynVersion {
		return
	}
	var dyn *spec.DynamicPipeline
	if len(raw) > 0 {
		var err error
		if dyn, err = spec.ParseDynamic(raw); err != nil {
			w.log.Warn("cannot parse the new @dynamic_spec; jobs keep the one they have", log.Int64("dynamic_spec_version", version), log.Error(err))
			w.dynVersion = version
			return
		}
	}
	w.dynVersion = version
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, h := range w.runners {
		if h.r != nil && h.r.comp != nil {
			h.r.dynNext.Store(&dynamicUpdate{version: version, comp: dyn.Computation(h.r.comp.ID)})
		}
	}
}

// dynamicUpdate is a computation's part of the dynamic spec of version.
type dynamicUpdate struct {
	version int64
	comp    spec.DynamicComputation
}

// applyDynamic applies a newer dynamic spec of the computation handed over by the worker:
// its processing_function_parameters and failure_policy hold from this epoch on (the other
// keys apply when the job restarts). Runs on the runner's goroutine, between epochs.
//
// Invariant: a dynamic spec change of processing_function_parameters or failure_policy
// reaches running jobs (TestReplayDeadLettersExactlyOnce).
func (r *runner) applyDynamic() {
	u := r.dynNext.Swap(nil)
	if u == nil {
		return
	}
	d := &u.comp
	r.log.Info("dynamic spec applied", log.Int64("dynamic_spec_version", u.version), log.String("failure_policy", d.FailurePolicy.Mode),
		log.Int("max_attempts", d.FailurePolicy.MaxAttempts), log.Any("processing_function_parameters", d.ProcessingFunctionParameters))
	r.dyn.FailurePolicy = d.FailurePolicy
	r.params = mergeParams(r.comp.ProcessingFunctionParameters, d.ProcessingFunctionParameters)
	r.stats.dynamicSpecVersion.Store(u.version)
}
