package ytlocal

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"time"

	"go.ytsaurus.tech/library/go/core/log"
	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yterrors"
)

// job is one run of a task's command: a process group led by the job wrapper (see
// jobWrapper) in its own sandbox.
type job struct {
	id     guid.GUID
	op     *operation
	task   *opTask
	cookie int
	state  string
	start  time.Time
	finish time.Time
	err    *yterrors.Error
	dir    string // sandbox/ and stderr live here
	cmd    *exec.Cmd
	// guard is the write end of the pipe the wrapper's watchdog reads: it closes when this
	// process dies, and the watchdog then kills the job's process group.
	guard *os.File
}

// sandbox is the job's working directory.
func (j *job) sandbox() string { return filepath.Join(j.dir, "sandbox") }

// stderrPath is the file the job's stderr goes to.
func (j *job) stderrPath() string { return filepath.Join(j.dir, "stderr") }

// abort ends a running job in state (aborted, or failed) and kills its process group.
// The goroutine waiting for the process sees the state and does not restart the job.
// e.mu is held.
func (j *job) abort(state string, err *yterrors.Error, now time.Time) {
	if j.state != jobRunning {
		return
	}
	j.state, j.err, j.finish = state, err, now
	killGroup(j.cmd)
}

// opFileData is the content of one of an operation's files.
type opFileData struct {
	f    opFile
	data []byte
}

// readOpFiles reads the files named by the tasks' file_paths. Call with the state lock
// held (it is, in a handler).
func (s *Server) readOpFiles(sp opSpec, user string) (map[string][]opFileData, error) {
	out := map[string][]opFileData{}
	for _, name := range sortedTasks(sp.tasks) {
		for i, f := range sp.tasks[name].files {
			at := fmt.Sprintf("tasks/%s/file_paths/%d", name, i)
			p, err := parsePathParam("path", f.path)
			if err != nil {
				return nil, specError(at, "%v", err)
			}
			n, err := s.resolveTyped(p, nil, "file", "use as a job file")
			if err != nil {
				e := withAttrs(ytErr(yterrors.CodeGeneric, "Error reading the operation's file %s (%s)", f.path, at), "path", f.path)
				e.InnerErrors = []*yterrors.Error{asYTError(err)}
				return nil, e
			}
			if !s.allowed(user, "read", n, nil) {
				return nil, withAttrs(ytErr(yterrors.CodeAuthorizationError, "Access denied for user %q: \"read\" permission for file %s", user, f.path), "path", f.path)
			}
			if v, ok := s.tree.attrOf(n, nil, "executable"); ok {
				if b, ok := yson.ValueOf(v).(bool); ok && b {
					f.executable = true
				}
			}
			out[name] = append(out[name], opFileData{f: f, data: s.tree.contentOf(n, nil).data})
		}
	}
	return out, nil
}

// startOperation writes the operation's files and starts job_count jobs of every task.
func (e *opsExt) startOperation(op *operation, files map[string][]opFileData) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	if err := e.writeFiles(op, files); err != nil {
		return err
	}
	e.ops[op.id] = op
	for _, name := range sortedTasks(op.spec.tasks) {
		op.tasks = append(op.tasks, &opTask{spec: op.spec.tasks[name], running: map[int]*job{}})
	}
	for _, t := range op.tasks {
		for cookie := range t.spec.jobCount {
			e.startJob(op, t, cookie, op.start)
		}
	}
	e.log.Info("operation started", log.String("operation", op.id.String()), log.String("user", op.user))
	return nil
}

// makeDir creates the folder of the operations' files and sandboxes: "operations" in
// DataDir (emptied first: what a killed server left there), else a temporary folder.
func (e *opsExt) makeDir() (string, error) {
	if e.s.cfg.DataDir == "" {
		return os.MkdirTemp("", "ytlocal-operations-")
	}
	dir := filepath.Join(e.s.cfg.DataDir, "operations")
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	return dir, os.MkdirAll(dir, 0o755)
}

// startJob starts one job of task t in slot cookie. A job whose process cannot start
// fails at once (and is replaced as any failed job). e.mu is held.
func (e *opsExt) startJob(op *operation, t *opTask, cookie int, now time.Time) {
	j := &job{id: guid.New(), op: op, task: t, cookie: cookie, state: jobRunning, start: now}
	j.dir = filepath.Join(op.dir, "jobs", j.id.String())
	e.jobs[j.id] = j
	t.running[cookie] = j
	err := e.launch(j)
	if err != nil {
		j.state = jobFailed
		e.jobEnded(j, ytErr(yterrors.CodeGeneric, "Job failed to start: %v", err), now)
		return
	}
	e.wg.Add(1)
	go e.wait(j)
}

// launch prepares the sandbox of j and starts its process.
func (e *opsExt) launch(j *job) error {
	if err := os.MkdirAll(j.sandbox(), 0o755); err != nil {
		return err
	}
	for _, f := range j.task.spec.files {
		src := filepath.Join(j.op.dir, "files", j.task.spec.name, f.name)
		dst := filepath.Join(j.sandbox(), f.name)
		if err := os.Link(src, dst); err != nil {
			if err := os.Symlink(src, dst); err != nil {
				return err
			}
		}
	}
	stderr, err := os.Create(j.stderrPath())
	if err != nil {
		return err
	}
	defer stderr.Close()
	stdout, err := os.Create(filepath.Join(j.dir, "stdout"))
	if err != nil {
		return err
	}
	defer stdout.Close()
	guardR, guardW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer guardR.Close()
	cmd := exec.Command("/bin/sh", "-c", jobWrapper, "yt-job", j.task.spec.command)
	cmd.Dir = j.sandbox()
	cmd.Env = e.jobEnv(j)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.ExtraFiles = []*os.File{guardR}
	cmd.SysProcAttr = jobProcAttr()
	if err := e.spawn.start(cmd); err != nil {
		guardW.Close()
		return err
	}
	j.cmd, j.guard = cmd, guardW
	return nil
}

// jobWrapper runs a job's command ($1) in the background and waits for it. Its watchdog
// reads fd 3, the pipe whose only writer is the server: when the server's process dies the
// read ends and the watchdog kills the whole process group (the wrapper itself dies at once
// by its parent-death signal, but that signal is not inherited by the processes it starts).
const jobWrapper = `{ read -r _ <&3; kill -KILL 0; } &
w=$!
sh -c "$1" 3<&- &
c=$!
wait "$c"
s=$?
kill "$w" 2>/dev/null
exit "$s"`

// jobEnv is the environment of j's process: PATH and TMPDIR of the server, the YTsaurus
// job variables, the secure vault and the task's environment.
func (e *opsExt) jobEnv(j *job) []string {
	env := map[string]string{"PATH": "/usr/local/bin:/usr/bin:/bin"}
	for _, k := range []string{"PATH", "TMPDIR", "LANG", "GOCOVERDIR"} {
		if v := os.Getenv(k); v != "" {
			env[k] = v
		}
	}
	env["HOME"] = j.sandbox()
	env["YT_PROXY"] = e.s.Addr()
	env["YT_OPERATION_ID"] = j.op.id.String()
	env["YT_JOB_ID"] = j.id.String()
	env["YT_JOB_COOKIE"] = strconv.Itoa(j.cookie)
	env["YT_JOB_INDEX"] = strconv.Itoa(j.cookie)
	env["YT_TASK_NAME"] = j.task.spec.name
	for i := range j.task.spec.portCount {
		env["YT_PORT_"+strconv.Itoa(i)] = strconv.Itoa(freePort())
	}
	for k, v := range j.op.spec.secureVault {
		env["YT_SECURE_VAULT_"+k] = v
	}
	for k, v := range j.task.spec.env {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// freePort returns a loopback port free at the time of the call (0 if none is found).
func freePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// wait waits for j's process, kills what is left of its process group and records how
// the job ended.
func (e *opsExt) wait(j *job) {
	defer e.wg.Done()
	err := j.cmd.Wait()
	killGroup(j.cmd)
	_ = j.guard.Close()
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	if j.state != jobRunning { // aborted or failed by the scheduler: nothing to decide
		e.jobEnded(j, nil, now)
		return
	}
	j.finish = now
	if err == nil {
		j.state = jobCompleted
		e.jobEnded(j, nil, now)
		return
	}
	j.state = jobFailed
	var ee *exec.ExitError
	msg := err.Error()
	if errors.As(err, &ee) {
		msg = fmt.Sprintf("Process exited with code %d", ee.ExitCode())
	}
	e.jobEnded(j, withAttrs(ytErr(yterrors.CodeGeneric, "Job failed: %s", msg), "exit_code", int64(exitCode(err))), now)
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// jobEnded applies the end of job j (its state set) to its operation: a completed job
// counts towards its task, a failed one counts towards max_failed_job_count and is
// replaced, an aborted one is replaced unless its operation has ended. e.mu is held.
func (e *opsExt) jobEnded(j *job, err *yterrors.Error, now time.Time) {
	if err != nil {
		j.err = err
	}
	if j.finish.IsZero() {
		j.finish = now
	}
	op, t := j.op, j.task
	if t.running[j.cookie] == j {
		delete(t.running, j.cookie)
	}
	if op.finished() || e.closed {
		return
	}
	switch j.state {
	case jobCompleted:
		t.completed++
		if slices.IndexFunc(op.tasks, func(t *opTask) bool { return t.completed < t.spec.jobCount }) < 0 {
			e.finishOperation(op, opCompleted, nil, now)
		}
		return
	case jobFailed:
		op.failedJobs++
		if op.failedJobs >= op.spec.maxFailedJobs || op.spec.failOnJobRestart {
			reason := ytErr(yterrors.CodeGeneric, "Failed jobs limit exceeded")
			if op.spec.failOnJobRestart {
				reason = ytErr(yterrors.CodeGeneric, "Job failed and fail_on_job_restart is set")
			}
			if j.err != nil {
				reason.InnerErrors = []*yterrors.Error{j.err}
			}
			e.finishOperation(op, opFailed, withAttrs(reason, "max_failed_job_count", int64(op.spec.maxFailedJobs)), now)
			return
		}
	case jobAborted:
		if op.spec.failOnJobRestart {
			e.finishOperation(op, opFailed, ytErr(yterrors.CodeGeneric, "Job aborted and fail_on_job_restart is set"), now)
			return
		}
	}
	e.log.Info("job restarted", log.String("operation", op.id.String()), log.String("task", t.spec.name),
		log.String("job", j.id.String()), log.String("state", j.state))
	if j.state != jobFailed {
		e.startJob(op, t, j.cookie, now)
		return
	}
	// A failed job is replaced after failedJobDelay, so that a command failing at once does
	// not spin (YTsaurus schedules the replacement at a later node heartbeat).
	e.wg.Add(1)
	time.AfterFunc(failedJobDelay, func() {
		defer e.wg.Done()
		e.mu.Lock()
		defer e.mu.Unlock()
		if !op.finished() && !e.closed {
			e.startJob(op, t, j.cookie, time.Now())
		}
	})
}

// failedJobDelay is how long after a job failed its replacement starts.
const failedJobDelay = 300 * time.Millisecond

func init() {
	registerCommand("list_jobs", commandOpts{}, cmdListJobs)
	registerCommand("get_job", commandOpts{}, cmdGetJob)
	registerCommand("get_job_stderr", commandOpts{Heavy: true}, cmdGetJobStderr)
	registerCommand("abort_job", commandOpts{Mutating: true}, cmdAbortJob)
}

// view is a job as list_jobs and get_job show it.
func (j *job) view(addr string) map[string]any {
	v := map[string]any{
		"id": j.id.String(), "job_id": j.id.String(), "operation_id": j.op.id.String(),
		"type": "vanilla", "job_type": "vanilla", "state": j.state, "address": addr,
		"task_name": j.task.spec.name, "start_time": yson.Time(j.start), "job_cookie": uint64(j.cookie),
		"exec_attributes": map[string]any{"sandbox_path": j.sandbox(), "ip_addresses": []string{"127.0.0.1"}, "slot_index": int64(j.cookie), "medium_name": "default"},
	}
	if j.state != jobRunning {
		v["finish_time"] = yson.Time(j.finish)
	}
	if j.err != nil {
		v["error"] = j.err
	}
	return v
}

// job returns the job named by the call's job_id (of the operation named by operation_id,
// when given). e.mu is held.
func (e *opsExt) job(c *call) (*job, error) {
	id, ok, err := c.guidp("job_id")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ytErr(yterrors.CodeGeneric, "Missing required parameter \"job_id\"")
	}
	j := e.jobs[id]
	if opID, ok, _ := c.guidp("operation_id"); j != nil && ok && j.op.id != opID {
		j = nil
	}
	if j == nil {
		return nil, withAttrs(ytErr(codeNoSuchJob, "No such job %s", id), "job_id", id.String())
	}
	return j, nil
}

// codeNoSuchJob is YTsaurus' NoSuchJob error code.
const codeNoSuchJob yterrors.ErrorCode = 1916

func cmdListJobs(c *call) (any, error) {
	state, err := c.str("job_state", "")
	if err != nil {
		return nil, err
	}
	task, err := c.str("task_name", "")
	if err != nil {
		return nil, err
	}
	limit, err := c.int64p("limit", 1000)
	if err != nil {
		return nil, err
	}
	offset, err := c.int64p("offset", 0)
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
	var js []*job
	counts := map[string]int64{}
	for _, j := range e.jobs {
		if j.op != op || task != "" && j.task.spec.name != task {
			continue
		}
		counts[j.state]++
		if state == "" || j.state == state {
			js = append(js, j)
		}
	}
	sort.Slice(js, func(a, b int) bool {
		if !js[a].start.Equal(js[b].start) {
			return js[a].start.Before(js[b].start)
		}
		return js[a].id.String() < js[b].id.String()
	})
	total := len(js)
	js = js[min(int(max(offset, 0)), len(js)):]
	if int64(len(js)) > limit {
		js = js[:limit]
	}
	out := make([]any, 0, len(js))
	for _, j := range js {
		out = append(out, j.view(c.s.Addr()))
	}
	return map[string]any{"jobs": out, "total_count": int64(total), "state_counts": counts, "type_counts": map[string]int64{"vanilla": int64(total)}}, nil
}

func cmdGetJob(c *call) (any, error) {
	e := c.s.opsExt()
	e.mu.Lock()
	defer e.mu.Unlock()
	j, err := e.job(c)
	if err != nil {
		return nil, err
	}
	return j.view(c.s.Addr()), nil
}

// maxStderr is how much of a job's stderr get_job_stderr returns (its tail).
const maxStderr = 1 << 20

func cmdGetJobStderr(c *call) (any, error) {
	e := c.s.opsExt()
	e.mu.Lock()
	j, err := e.job(c)
	e.mu.Unlock()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(j.stderrPath())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if len(data) > maxStderr {
		data = data[len(data)-maxStderr:]
	}
	return rawResult(data), nil
}

func cmdAbortJob(c *call) (any, error) {
	e := c.s.opsExt()
	e.mu.Lock()
	defer e.mu.Unlock()
	j, err := e.job(c)
	if err != nil {
		return nil, err
	}
	if j.state != jobRunning {
		return nil, ytErr(yterrors.CodeGeneric, "Job %s is %s and cannot be aborted", j.id, j.state)
	}
	j.abort(jobAborted, ytErr(yterrors.CodeGeneric, "Job aborted by user request"), c.now)
	// The process is dead; its goroutine applies the end (and starts the replacement).
	return nil, nil
}
