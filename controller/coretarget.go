package controller

import (
	"fmt"

	"github.com/ytflow/yt-flow/ytstore"
)

// The FlowCoreTarget fence (Flow's zombie protection): @flow_core_target names the version of
// the binary (internal/corever) the pipeline's processes must run. A worker of another
// version gets no jobs, and the jobs it has are removed (their leases aborted, so its commits
// fail); a leading controller of another version moves the pipeline to pausing and keeps it
// paused until a controller of the target's version leads. An empty target disables both.
// The spec's validate_binary_version / validate_binary_checksum add the same pause for a
// controller whose version or checksum is not the spec's binary_version / binary_checksum.

// workerEligible reports whether the worker may run jobs under the target.
func workerEligible(target string, w ytstore.Worker) bool {
	return target == "" || w.FlowCoreVersion == target
}

// ControllerMismatch says why this controller may not run the pipeline's jobs ("" when it
// may): its version is not the FlowCoreTarget, or not the spec's binary_version, or its
// checksum is not the spec's binary_checksum (each only when set or asked for).
func ControllerMismatch(in *Input) string {
	switch {
	case in.FlowCoreTarget != "" && in.ControllerVersion != in.FlowCoreTarget:
		return fmt.Sprintf("binary mismatch: the controller runs version %s, the flow core target is %s", orNone(in.ControllerVersion), in.FlowCoreTarget)
	case in.HasSpec && in.Topology.ValidateBinaryVersion && in.ControllerVersion != in.Topology.BinaryVersion:
		return fmt.Sprintf("binary mismatch: the controller runs version %s, the spec's binary_version is %s", orNone(in.ControllerVersion), orNone(in.Topology.BinaryVersion))
	case in.HasSpec && in.Topology.ValidateBinaryChecksum && in.ControllerChecksum != in.Topology.BinaryChecksum:
		return fmt.Sprintf("binary mismatch: the controller's binary has checksum %s, the spec's binary_checksum is %s", orNone(in.ControllerChecksum), orNone(in.Topology.BinaryChecksum))
	}
	return ""
}

func orNone(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

// fenceController applies ControllerMismatch to the state Step moves to: working and
// draining become pausing (Flow's CheckFlowCoreTarget); other states stay. The reason is an
// event once per reason and leadership term.
func (s *Scheduler) fenceController(in *Input, d *Decision, state string) string {
	reason := ControllerMismatch(in)
	d.ControllerMismatch = reason
	if reason == "" {
		s.mismatch = ""
		return state
	}
	if reason != s.mismatch {
		s.mismatch = reason
		d.Events = append(d.Events, reason+": the pipeline pauses until a controller of that version leads")
	}
	if state == ytstore.StateWorking || state == ytstore.StateDraining {
		return ytstore.StatePausing
	}
	return state
}

// noteMismatchedWorkers lists the live workers the target excludes in d and names each in an
// event when it is first seen (again, after its version changed).
func (s *Scheduler) noteMismatchedWorkers(in *Input, d *Decision) {
	seen := map[string]string{}
	for _, w := range in.Workers {
		if !in.WorkerAlive[w.WorkerID] || workerEligible(in.FlowCoreTarget, w) {
			continue
		}
		d.VersionMismatchWorkers = append(d.VersionMismatchWorkers, w.WorkerID)
		seen[w.WorkerID] = w.FlowCoreVersion
		if v, ok := s.refused[w.WorkerID]; !ok || v != w.FlowCoreVersion {
			d.Events = append(d.Events, fmt.Sprintf("worker %s runs version %s, not the flow core target %s: it gets no jobs",
				w.WorkerID, orNone(w.FlowCoreVersion), in.FlowCoreTarget))
		}
	}
	s.refused = seen
}
