package ytlocal

// Durable operations. With a data folder every operation start and end is a log record
// ("ops"), and snapshots hold every operation, so that a restarted server knows them, as
// YTsaurus's scheduler keeps its operations in Cypress. What a restart does with them is
// what YTsaurus does after a scheduler restart: a running operation is revived — its jobs
// died with the server, and each task gets job_count new jobs (from the operation's files,
// read again from Cypress; if that fails, the operation fails with the reason). A finished
// operation keeps its state and result. Jobs are not durable: list_jobs shows the jobs
// started since the restart, and the failed-job count starts again at 0.
//
// The secure vault is part of the record (a revived operation's jobs need it); like every
// other byte of the data folder it stays on this host and is never shown by a command.
//
// Records are written under the state lock before the change is visible: a start by
// start_operation, an end by the command that ends the operation (abort_operation,
// complete_operation) or, for an operation ended by its jobs (on the goroutines that wait
// for job processes, which do not hold the state lock), by the timer hook soon after. An
// operation that ends when its server does (Close) is not recorded as ended: it is revived.

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"go.ytsaurus.tech/library/go/core/log"
	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yterrors"
)

// opsLogName owns the scheduler's log records.
const opsLogName = "ops"

// opRecord is one log record of the scheduler, and one entry of its snapshot.
type opRecord struct {
	// Kind is "start" or "finish".
	Kind string `yson:"kind"`
	ID   string `yson:"id"`
	// User, Spec (the spec as given, secure vault included) and Start: of a start.
	User  string `yson:"user,omitempty"`
	Spec  any    `yson:"spec,omitempty"`
	Start int64  `yson:"start,omitempty"` // µs since the epoch
	// State, Error and Finish: of a finish.
	State  string          `yson:"state,omitempty"`
	Error  *yterrors.Error `yson:"error,omitempty"`
	Finish int64           `yson:"finish,omitempty"`
}

// startRecord is the record of op's start.
func startRecord(op *operation) opRecord {
	return opRecord{Kind: "start", ID: op.id.String(), User: op.user, Spec: op.spec.raw, Start: op.start.UnixMicro()}
}

// finishRecord is the record of op's end.
func finishRecord(op *operation) opRecord {
	return opRecord{Kind: "finish", ID: op.id.String(), State: op.state, Error: op.err, Finish: op.finish.UnixMicro()}
}

// logOp appends rec to the log. The state lock is held.
func (e *opsExt) logOp(rec opRecord) error {
	b, err := yson.Marshal(rec)
	if err != nil {
		return fmt.Errorf("ytlocal: encode operation record: %w", err)
	}
	return e.s.logRecord(opsLogName, b)
}

// flushFinished logs the ends of operations not logged yet. The state lock is held, e.mu is
// not.
func (e *opsExt) flushFinished() {
	e.mu.Lock()
	recs := e.unlogged
	e.unlogged = nil
	e.mu.Unlock()
	for _, r := range recs {
		if err := e.logOp(r); err != nil {
			e.log.Error("cannot log the end of an operation: a restart revives it", log.String("operation", r.ID), log.Error(err))
		}
	}
}

// Snapshot writes every operation: its start and, if it ended, its end.
func (e *opsExt) Snapshot(w io.Writer) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var recs []opRecord
	for _, op := range e.ops {
		recs = append(recs, startRecord(op))
		if op.finished() && !e.closingAborted[op.id] {
			recs = append(recs, finishRecord(op))
		}
	}
	b, err := yson.Marshal(recs)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// Restore reads a snapshot written by Snapshot.
func (e *opsExt) Restore(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil // a snapshot of a version without durable operations
	}
	var recs []opRecord
	if err := yson.Unmarshal(b, &recs); err != nil {
		return fmt.Errorf("ytlocal: operations snapshot: %w", err)
	}
	for _, r := range recs {
		if err := e.apply(r); err != nil {
			return err
		}
	}
	return nil
}

// Apply replays one record.
func (e *opsExt) Apply(rec []byte) error {
	var r opRecord
	if err := yson.Unmarshal(rec, &r); err != nil {
		return fmt.Errorf("ytlocal: operation record: %w", err)
	}
	return e.apply(r)
}

func (e *opsExt) apply(r opRecord) error {
	id, err := guid.ParseString(r.ID)
	if err != nil {
		return fmt.Errorf("ytlocal: operation record: id %q: %w", r.ID, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch r.Kind {
	case "start":
		sp, err := parseOpSpec(r.Spec)
		if err != nil {
			return fmt.Errorf("ytlocal: operation %s: its recorded spec: %w", id, err)
		}
		op := &operation{id: id, user: r.User, spec: sp, state: opRunning, start: time.UnixMicro(r.Start)}
		for _, name := range sortedTasks(sp.tasks) {
			op.tasks = append(op.tasks, &opTask{spec: sp.tasks[name], running: map[int]*job{}})
		}
		e.ops[id] = op
		e.revive[id] = true
	case "finish":
		op := e.ops[id]
		if op == nil {
			return fmt.Errorf("ytlocal: operation record: end of unknown operation %s", id)
		}
		if r.State != opCompleted && r.State != opFailed && r.State != opAborted {
			return fmt.Errorf("ytlocal: operation record: operation %s ends in state %q", id, r.State)
		}
		op.state, op.err, op.finish = r.State, r.Error, time.UnixMicro(r.Finish)
		delete(e.revive, id)
	default:
		return fmt.Errorf("ytlocal: operation record: unknown kind %q", r.Kind)
	}
	return nil
}

// NextDeadline asks the timer hook to run at once while operations wait to be revived or
// ends of operations to be logged.
func (e *opsExt) NextDeadline() (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || len(e.revive) == 0 && len(e.unlogged) == 0 {
		return time.Time{}, false
	}
	return time.Time{}, true
}

// Expire logs the ends of operations and revives the operations of a restart. The state
// lock is held.
func (e *opsExt) Expire(now time.Time) {
	e.flushFinished()
	e.mu.Lock()
	ids := make([]guid.GUID, 0, len(e.revive))
	for id := range e.revive {
		ids = append(ids, id)
	}
	clear(e.revive)
	e.mu.Unlock()
	for _, id := range ids {
		op := e.ops[id] // e.ops changes only under the state lock
		files, err := e.s.readOpFiles(op.spec, op.user)
		if err == nil {
			err = e.reviveOperation(op, files, now)
		}
		if err != nil {
			reason := ytErr(yterrors.CodeGeneric, "Operation failed to revive after the server restarted")
			reason.InnerErrors = []*yterrors.Error{asYTError(err)}
			e.mu.Lock()
			e.finishOperation(op, opFailed, reason, now)
			e.mu.Unlock()
			e.flushFinished()
			continue
		}
	}
}

// reviveOperation writes the files of a restored running operation and starts job_count
// jobs of every task.
func (e *opsExt) reviveOperation(op *operation, files map[string][]opFileData, now time.Time) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	if err := e.writeFiles(op, files); err != nil {
		return err
	}
	for _, t := range op.tasks {
		for cookie := range t.spec.jobCount {
			e.startJob(op, t, cookie, now)
		}
	}
	e.log.Info("operation revived", log.String("operation", op.id.String()), log.String("user", op.user))
	return nil
}

// writeFiles creates the operations' folder if needed and writes op's files there. e.mu is
// held.
func (e *opsExt) writeFiles(op *operation, files map[string][]opFileData) error {
	if e.dir == "" {
		dir, err := e.makeDir()
		if err != nil {
			return fmt.Errorf("ytlocal: operations folder: %w", err)
		}
		e.dir = dir
		e.spawn = newSpawner()
	}
	op.dir = filepath.Join(e.dir, op.id.String())
	for task, list := range files {
		dir := filepath.Join(op.dir, "files", task)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for _, fd := range list {
			mode := os.FileMode(0o644)
			if fd.f.executable {
				mode = 0o755
			}
			if err := os.WriteFile(filepath.Join(dir, fd.f.name), fd.data, mode); err != nil {
				return fmt.Errorf("ytlocal: write the operation's file %s: %w", fd.f.name, err)
			}
		}
	}
	return nil
}
