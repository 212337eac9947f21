//go:build linux

package ytlocal_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yt"
	"go.ytsaurus.tech/yt/go/yterrors"

	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytlocal/ytlocaltest"
)

// waitOp polls the operation until it is in state.
func waitOp(t *testing.T, yc yt.Client, id yt.OperationID, state yt.OperationState) *yt.OperationStatus {
	t.Helper()
	var st *yt.OperationStatus
	eventually(t, time.Minute, fmt.Sprintf("operation %s %s", id, state), func() bool {
		var err error
		st, err = yc.GetOperation(context.Background(), id, nil)
		require.NoError(t, err)
		return st.State == state
	})
	return st
}

// jobStates lists the operation's jobs as state → count.
func jobStates(t *testing.T, yc yt.Client, id yt.OperationID) map[string]int {
	t.Helper()
	r, err := yc.ListJobs(context.Background(), id, nil)
	require.NoError(t, err)
	out := map[string]int{}
	for _, j := range r.Jobs {
		out[j.State]++
	}
	return out
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// readPid waits for a pid file written by a job and returns the pid.
func readPid(t *testing.T, path string) int {
	t.Helper()
	var pid int
	eventually(t, 30*time.Second, "pid file "+path, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	return pid
}

// TestVanillaOperationRunsJobs: a vanilla operation whose task runs a script uploaded to
// Cypress completes once its two jobs exit 0; each job ran in its sandbox with the file,
// the YTsaurus job environment (this server as YT_PROXY, its operation and job ids, the
// secure vault, the task's environment); list_jobs and get_job_stderr show them; the
// secure vault does not show in get_operation.
func TestVanillaOperationRunsJobs(t *testing.T) {
	ctx := context.Background()
	proxy := ytlocaltest.New(t)
	yc := newClient(t, proxy)
	out := t.TempDir()

	script := ypath.Path("//tmp/bin/job.sh")
	_, err := yc.CreateNode(ctx, script, yt.NodeFile, &yt.CreateNodeOptions{Recursive: true,
		Attributes: map[string]any{"executable": true}})
	require.NoError(t, err)
	w, err := yc.WriteFile(ctx, script, nil)
	require.NoError(t, err)
	_, err = w.Write([]byte("#!/bin/sh\nenv > \"$OUT/env.$YT_JOB_COOKIE\"\necho \"stderr of $YT_JOB_ID\" >&2\n"))
	require.NoError(t, err)
	require.NoError(t, w.Close())

	spec := map[string]any{
		"title":        "runs jobs",
		"secure_vault": map[string]any{"YT_TOKEN": "vault-secret-42"},
		"tasks": map[string]any{"main": map[string]any{
			"command":     "./job.sh",
			"job_count":   2,
			"file_paths":  []any{script},
			"environment": map[string]any{"OUT": out},
			"port_count":  1,
		}},
	}
	id, err := yc.StartOperation(ctx, yt.OperationVanilla, spec, nil)
	require.NoError(t, err)
	st := waitOp(t, yc, id, yt.StateCompleted)
	require.Equal(t, yt.OperationVanilla, st.Type)
	require.NotContains(t, string(st.FullSpec), "vault-secret-42")

	jobs, err := yc.ListJobs(ctx, id, nil)
	require.NoError(t, err)
	require.Len(t, jobs.Jobs, 2)
	for _, j := range jobs.Jobs {
		require.Equal(t, "completed", j.State)
		require.Equal(t, "main", j.TaskName)
		require.NotNil(t, j.JobCookie)
		env, err := os.ReadFile(filepath.Join(out, fmt.Sprintf("env.%d", *j.JobCookie)))
		require.NoError(t, err)
		for _, want := range []string{"YT_PROXY=" + proxy, "YT_OPERATION_ID=" + id.String(), "YT_JOB_ID=" + j.ID.String(),
			"YT_SECURE_VAULT_YT_TOKEN=vault-secret-42", "OUT=" + out, "YT_PORT_0="} {
			require.Contains(t, string(env), want)
		}
		stderr, err := yc.GetJobStderr(ctx, id, j.ID, nil)
		require.NoError(t, err)
		require.Equal(t, "stderr of "+j.ID.String()+"\n", string(stderr))
	}
	main := "main"
	none := "other"
	r, err := yc.ListJobs(ctx, id, &yt.ListJobsOptions{TaskName: &none})
	require.NoError(t, err)
	require.Empty(t, r.Jobs)
	r, err = yc.ListJobs(ctx, id, &yt.ListJobsOptions{TaskName: &main})
	require.NoError(t, err)
	require.Len(t, r.Jobs, 2)

	ops, err := yc.ListOperations(ctx, nil)
	require.NoError(t, err)
	require.Len(t, ops.Operations, 1)
	require.Equal(t, id, ops.Operations[0].ID)
	require.Equal(t, yt.StateCompleted, ops.Operations[0].State)
}

// TestVanillaFailedJobsRestarted: a job that exits non-zero is replaced (the task's first
// two runs fail, the third completes: the operation completes with 2 failed jobs); an
// operation whose jobs keep failing fails once max_failed_job_count jobs failed, naming
// the exit code.
func TestVanillaFailedJobsRestarted(t *testing.T) {
	ctx := context.Background()
	yc := newClient(t, ytlocaltest.New(t))
	dir := t.TempDir()
	flaky := map[string]any{"tasks": map[string]any{"flaky": map[string]any{
		"job_count":   1,
		"command":     `n=$(cat "$DIR/runs" 2>/dev/null || echo 0); echo $((n+1)) > "$DIR/runs"; [ "$n" -ge 2 ]`,
		"environment": map[string]any{"DIR": dir},
	}}, "max_failed_job_count": 5}
	id, err := yc.StartOperation(ctx, yt.OperationVanilla, flaky, nil)
	require.NoError(t, err)
	waitOp(t, yc, id, yt.StateCompleted)
	require.Equal(t, map[string]int{"failed": 2, "completed": 1}, jobStates(t, yc, id))

	failing := map[string]any{"max_failed_job_count": 3, "tasks": map[string]any{"bad": map[string]any{"job_count": 1, "command": "exit 3"}}}
	id, err = yc.StartOperation(ctx, yt.OperationVanilla, failing, nil)
	require.NoError(t, err)
	st := waitOp(t, yc, id, yt.StateFailed)
	require.NotNil(t, st.Result)
	require.NotNil(t, st.Result.Error)
	require.Contains(t, strings.ToLower(st.Result.Error.Error()), "failed jobs limit exceeded")
	require.Contains(t, st.Result.Error.Error(), "exited with code 3")
	require.Equal(t, map[string]int{"failed": 3}, jobStates(t, yc, id))
}

// TestVanillaBadSpec: a malformed spec is refused naming the key; a missing file too.
func TestVanillaBadSpec(t *testing.T) {
	ctx := context.Background()
	yc := newClient(t, ytlocaltest.New(t))
	for _, tc := range []struct {
		spec map[string]any
		want string
	}{
		{map[string]any{}, `"tasks"`},
		{map[string]any{"tasks": map[string]any{"w": map[string]any{"command": "true"}}}, `"tasks/w/job_count"`},
		{map[string]any{"tasks": map[string]any{"w": map[string]any{"job_count": 1}}}, `"tasks/w/command"`},
		{map[string]any{"tasks": map[string]any{"w": map[string]any{"job_count": 1, "command": "true", "file_paths": []any{"//tmp/nope"}}}}, "//tmp/nope"},
	} {
		_, err := yc.StartOperation(ctx, yt.OperationVanilla, tc.spec, nil)
		require.Error(t, err)
		require.Contains(t, err.Error(), tc.want)
	}
	_, err := yc.StartOperation(ctx, yt.OperationMap, map[string]any{}, nil)
	require.ErrorContains(t, err, "only vanilla")
	_, err = yc.GetOperation(ctx, yt.OperationID(guid.New()), nil)
	require.True(t, yterrors.ContainsErrorCode(err, 1915), "%v", err)
}

// abortJob calls abort_job, which the SDK does not speak, over plain HTTP.
func abortJob(t *testing.T, proxy string, id yt.JobID) {
	t.Helper()
	body := fmt.Sprintf(`{job_id=%q}`, id.String())
	resp, err := http.Post("http://"+proxy+"/api/v4/abort_job", "application/x-yt-yson-text", bytes.NewBufferString(body))
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, resp.Header.Get("X-YT-Error"))
}

// TestVanillaAbortKillsEveryProcess: abort_job kills the job's processes — the command's
// own children too — and starts a replacement in the same slot; abort_operation kills the
// replacement's; closing the server kills those of a running operation.
func TestVanillaAbortKillsEveryProcess(t *testing.T) {
	ctx := context.Background()
	s := ytlocaltest.Start(t, ytlocal.Config{})
	yc := newClient(t, s.Addr())
	dir := t.TempDir()
	spec := map[string]any{"tasks": map[string]any{"sleeper": map[string]any{
		"job_count":   1,
		"command":     `sleep 300 & echo $! > "$DIR/pid.$YT_JOB_ID"; wait`,
		"environment": map[string]any{"DIR": dir},
	}}}
	id, err := yc.StartOperation(ctx, yt.OperationVanilla, spec, nil)
	require.NoError(t, err)
	jobs, err := yc.ListJobs(ctx, id, nil)
	require.NoError(t, err)
	require.Len(t, jobs.Jobs, 1)
	first := jobs.Jobs[0].ID
	pid := readPid(t, filepath.Join(dir, "pid."+first.String()))
	require.True(t, alive(pid))

	abortJob(t, s.Addr(), first)
	eventually(t, 30*time.Second, "the aborted job's sleep to die", func() bool { return !alive(pid) })
	var second yt.JobID
	eventually(t, 30*time.Second, "a replacement job", func() bool {
		r, err := yc.ListJobs(ctx, id, nil)
		require.NoError(t, err)
		for _, j := range r.Jobs {
			if j.State == "running" && j.ID != first {
				second = j.ID
			}
		}
		return second != yt.JobID{}
	})
	require.Equal(t, map[string]int{"aborted": 1, "running": 1}, jobStates(t, yc, id))
	pid = readPid(t, filepath.Join(dir, "pid."+second.String()))

	require.NoError(t, yc.AbortOperation(ctx, id, nil))
	st, err := yc.GetOperation(ctx, id, nil)
	require.NoError(t, err)
	require.Equal(t, yt.StateAborted, st.State)
	eventually(t, 30*time.Second, "the aborted operation's sleep to die", func() bool { return !alive(pid) })
	require.Equal(t, map[string]int{"aborted": 2}, jobStates(t, yc, id))

	id, err = yc.StartOperation(ctx, yt.OperationVanilla, spec, nil)
	require.NoError(t, err)
	jobs, err = yc.ListJobs(ctx, id, nil)
	require.NoError(t, err)
	pid = readPid(t, filepath.Join(dir, "pid."+jobs.Jobs[0].ID.String()))
	require.NoError(t, s.Close())
	eventually(t, 30*time.Second, "the closed server's job to die", func() bool { return !alive(pid) })
}

// TestVanillaCompleteOperation: complete_operation ends a running operation as completed
// and kills its jobs.
func TestVanillaCompleteOperation(t *testing.T) {
	ctx := context.Background()
	yc := newClient(t, ytlocaltest.New(t))
	dir := t.TempDir()
	id, err := yc.StartOperation(ctx, yt.OperationVanilla, map[string]any{"tasks": map[string]any{"t": map[string]any{
		"job_count": 1, "command": `echo $$ > "$DIR/pid"; exec sleep 300`, "environment": map[string]any{"DIR": dir},
	}}}, nil)
	require.NoError(t, err)
	pid := readPid(t, filepath.Join(dir, "pid"))
	require.NoError(t, yc.CompleteOperation(ctx, id, nil))
	waitOp(t, yc, id, yt.StateCompleted)
	eventually(t, 30*time.Second, "the job to die", func() bool { return !alive(pid) })
	require.NoError(t, syscall.Kill(os.Getpid(), 0)) // the test process itself is untouched
}
