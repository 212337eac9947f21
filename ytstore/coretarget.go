package ytstore

import (
	"context"
	"fmt"

	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/yt"
)

// ChangeFlowCoreTarget changes @flow_core_target, the version of the binary the pipeline's
// processes must run (internal/corever; "" disables the check), and counts
// @flow_core_target_version up, in one master transaction in which the version attribute is
// locked: a concurrent change conflicts instead of overwriting. change gets the attributes
// read in the transaction and returns the new target; its error aborts the transaction and
// is returned as is. It returns the new target version.
func (s *Store) ChangeFlowCoreTarget(ctx context.Context, change func(a *Attributes) (string, error)) (int64, error) {
	const versionName = "flow_core_target_version"
	key := versionName
	tx, err := s.yc.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("ytstore: change %s/@flow_core_target: begin: %w", s.path, classify(err))
	}
	defer func() { _ = tx.Abort() }()
	if _, err := tx.LockNode(ctx, s.path, yt.LockShared, &yt.LockNodeOptions{AttributeKey: &key}); err != nil {
		return 0, fmt.Errorf("ytstore: lock %s/@%s: %w", s.path, versionName, classify(err))
	}
	var a Attributes
	if err := tx.GetNode(ctx, s.path.Attrs(), &a, &yt.GetNodeOptions{Attributes: attributeNames}); err != nil {
		return 0, fmt.Errorf("ytstore: read attributes of %s: %w", s.path, classify(err))
	}
	target, err := change(&a)
	if err != nil {
		return 0, err
	}
	version := a.FlowCoreTargetVersion + 1
	if err := tx.SetNode(ctx, s.path.Attr("flow_core_target"), target, nil); err != nil {
		return 0, fmt.Errorf("ytstore: set %s/@flow_core_target: %w", s.path, classify(err))
	}
	if err := tx.SetNode(ctx, s.path.Attr(versionName), version, nil); err != nil {
		return 0, fmt.Errorf("ytstore: set %s/@%s: %w", s.path, versionName, classify(err))
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("ytstore: change %s/@flow_core_target: commit: %w", s.path, classifyCommit(err))
	}
	return version, nil
}

// SetLeaderFlowCoreVersion publishes @leader_flow_core_version, the version of the leading
// controller's binary, conditional on the leader's session.
func (s *Store) SetLeaderFlowCoreVersion(ctx context.Context, leader *Session, version string) error {
	opts := &yt.SetNodeOptions{PrerequisiteOptions: &yt.PrerequisiteOptions{TransactionIDs: []yt.TxID{leader.tx.ID()}}}
	if err := s.yc.SetNode(ctx, s.path.Attr("leader_flow_core_version"), version, opts); err != nil {
		return fmt.Errorf("ytstore: set %s/@leader_flow_core_version: %w", s.path, classify(err))
	}
	return nil
}

// WorkerVersions reports whether the pipeline's workers store their version (a pipeline
// created by an older version does not: a flow core target would then keep every worker
// from jobs).
func (s *Store) WorkerVersions(ctx context.Context) bool { return s.workerVersionColumn(ctx) }

// workerVersionColumn reports whether the workers table has the flow_core_version column (a
// pipeline created before it existed does not: its workers register without a version). It
// is read once; a failed read counts as "no column".
func (s *Store) workerVersionColumn(ctx context.Context) bool {
	s.workerVersionsOnce.Do(func() {
		var sc schema.Schema
		if err := s.yc.GetNode(ctx, s.child(TableWorkers).Attr("schema"), &sc, nil); err != nil {
			s.logger.Warn("workers table schema unreadable: the worker registers without its version")
			return
		}
		for _, c := range sc.Columns {
			if c.Name == "flow_core_version" {
				s.workerVersions = true
			}
		}
		if !s.workerVersions {
			s.logger.Warn("the workers table has no flow_core_version column (pipeline created by an older version): the worker registers without its version")
		}
	})
	return s.workerVersions
}
