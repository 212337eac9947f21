package ytlocal

import (
	"go.ytsaurus.tech/yt/go/yterrors"
)

// Without authentication (the default) every request acts as "root" (/auth/whoami says so)
// and may do anything. check_permission answers accordingly — "allow" for every user and
// permission on every existing node — so that a client that checks permissions before acting
// (the status page of a controller) works against it as against a cluster where the user
// holds the permission. With authentication (Config.Users) it answers by the ACLs in force
// (acl.go), as the commands check them (auth.go). The path must resolve and the permission be
// one YTsaurus knows, as on a cluster.

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
	user, err := c.requiredStr("user")
	if err != nil {
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
	obj, err := s.resolve(p, tx, true)
	if err != nil {
		return nil, err
	}
	if s.authOn() && obj.n != nil && !s.allowed(user, perm, obj.n, tx) {
		return map[string]any{"action": "deny"}, nil
	}
	return map[string]any{"action": "allow"}, nil
}
