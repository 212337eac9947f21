package ytlocal

import (
	"slices"

	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/yson"
)

// Access control lists. A node's @acl and @inherit_acl are stored as set (at creation or
// later); @effective_acl is the node's own entries followed, while @inherit_acl holds, by
// those of its ancestors. Only an authenticating server (Config.Users) enforces them
// (allowed); without it every request acts as root, as YTsaurus's superuser, whom no ACL
// binds.

// aclEntry is one entry of an @acl.
type aclEntry struct {
	action      string
	subjects    []string
	permissions []string
}

// parseACL reads an @acl value; malformed entries are skipped.
func parseACL(v any) []aclEntry {
	list, _ := yson.ValueOf(v).([]any)
	var out []aclEntry
	for _, e := range list {
		m, ok := yson.ValueOf(e).(map[string]any)
		if !ok {
			continue
		}
		var a aclEntry
		a.action, _ = yson.ValueOf(m["action"]).(string)
		a.subjects = stringList(m["subjects"])
		a.permissions = stringList(m["permissions"])
		out = append(out, a)
	}
	return out
}

func stringList(v any) []string {
	list, _ := yson.ValueOf(v).([]any)
	var out []string
	for _, x := range list {
		if s, ok := yson.ValueOf(x).(string); ok {
			out = append(out, s)
		}
	}
	if list == nil {
		if ss, ok := v.([]string); ok {
			return ss
		}
	}
	return out
}

// aclChain returns the raw @acl values that apply to n, nearest first: n's own, then its
// parent's while @inherit_acl holds.
func (s *Server) aclChain(n *node, tx *masterTx) []any {
	var out []any
	for cur := n; cur != nil; {
		if v, ok := s.tree.attrOf(cur, tx, "acl"); ok {
			out = append(out, v)
		}
		inherit := true
		if v, ok := s.tree.attrOf(cur, tx, "inherit_acl"); ok {
			if b, ok := yson.ValueOf(v).(bool); ok {
				inherit = b
			}
		}
		if !inherit || cur.parent == (guid.GUID{}) {
			break
		}
		cur = s.tree.nodes[cur.parent]
	}
	return out
}

// effectiveACL is @effective_acl of n.
func (s *Server) effectiveACL(n *node, tx *masterTx) []any {
	out := []any{}
	for _, v := range s.aclChain(n, tx) {
		if list, ok := yson.ValueOf(v).([]any); ok {
			out = append(out, list...)
		} else if l, ok := v.([]map[string]any); ok {
			for _, e := range l {
				out = append(out, e)
			}
		}
	}
	return out
}

// allowed tells whether user holds perm on n under tx: root always; otherwise, when no ACL
// applies to n (no node on its inheritance chain has @acl set) everyone; else the user must
// be a subject of an allow entry with perm and of no deny entry with it. "everyone" and
// "users" name every user.
func (s *Server) allowed(user, perm string, n *node, tx *masterTx) bool {
	if user == rootUser {
		return true
	}
	var entries []aclEntry
	for _, v := range s.aclChain(n, tx) {
		entries = append(entries, parseACL(v)...)
	}
	if len(entries) == 0 {
		return true
	}
	allow := false
	for _, e := range entries {
		if !slices.Contains(e.permissions, perm) || !(slices.Contains(e.subjects, user) || slices.Contains(e.subjects, "everyone") || slices.Contains(e.subjects, "users")) {
			continue
		}
		switch e.action {
		case "deny":
			return false
		case "allow":
			allow = true
		}
	}
	return allow
}

// rootUser is the superuser, and the user of every request without authentication.
const rootUser = "root"
