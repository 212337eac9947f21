package ytstore

// The vanilla operation a pipeline is deployed as (`yt-flow deploy`): the binary uploaded
// to Cypress, the operation started, read and aborted through the scheduler commands, and
// the pipeline attribute that remembers it.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"

	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yt"
	"go.ytsaurus.tech/yt/go/yterrors"
)

// DeploymentAttr is the pipeline attribute holding the Deployment of the pipeline.
const DeploymentAttr = "yt_flow_deployment"

// Deployment is what `yt-flow deploy` records on the pipeline node: the operation its
// controller and workers run in, the binary version and the operation spec without its
// secure vault (what a reanimation resubmits).
type Deployment struct {
	OperationID string         `yson:"operation_id"`
	Version     string         `yson:"version"`
	Binary      string         `yson:"binary"`
	Spec        map[string]any `yson:"spec"`
}

// Deployment returns the pipeline's recorded deployment; ok is false when it has none.
func (s *Store) Deployment(ctx context.Context) (d Deployment, ok bool, err error) {
	p := s.path.Attr(DeploymentAttr)
	exists, err := s.yc.NodeExists(ctx, p, nil)
	if err != nil {
		return Deployment{}, false, fmt.Errorf("ytstore: read %s: %w", p, classify(err))
	}
	if !exists {
		return Deployment{}, false, nil
	}
	if err := s.yc.GetNode(ctx, p, &d, nil); err != nil {
		return Deployment{}, false, fmt.Errorf("ytstore: read %s: %w", p, classify(err))
	}
	return d, true, nil
}

// SetDeployment records d on the pipeline node.
func (s *Store) SetDeployment(ctx context.Context, d Deployment) error {
	p := s.path.Attr(DeploymentAttr)
	if err := s.yc.SetNode(ctx, p, d, nil); err != nil {
		return fmt.Errorf("ytstore: write %s: %w", p, classify(err))
	}
	return nil
}

// UploadFile stores the content of r as the executable Cypress file path unless a file is
// there already (callers name files by their content's checksum, so an existing one is the
// same). The content is written to a temporary sibling and moved into place, so that path
// never holds a partial file. It reports whether it uploaded.
func (s *Store) UploadFile(ctx context.Context, path string, r io.Reader) (bool, error) {
	dst := ypath.Path(path)
	exists, err := s.yc.NodeExists(ctx, dst, nil)
	if err != nil {
		return false, fmt.Errorf("ytstore: upload %s: %w", path, classify(err))
	}
	if exists {
		return false, nil
	}
	tmp := ypath.Path(fmt.Sprintf("%s.tmp-%08x", path, rand.Uint32()))
	if _, err := s.yc.CreateNode(ctx, tmp, yt.NodeFile, &yt.CreateNodeOptions{Recursive: true,
		Attributes: map[string]any{"executable": true}}); err != nil {
		return false, fmt.Errorf("ytstore: upload %s: create %s: %w", path, tmp, classify(err))
	}
	defer func() { _ = s.yc.RemoveNode(context.WithoutCancel(ctx), tmp, &yt.RemoveNodeOptions{Force: true}) }()
	w, err := s.yc.WriteFile(ctx, tmp, nil)
	if err != nil {
		return false, fmt.Errorf("ytstore: upload %s: %w", path, classify(err))
	}
	if _, err := io.Copy(w, r); err != nil {
		_ = w.Close()
		return false, fmt.Errorf("ytstore: upload %s: %w", path, classify(err))
	}
	if err := w.Close(); err != nil {
		return false, fmt.Errorf("ytstore: upload %s: %w", path, classify(err))
	}
	if _, err := s.yc.MoveNode(ctx, tmp, dst, nil); err != nil {
		if ok, _ := s.yc.NodeExists(ctx, dst, nil); ok {
			return false, nil // uploaded meanwhile by another deploy
		}
		return false, fmt.Errorf("ytstore: upload %s: move into place: %w", path, classify(err))
	}
	return true, nil
}

// StartVanilla starts a vanilla operation with spec and returns its id.
func (s *Store) StartVanilla(ctx context.Context, spec map[string]any) (string, error) {
	id, err := s.yc.StartOperation(ctx, yt.OperationVanilla, spec, nil)
	if err != nil {
		return "", fmt.Errorf("ytstore: start the vanilla operation: %w", classify(err))
	}
	return id.String(), nil
}

// Operation is the state of a scheduler operation.
type Operation struct {
	ID    string
	State string
	// Finished is true in a final state (completed, failed, aborted).
	Finished bool
	// Error is why the operation failed or was aborted ("" otherwise).
	Error string
	// Jobs counts its jobs by state.
	Running, Completed, Failed, Aborted int
}

// ErrNoSuchOperation is returned for an operation the cluster does not know.
var ErrNoSuchOperation = errors.New("no such operation")

// codeNoSuchOperation is YTsaurus' NoSuchOperation error code.
const codeNoSuchOperation = 1915

func operationID(id string) (yt.OperationID, error) {
	g, err := guid.ParseString(id)
	if err != nil {
		return yt.OperationID{}, fmt.Errorf("ytstore: operation id %q: %w", id, err)
	}
	return yt.OperationID(g), nil
}

// Operation reads the operation id and counts its jobs.
func (s *Store) Operation(ctx context.Context, id string) (Operation, error) {
	opID, err := operationID(id)
	if err != nil {
		return Operation{}, err
	}
	st, err := s.yc.GetOperation(ctx, opID, nil)
	if err != nil {
		if yterrors.ContainsErrorCode(err, codeNoSuchOperation) {
			return Operation{}, fmt.Errorf("ytstore: operation %s: %w", id, ErrNoSuchOperation)
		}
		return Operation{}, fmt.Errorf("ytstore: get operation %s: %w", id, classify(err))
	}
	op := Operation{ID: id, State: string(st.State), Finished: st.State.IsFinished()}
	if st.Result != nil && st.Result.Error != nil {
		op.Error = st.Result.Error.Error()
	}
	jobs, err := s.OperationJobs(ctx, id)
	if err != nil {
		return Operation{}, err
	}
	for _, j := range jobs {
		switch j.State {
		case "running":
			op.Running++
		case "completed":
			op.Completed++
		case "failed":
			op.Failed++
		case "aborted":
			op.Aborted++
		}
	}
	return op, nil
}

// OperationJob is one job of an operation.
type OperationJob struct {
	ID, Task, State string
}

// OperationJobs lists the jobs of operation id.
func (s *Store) OperationJobs(ctx context.Context, id string) ([]OperationJob, error) {
	opID, err := operationID(id)
	if err != nil {
		return nil, err
	}
	r, err := s.yc.ListJobs(ctx, opID, nil)
	if err != nil {
		return nil, fmt.Errorf("ytstore: list the jobs of operation %s: %w", id, classify(err))
	}
	out := make([]OperationJob, 0, len(r.Jobs))
	for _, j := range r.Jobs {
		out = append(out, OperationJob{ID: j.ID.String(), Task: j.TaskName, State: j.State})
	}
	return out, nil
}

// AbortOperation aborts operation id with message.
func (s *Store) AbortOperation(ctx context.Context, id, message string) error {
	opID, err := operationID(id)
	if err != nil {
		return err
	}
	var opts *yt.AbortOperationOptions
	if message != "" {
		opts = &yt.AbortOperationOptions{AbortMessage: &message}
	}
	if err := s.yc.AbortOperation(ctx, opID, opts); err != nil {
		return fmt.Errorf("ytstore: abort operation %s: %w", id, classify(err))
	}
	return nil
}
