package ytlocal

import (
	"go.ytsaurus.tech/yt/go/yterrors"
)

// ytlocal has no authentication and no ACLs: every request acts as "root" (/auth/whoami says
// so) and may do anything. check_permission answers accordingly — "allow" for every user and
// permission on every existing node — so that a client that checks permissions before acting
// (the status page of a controller) works against it as against a cluster where the user
// holds the permission. The path must resolve and the permission be one YTsaurus knows, as
// on a cluster.

// permissions are the permission names YTsaurus accepts in check_permission.
var permissions = map[string]bool{
	"read": true, "full_read": true, "write": true, "use": true, "administer": true, "create": true,
	"remove": true, "mount": true, "manage": true, "modify_children": true,
	"register_queue_consumer": true,
}

func init() {
	registerCommand("check_permission", commandOpts{}, cmdCheckPermission)
}

func cmdCheckPermission(c *call) (any, error) {
	s := c.s
	if _, err := c.requiredStr("user"); err != nil {
		return nil, err
	}
	perm, err := c.requiredStr("permission")
	if err != nil {
		return nil, err
	}
	if !permissions[perm] {
		return nil, ytErr(yterrors.CodeGeneric, "Error parsing permission %q", perm)
	}
	p, err := c.pathRef("path")
	if err != nil {
		return nil, err
	}
	tx, err := s.readTx(c)
	if err != nil {
		return nil, err
	}
	if _, err := s.resolve(p, tx, true); err != nil {
		return nil, err
	}
	return map[string]any{"action": "allow"}, nil
}
