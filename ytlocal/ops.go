package ytlocal

// Vanilla operations (the scheduler commands): start_operation of type vanilla,
// get_operation, list_operations, abort_operation and complete_operation here; jobs and
// their processes in ops_jobs.go; the operation spec in ops_spec.go.
//
// Every job is a local child process: the task's command run by `sh -c` in a sandbox
// directory holding the operation's files, with the YTsaurus job environment (YT_PROXY of
// this server, YT_OPERATION_ID, YT_JOB_ID, YT_JOB_COOKIE, YT_PORT_<i>, YT_SECURE_VAULT_<k>
// and the task's environment). A job that exits non-zero is failed and replaced by a new
// job with the same cookie until the operation has max_failed_job_count failed jobs; then
// the operation fails and its other jobs are aborted. An aborted job (abort_job) is
// replaced without counting. An operation completes once every task has job_count
// completed jobs. Aborting or completing an operation, and closing the server, kill every
// process of its jobs; so does the death of the server's process (ops_proc_*.go).
//
// With a data folder operations are durable and a restart revives the running ones
// (ops_durable.go); their processes end with the server.

import (
	"os"
	"slices"
	"sort"
	"sync"
	"time"

	"go.ytsaurus.tech/library/go/core/log"
	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yterrors"
)

// Operation states (the subset ytlocal goes through).
const (
	opRunning   = "running"
	opCompleted = "completed"
	opFailed    = "failed"
	opAborted   = "aborted"
)

// Job states.
const (
	jobRunning   = "running"
	jobCompleted = "completed"
	jobFailed    = "failed"
	jobAborted   = "aborted"
)

// opsExt is the scheduler: it owns every operation and job. Handlers run under the
// server's state lock and take mu after it; the goroutines that wait for job processes
// take only mu. So mu is never held while the state lock is taken.
type opsExt struct {
	s   *Server
	log log.Logger

	// spawn starts job processes from one locked OS thread (ops_proc_*.go).
	spawn *spawner

	mu     sync.Mutex
	closed bool
	dir    string // created at the first start_operation; removed by Close
	ops    map[guid.GUID]*operation
	jobs   map[guid.GUID]*job
	wg     sync.WaitGroup // one per job process being waited for
	// unlogged are the ends of operations not logged yet (ops_durable.go); revive are the
	// running operations restored from the log, whose jobs start at the first timer hook;
	// closingAborted are the operations aborted by Close (not ended for a restart).
	unlogged       []opRecord
	revive         map[guid.GUID]bool
	closingAborted map[guid.GUID]bool
}

func init() {
	registerExtension("ops", func(s *Server) (Extension, error) {
		return &opsExt{s: s, log: s.log, ops: map[guid.GUID]*operation{}, jobs: map[guid.GUID]*job{},
			revive: map[guid.GUID]bool{}, closingAborted: map[guid.GUID]bool{}}, nil
	})
	registerCommand("start_operation", commandOpts{Mutating: true}, cmdStartOperation)
	registerCommand("get_operation", commandOpts{}, cmdGetOperation)
	registerCommand("list_operations", commandOpts{}, cmdListOperations)
	registerCommand("abort_operation", commandOpts{Mutating: true}, cmdAbortOperation)
	registerCommand("complete_operation", commandOpts{Mutating: true}, cmdCompleteOperation)
}

func (s *Server) opsExt() *opsExt { return s.extension("ops").(*opsExt) }

// operation is one vanilla operation.
type operation struct {
	id         guid.GUID
	user       string
	spec       opSpec
	state      string
	start      time.Time
	finish     time.Time
	err        *yterrors.Error // why it failed or was aborted
	dir        string          // files/ holds the operation's files
	failedJobs int
	tasks      []*opTask
}

// opTask is the progress of one task of an operation.
type opTask struct {
	spec      *taskSpec
	completed int
	// running maps a job cookie (0..job_count-1) to its current job.
	running map[int]*job
}

// finished reports whether the operation has ended.
func (op *operation) finished() bool { return op.state != opRunning }

// view is the operation as get_operation and list_operations show it.
func (op *operation) view(e *opsExt) map[string]any {
	counts := map[string]int64{}
	for _, j := range e.jobs {
		if j.op == op {
			counts[j.state]++
		}
	}
	running := counts[jobRunning]
	total := counts[jobCompleted] + running
	jobs := map[string]any{
		"total": total, "running": running, "completed": counts[jobCompleted],
		"failed": counts[jobFailed], "aborted": counts[jobAborted], "pending": int64(0), "lost": int64(0),
	}
	v := map[string]any{
		"id":                 op.id.String(),
		"operation_type":     "vanilla",
		"type":               "vanilla",
		"state":              op.state,
		"authenticated_user": op.user,
		"start_time":         yson.Time(op.start),
		"suspended":          false,
		"spec":               op.spec.public,
		"full_spec":          op.spec.public,
		"brief_spec":         op.spec.brief(),
		"brief_progress": map[string]any{
			"jobs":              jobs,
			"total_job_counter": map[string]any{"total": total, "running": running, "completed": counts[jobCompleted], "failed": counts[jobFailed]},
		},
		"progress":           map[string]any{"jobs": jobs},
		"runtime_parameters": map[string]any{"annotations": map[string]any{}},
	}
	if op.finished() {
		v["finish_time"] = yson.Time(op.finish)
		res := map[string]any{}
		if op.err != nil {
			res["error"] = op.err
		}
		v["result"] = res
	}
	return v
}

// filterAttrs keeps the keys of v named by attrs (all when attrs is empty).
func filterAttrs(v map[string]any, attrs []string) map[string]any {
	if len(attrs) == 0 {
		return v
	}
	out := make(map[string]any, len(attrs))
	for _, a := range attrs {
		if x, ok := v[a]; ok {
			out[a] = x
		}
	}
	return out
}

func cmdStartOperation(c *call) (any, error) {
	typ, err := c.requiredStr("operation_type")
	if err != nil {
		return nil, err
	}
	if typ != "vanilla" {
		return nil, ytErr(yterrors.CodeGeneric, "Operation type %q is not supported by ytlocal: only vanilla operations run", typ)
	}
	raw, ok := c.param("spec")
	if !ok {
		return nil, ytErr(yterrors.CodeGeneric, "Missing required parameter \"spec\"")
	}
	sp, err := parseOpSpec(raw)
	if err != nil {
		return nil, err
	}
	e := c.s.opsExt()
	op := &operation{id: c.s.newID(objectTypeOperation), user: c.user, spec: sp, state: opRunning, start: c.now}
	// The files are read now, under the state lock, and written once to the operation's
	// folder; every job's sandbox links them.
	files, err := c.s.readOpFiles(sp, c.user)
	if err != nil {
		return nil, err
	}
	if err := e.logOp(startRecord(op)); err != nil {
		return nil, err
	}
	if err := e.startOperation(op, files); err != nil {
		e.mu.Lock()
		e.ops[op.id] = op
		e.finishOperation(op, opFailed, asYTError(err), c.now)
		e.mu.Unlock()
		e.flushFinished()
		return nil, err
	}
	return map[string]any{"operation_id": op.id.String()}, nil
}

// operation returns the operation named by the call's operation_id or operation_alias.
func (e *opsExt) operation(c *call) (*operation, error) {
	if alias, _ := c.str("operation_alias", ""); alias != "" {
		for _, op := range e.ops {
			if op.spec.alias == alias {
				return op, nil
			}
		}
		return nil, ytErr(yterrors.CodeGeneric, "Operation alias %q is not found", alias)
	}
	id, ok, err := c.guidp("operation_id")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ytErr(yterrors.CodeGeneric, "Missing required parameter \"operation_id\"")
	}
	op := e.ops[id]
	if op == nil {
		return nil, withAttrs(ytErr(codeNoSuchOperation, "No such operation %s", id), "operation_id", id.String())
	}
	return op, nil
}

// codeNoSuchOperation is YTsaurus' NoSuchOperation error code.
const codeNoSuchOperation yterrors.ErrorCode = 1915

// objectTypeOperation is the object type of operation ids.
const objectTypeOperation = 1000

func cmdGetOperation(c *call) (any, error) {
	e := c.s.opsExt()
	e.mu.Lock()
	defer e.mu.Unlock()
	op, err := e.operation(c)
	if err != nil {
		return nil, err
	}
	var attrs []string
	if _, err := c.decode("attributes", &attrs); err != nil {
		return nil, err
	}
	return filterAttrs(op.view(e), attrs), nil
}

func cmdListOperations(c *call) (any, error) {
	state, err := c.str("state", "")
	if err != nil {
		return nil, err
	}
	typ, err := c.str("type", "")
	if err != nil {
		return nil, err
	}
	user, err := c.str("user", "")
	if err != nil {
		return nil, err
	}
	limit, err := c.int64p("limit", 100)
	if err != nil {
		return nil, err
	}
	var attrs []string
	if _, err := c.decode("attributes", &attrs); err != nil {
		return nil, err
	}
	e := c.s.opsExt()
	e.mu.Lock()
	defer e.mu.Unlock()
	ops := make([]*operation, 0, len(e.ops))
	for _, op := range e.ops {
		ops = append(ops, op)
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].start.After(ops[j].start) })
	stateCounts, typeCounts, userCounts := map[string]int64{}, map[string]int64{}, map[string]int64{}
	var out []any
	failed := int64(0)
	for _, op := range ops {
		if typ != "" && typ != "vanilla" || user != "" && user != op.user {
			continue
		}
		stateCounts[op.state]++
		if state != "" && state != op.state {
			continue
		}
		typeCounts["vanilla"]++
		userCounts[op.user]++
		if op.failedJobs > 0 {
			failed++
		}
		if int64(len(out)) < limit {
			out = append(out, filterAttrs(op.view(e), attrs))
		}
	}
	if out == nil {
		out = []any{}
	}
	return map[string]any{
		"operations": out, "incomplete": int64(len(out)) < typeCounts["vanilla"],
		"state_counts": stateCounts, "type_counts": typeCounts, "user_counts": userCounts,
		"pool_counts": map[string]int64{}, "failed_jobs_count": failed,
	}, nil
}

func cmdAbortOperation(c *call) (any, error) {
	defer c.s.opsExt().flushFinished() // after e.mu is released
	msg, err := c.str("abort_message", "")
	if err != nil {
		return nil, err
	}
	e := c.s.opsExt()
	e.mu.Lock()
	defer e.mu.Unlock()
	op, err := e.operation(c)
	if err != nil {
		return nil, err
	}
	if op.finished() {
		return nil, ytErr(yterrors.CodeGeneric, "Operation %s is in %q state and cannot be aborted", op.id, op.state)
	}
	reason := ytErr(yterrors.CodeGeneric, "Operation aborted by user request")
	if msg != "" {
		reason = withAttrs(reason, "abort_message", msg)
	}
	e.finishOperation(op, opAborted, reason, c.now)
	return nil, nil
}

func cmdCompleteOperation(c *call) (any, error) {
	defer c.s.opsExt().flushFinished() // after e.mu is released
	e := c.s.opsExt()
	e.mu.Lock()
	defer e.mu.Unlock()
	op, err := e.operation(c)
	if err != nil {
		return nil, err
	}
	switch op.state {
	case opCompleted:
		return nil, nil
	case opRunning:
		e.finishOperation(op, opCompleted, nil, c.now)
		return nil, nil
	}
	return nil, ytErr(yterrors.CodeGeneric, "Operation %s is in %q state and cannot be completed", op.id, op.state)
}

// finishOperation ends op in state with err as its result, aborting its running jobs
// (their processes are killed). e.mu is held.
func (e *opsExt) finishOperation(op *operation, state string, err *yterrors.Error, now time.Time) {
	op.state, op.err, op.finish = state, err, now
	if !e.closed {
		e.unlogged = append(e.unlogged, finishRecord(op))
		e.s.kickTimers() // logged by the timer hook unless a command does first
	}
	for _, t := range op.tasks {
		for _, j := range t.running {
			j.abort(jobAborted, ytErr(yterrors.CodeGeneric, "Job aborted: the operation is %s", state), now)
		}
		clear(t.running)
	}
	e.log.Info("operation finished", log.String("operation", op.id.String()), log.String("state", state))
}

// Close kills the processes of every running job, waits for them and removes the
// operations' folder.
func (e *opsExt) Close() error {
	e.mu.Lock()
	e.closed = true
	now := time.Now()
	for _, op := range e.ops {
		if !op.finished() {
			e.closingAborted[op.id] = true
			e.finishOperation(op, opAborted, ytErr(yterrors.CodeGeneric, "Operation aborted: the server stopped"), now)
		}
	}
	e.mu.Unlock()
	e.wg.Wait()
	if e.spawn != nil {
		e.spawn.close()
	}
	if e.dir != "" {
		_ = os.RemoveAll(e.dir)
	}
	return nil
}

// sortedTasks returns the task names of a spec in order.
func sortedTasks(m map[string]*taskSpec) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
