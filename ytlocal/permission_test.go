package ytlocal_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yt"
	"go.ytsaurus.tech/yt/go/yterrors"

	"github.com/ytflow/yt-flow/ytlocal/ytlocaltest"
)

// TestCheckPermissionAllowsEverything: ytlocal has no authentication, so check_permission
// allows every user every permission on an existing node; a missing node is a resolve error
// and an unknown permission an error, as on a cluster. whoami names the user (root).
func TestCheckPermissionAllowsEverything(t *testing.T) {
	ctx := context.Background()
	yc := newClient(t, ytlocaltest.New(t))
	p := ypath.Path("//home/pipe")
	_, err := yc.CreateNode(ctx, p, yt.NodeMap, &yt.CreateNodeOptions{Recursive: true})
	require.NoError(t, err)

	me, err := yc.WhoAmI(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, "root", me.Login)
	for _, user := range []string{"root", "guest", "alice"} {
		for _, perm := range []yt.Permission{yt.PermissionRead, yt.PermissionWrite, yt.PermissionAdminister} {
			r, err := yc.CheckPermission(ctx, user, perm, p, nil)
			require.NoError(t, err)
			require.Equal(t, yt.ActionAllow, r.Action, "%s %s", user, perm)
		}
	}
	_, err = yc.CheckPermission(ctx, "alice", yt.PermissionRead, ypath.Path("//home/missing"), nil)
	require.True(t, yterrors.ContainsResolveError(err), "missing node: %v", err)
	_, err = yc.CheckPermission(ctx, "alice", "fly", p, nil)
	require.Error(t, err)
}
