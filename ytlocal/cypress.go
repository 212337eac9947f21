package ytlocal

import (
	"strings"

	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/yterrors"
)

// object is what a path resolves to: a Cypress node or a transaction.
type object struct {
	n  *node
	tx *masterTx // a transaction object (#<tx id>, //sys/transactions/<id>)
	// docKeys is the rest of the path inside the value of document n (resolveDoc only).
	docKeys []string
}

func resolveError(path, format string, args ...any) error {
	inner := withAttrs(ytErr(yterrors.CodeResolveError, format, args...), "path", path)
	return withAttrs(&yterrors.Error{Code: yterrors.CodeResolveError, Message: "Error resolving path " + path,
		InnerErrors: []*yterrors.Error{inner}}, "path", path)
}

// resolve finds the object a path names under tx. Links are followed except at an
// element marked & (and at the last element when followLast is false).
func (s *Server) resolve(p *pathRef, tx *masterTx, followLast bool) (object, error) {
	return s.resolveDepth(p, tx, followLast, 0, false)
}

// resolveDoc is resolve that may stop at a document node and leave the remaining keys
// in object.docKeys (get, exists, set and remove address values inside documents).
func (s *Server) resolveDoc(p *pathRef, tx *masterTx, followLast bool) (object, error) {
	return s.resolveDepth(p, tx, followLast, 0, true)
}

func (s *Server) resolveDepth(p *pathRef, tx *masterTx, followLast bool, depth int, allowDoc bool) (object, error) {
	if depth > 32 {
		return object{}, resolveError(p.raw, "Too many link redirections")
	}
	t := s.tree
	var cur *node
	if p.byID {
		if x, ok := s.txs[p.id]; ok {
			if len(p.keys) > 0 {
				return object{}, resolveError(p.raw, "Transaction %s has no children", p.id)
			}
			return object{tx: x}, nil
		}
		n := t.nodes[p.id]
		if n == nil || !t.visible(n, tx) {
			return object{}, resolveError(p.raw, "No such object %s", p.id)
		}
		if _, ok := t.path(n, tx); !ok && !s.snapshotted(n, tx) {
			return object{}, resolveError(p.raw, "No such object %s", p.id)
		}
		cur = n
	} else {
		cur = t.root
	}
	for i, key := range p.keys {
		var err error
		if cur, err = s.followLink(cur, tx, p.raw, depth); err != nil {
			return object{}, err
		}
		if cur.typ == "map_node" && cur.key == "transactions" && cur.parent == s.sysID() {
			id, perr := guid.ParseString(key)
			if x, ok := s.txs[id]; perr == nil && ok && i == len(p.keys)-1 {
				return object{tx: x}, nil
			}
		}
		if allowDoc && cur.typ == "document" {
			return object{n: cur, docKeys: p.keys[i:]}, nil
		}
		child, ok := t.childOf(cur, tx, key)
		if !ok {
			cp, _ := t.path(cur, tx)
			if !isComposite(cur.typ) {
				return object{}, resolveError(p.raw, "Node %s cannot have children", cp)
			}
			return object{}, resolveError(p.raw, "Node %s has no child with key %q", cp, key)
		}
		cur = child
	}
	if followLast && !p.lastAmp() {
		var err error
		if cur, err = s.followLink(cur, tx, p.raw, depth); err != nil {
			return object{}, err
		}
	}
	return object{n: cur}, nil
}

func (s *Server) snapshotted(n *node, tx *masterTx) bool {
	for x := tx; x != nil; x = x.parent {
		if b, ok := n.branches[x.id]; ok && b.snapshot {
			return true
		}
	}
	return false
}

func (s *Server) sysID() guid.GUID {
	if n, ok := s.tree.childOf(s.tree.root, nil, "sys"); ok {
		return n.id
	}
	return guid.GUID{}
}

func (s *Server) followLink(n *node, tx *masterTx, raw string, depth int) (*node, error) {
	if n.typ != "link" {
		return n, nil
	}
	target, _ := s.tree.attrOf(n, tx, "target_path")
	ts, _ := target.(string)
	tp, err := parsePath(ts)
	if err != nil {
		return nil, resolveError(raw, "Link %s has a bad target %q", raw, ts)
	}
	obj, err := s.resolveDepth(tp, tx, true, depth+1, false)
	if err != nil {
		return nil, err
	}
	if obj.n == nil {
		return nil, resolveError(raw, "Link target %s is not a node", ts)
	}
	return obj.n, nil
}

func isComposite(typ string) bool {
	switch typ {
	case "map_node", "sys_node", "account_map", "user_map", "group_map":
		return true
	}
	return false
}

// pathParam parses a path parameter into a pathRef (rich suffixes are dropped).
func (c *call) pathRef(name string) (*pathRef, error) {
	raw, err := c.path(name)
	if err != nil {
		return nil, err
	}
	return parsePathParam(name, raw)
}

func parsePathParam(name, raw string) (*pathRef, error) {
	plain := raw
	if i := strings.IndexAny(raw, "[{"); i > 0 && !strings.Contains(raw[:i], "\\") {
		plain = raw[:i]
	}
	if strings.HasPrefix(plain, "<") {
		r, err := parseRichPath(name, raw)
		if err != nil {
			return nil, err
		}
		plain = string(r.Path)
	}
	p, err := parsePath(plain)
	if err != nil {
		return nil, err
	}
	p.raw = raw
	return p, nil
}

func init() {
	registerCommand("get", commandOpts{}, cmdGet)
	registerCommand("exists", commandOpts{}, cmdExists)
	registerCommand("list", commandOpts{}, cmdList)
	registerCommand("create", commandOpts{Mutating: true}, cmdCreate)
	registerCommand("remove", commandOpts{Mutating: true}, cmdRemove)
	registerCommand("set", commandOpts{Mutating: true}, cmdSet)
	registerCommand("multiset_attributes", commandOpts{Mutating: true}, cmdMultisetAttributes)
	registerCommand("copy", commandOpts{Mutating: true}, cmdCopyMove(false))
	registerCommand("move", commandOpts{Mutating: true}, cmdCopyMove(true))
	registerCommand("link", commandOpts{Mutating: true}, cmdLink)
	registerCommand("lock", commandOpts{Mutating: true}, cmdLock)
	registerCommand("unlock", commandOpts{Mutating: true}, cmdUnlock)
}
