package ytlocal

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yterrors"
)

// Authentication (opt-in, Config.Users). Without it every request acts as root whatever
// token it carries. With it, /auth/whoami and every command need the header
// "Authorization: OAuth <token>" with a token of Config.Users (else HTTP 401, code 900), act
// as that token's user, and the commands below check the user's permission on the node they
// address (the nearest existing ancestor for one being created) against the ACLs in force
// (acl.go): code 901 when denied. Tokens appear in no log line and no error.

// commandPermissions is the permission each command needs on the nodes named by its path
// parameters; commands not listed check nothing. select_rows names its table inside the
// query, which is not parsed for this: it checks nothing either.
var commandPermissions = map[string]string{
	"get": "read", "list": "read", "exists": "read", "read_table": "read", "read_file": "read",
	"lookup_rows": "read", "pull_queue_consumer": "read", "pull_queue": "read",
	"create": "write", "remove": "write", "set": "write", "multiset_attributes": "write",
	"copy": "write", "move": "write", "link": "write", "lock": "write", "unlock": "write",
	"insert_rows": "write", "delete_rows": "write", "lock_rows": "write", "write_table": "write",
	"write_file": "write", "trim_rows": "write", "push_queue_producer": "write",
	"register_queue_consumer": "write", "unregister_queue_consumer": "write",
	"advance_queue_consumer": "write", "create_queue_producer_session": "write",
	"remove_queue_producer_session": "write", "mount_table": "write", "unmount_table": "write",
	"remount_table": "write", "freeze_table": "write", "unfreeze_table": "write",
	"reshard_table": "write", "alter_table": "write",
}

// pathParams are the parameters that name nodes, with the permission they need when it
// differs from the command's ("" = the command's).
var pathParams = []struct{ name, perm string }{
	{"path", ""}, {"source_path", "read"}, {"destination_path", ""}, {"link_path", ""},
	{"queue_path", ""}, {"consumer_path", ""}, {"producer_path", ""},
}

// authOn tells whether the server authenticates requests.
func (s *Server) authOn() bool { return len(s.cfg.Users) > 0 }

// authenticate returns the user of r: root without authentication; the user of r's OAuth
// token with it, or an error (code 900) that names no token.
func (s *Server) authenticate(r *http.Request) (string, *yterrors.Error) {
	if !s.authOn() {
		return rootUser, nil
	}
	h := r.Header.Get("Authorization")
	token, ok := strings.CutPrefix(h, "OAuth ")
	if !ok || token == "" {
		return "", ytErr(yterrors.CodeAuthenticationError, "Client is missing credentials: the proxy requires \"Authorization: OAuth <token>\"")
	}
	for t, user := range s.cfg.Users {
		if subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 {
			return user, nil
		}
	}
	return "", ytErr(yterrors.CodeAuthenticationError, "Authentication failed: unknown token")
}

// authorize checks that c's user holds the permission c's command needs on every node its
// path parameters name. Call with the state lock held.
func (s *Server) authorize(c *call) error {
	if !s.authOn() || c.user == rootUser {
		return nil
	}
	perm := commandPermissions[c.name]
	if perm == "" {
		return nil
	}
	var tx *masterTx
	if id, ok, err := c.guidp("transaction_id"); err == nil && ok && !IsTabletTxID(id) {
		tx, _ = s.liveTx(id)
	}
	for _, pp := range pathParams {
		raw, ok := yson.ValueOf(c.params[pp.name]).(string)
		if !ok || raw == "" {
			continue
		}
		need := perm
		if pp.perm != "" {
			need = pp.perm
		}
		n := s.nearestNode(raw, tx)
		if n == nil {
			continue // an unresolvable path: the command reports it
		}
		if !s.allowed(c.user, need, n, tx) {
			p, _ := s.tree.path(n, tx)
			return withAttrs(ytErr(yterrors.CodeAuthorizationError,
				"Access denied for user %q: %q permission for node %s is not allowed by any matching ACE", c.user, need, p),
				"user", c.user, "permission", need, "path", p)
		}
	}
	return nil
}

// nearestNode is the node raw addresses (its attributes and document keys belong to it), or
// its nearest existing ancestor when it does not exist; nil when nothing resolves.
func (s *Server) nearestNode(raw string, tx *masterTx) *node {
	p, err := parsePathParam("path", raw)
	if err != nil {
		return nil
	}
	p.attr = nil
	for {
		if obj, err := s.resolveDoc(p, tx, true); err == nil && obj.n != nil {
			return obj.n
		}
		if len(p.keys) == 0 {
			return nil
		}
		p.keys = p.keys[:len(p.keys)-1]
		if len(p.amp) > len(p.keys) {
			p.amp = p.amp[:len(p.keys)]
		}
	}
}
