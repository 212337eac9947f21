//go:build linux

package ytlocal_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yt"

	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytlocal/ytlocaltest"
)

// TestOperationsSurviveRestart: with a data folder, operations outlive a restart of the
// server as YTsaurus's do a scheduler restart. A running operation is revived: its job died
// with the server and a new one runs (the same secure vault, a new job id in list_jobs); a
// completed and an aborted operation keep their state; a running operation whose file was
// removed from Cypress fails, saying it could not be revived. An operation aborted after the
// restart stays aborted through the next one. Both from the log and from a snapshot.
func TestOperationsSurviveRestart(t *testing.T) {
	for _, every := range []int{0, 2} {
		t.Run(fmt.Sprintf("snapshot_every_%d", every), func(t *testing.T) { operationsSurviveRestart(t, every) })
	}
}

func operationsSurviveRestart(t *testing.T, snapshotEvery int) {
	ctx := context.Background()
	dir, out := t.TempDir(), t.TempDir()
	cfg := ytlocal.Config{DataDir: dir, SnapshotEvery: snapshotEvery}
	s1, err := ytlocal.Start(ctx, cfg)
	require.NoError(t, err)
	yc := newClient(t, s1.Addr())

	sleeper := func(files ...any) map[string]any {
		return map[string]any{
			"secure_vault": map[string]any{"TOKEN": "vault-7"},
			"tasks": map[string]any{"main": map[string]any{
				"command":     `echo "$YT_JOB_ID $YT_SECURE_VAULT_TOKEN" >> "$OUT/runs.$YT_OPERATION_ID"; exec sleep 300`,
				"job_count":   1,
				"file_paths":  files,
				"environment": map[string]any{"OUT": out},
			}},
		}
	}
	runs := func(id yt.OperationID) []string {
		b, _ := os.ReadFile(filepath.Join(out, "runs."+id.String()))
		return strings.Fields(strings.TrimSpace(string(b)))
	}
	running, err := yc.StartOperation(ctx, yt.OperationVanilla, sleeper(), nil)
	require.NoError(t, err)
	file := ypath.Path("//tmp/files/data")
	_, err = yc.CreateNode(ctx, file, yt.NodeFile, &yt.CreateNodeOptions{Recursive: true})
	require.NoError(t, err)
	lost, err := yc.StartOperation(ctx, yt.OperationVanilla, sleeper(file), nil)
	require.NoError(t, err)
	done, err := yc.StartOperation(ctx, yt.OperationVanilla, map[string]any{"tasks": map[string]any{"main": map[string]any{"command": "true", "job_count": 1}}}, nil)
	require.NoError(t, err)
	aborted, err := yc.StartOperation(ctx, yt.OperationVanilla, sleeper(), nil)
	require.NoError(t, err)
	waitOp(t, yc, done, yt.StateCompleted)
	eventually(t, 30*time.Second, "the first jobs' runs", func() bool {
		return len(runs(running)) == 2 && len(runs(lost)) == 2 && len(runs(aborted)) == 2
	})
	require.NoError(t, yc.AbortOperation(ctx, aborted, nil))
	first := runs(running)[0]
	require.NoError(t, yc.RemoveNode(ctx, file, nil))
	require.NoError(t, s1.Close())
	if snapshotEvery > 0 {
		_, err := os.Stat(filepath.Join(dir, "snapshot"))
		require.NoError(t, err, "a snapshot must have been taken")
	}

	s2 := ytlocaltest.Start(t, cfg)
	yc = newClient(t, s2.Addr())
	eventually(t, 30*time.Second, "a second run of the running operation", func() bool { return len(runs(running)) == 4 })
	r := runs(running)
	require.NotEqual(t, first, r[2], "the revived operation runs a new job")
	require.Equal(t, "vault-7", r[3], "the revived job has the secure vault")
	st, err := yc.GetOperation(ctx, running, nil)
	require.NoError(t, err)
	require.Equal(t, yt.StateRunning, st.State)
	jobs, err := yc.ListJobs(ctx, running, nil)
	require.NoError(t, err)
	require.Len(t, jobs.Jobs, 1)
	require.Equal(t, r[2], jobs.Jobs[0].ID.String())
	require.Equal(t, "running", jobs.Jobs[0].State)

	st = waitOp(t, yc, lost, yt.StateFailed)
	require.Contains(t, st.Result.Error.Error(), "failed to revive after the server restarted")
	require.Contains(t, st.Result.Error.Error(), "//tmp/files/data")
	st, err = yc.GetOperation(ctx, done, nil)
	require.NoError(t, err)
	require.Equal(t, yt.StateCompleted, st.State)
	st, err = yc.GetOperation(ctx, aborted, nil)
	require.NoError(t, err)
	require.Equal(t, yt.StateAborted, st.State)
	require.Len(t, runs(aborted), 2, "an aborted operation is not revived (the revival of the running one is done)")

	require.NoError(t, yc.AbortOperation(ctx, running, nil))
	require.NoError(t, s2.Close())
	s3 := ytlocaltest.Start(t, cfg)
	yc = newClient(t, s3.Addr())
	st, err = yc.GetOperation(ctx, running, nil)
	require.NoError(t, err)
	require.Equal(t, yt.StateAborted, st.State)
	jobs, err = yc.ListJobs(ctx, running, nil)
	require.NoError(t, err)
	require.Empty(t, jobs.Jobs)
}
