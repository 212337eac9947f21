package ytlocal

import (
	"maps"
	"slices"

	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/yterrors"
)

// copyNode deep-copies src (under tx) to parent/key with fresh ids.
func (s *Server) copyNode(tx *masterTx, src, parent *node, key string) *node {
	t := s.tree
	n := t.newNode(tx, src.typ, objectTypeFor(src.typ), parent, key)
	b := n.branches[tx.id]
	maps.Copy(b.attrs, t.userAttrs(src, tx))
	if c := t.contentOf(src, tx); c.rows != nil || c.data != nil || c.value != nil {
		b.content = &content{rows: slices.Clip(c.rows), data: c.data, value: c.value}
	}
	if isComposite(src.typ) {
		keys, kids := t.childrenOf(src, tx)
		for _, k := range keys {
			if cn := t.nodes[kids[k]]; cn != nil {
				s.copyNode(tx, cn, n, k)
			}
		}
	}
	s.afterCreate(tx, n, n.typ)
	return n
}

func cmdCopyMove(move bool) handlerFunc {
	return func(c *call) (any, error) {
		s := c.s
		src, err := c.pathRef("source_path")
		if err != nil {
			return nil, err
		}
		dst, err := c.pathRef("destination_path")
		if err != nil {
			return nil, err
		}
		flags, err := c.nodeFlags()
		if err != nil {
			return nil, err
		}
		tx, finish, err := s.txForCall(c)
		if err != nil {
			return nil, err
		}
		var id guid.GUID
		err = func() error {
			obj, err := s.resolve(src, tx, true)
			if err != nil {
				return err
			}
			if obj.n == nil || src.isAttr() {
				return ytErr(yterrors.CodeGeneric, "Cannot copy %s", src.raw)
			}
			srcNode := obj.n
			if srcNode == s.tree.root {
				return ytErr(yterrors.CodeGeneric, "Cannot copy or move the root")
			}
			parent, key, err := s.ensureParent(dst, tx, flags.recursive)
			if err != nil {
				return err
			}
			for x := parent; x != nil; x = s.tree.nodes[x.parent] {
				if x == srcNode {
					return ytErr(yterrors.CodeGeneric, "Cannot copy or move a node to its descendant")
				}
				if zeroGUID(x.parent) {
					break
				}
			}
			if existing, ok := s.tree.childOf(parent, tx, key); ok {
				switch {
				case flags.ignoreExisting:
					id = existing.id
					return nil
				case flags.force:
					if err := s.removeChild(parent, existing, tx, true); err != nil {
						return err
					}
				default:
					ep, _ := s.tree.path(existing, tx)
					return ytErr(yterrors.CodeAlreadyExists, "Node %s already exists", ep)
				}
			}
			if _, err := s.acquire(parent, tx, lockShared, key, "", false); err != nil {
				return err
			}
			if move {
				if err := s.lockSubtree(srcNode, tx); err != nil {
					return err
				}
			} else if _, err := s.acquire(srcNode, tx, lockSnapshot, "", "", false); err != nil {
				return err
			}
			n := s.copyNode(tx, srcNode, parent, key)
			id = n.id
			if move {
				sp := s.tree.nodes[srcNode.parent]
				return s.removeChild(sp, srcNode, tx, true)
			}
			return nil
		}()
		if err := finish(err); err != nil {
			return nil, err
		}
		return map[string]any{"node_id": id.String()}, nil
	}
}

func cmdLink(c *call) (any, error) {
	s := c.s
	target, err := c.path("target_path")
	if err != nil {
		return nil, err
	}
	link, err := c.pathRef("link_path")
	if err != nil {
		return nil, err
	}
	flags, err := c.nodeFlags()
	if err != nil {
		return nil, err
	}
	attrs := map[string]any{}
	if v, ok := c.param("attributes"); ok {
		if m, ok := v.(map[string]any); ok {
			attrs = maps.Clone(m)
		}
	}
	attrs["target_path"] = target
	tx, finish, err := s.txForCall(c)
	if err != nil {
		return nil, err
	}
	var id guid.GUID
	err = func() error {
		tp, err := parsePath(target)
		if err != nil {
			return err
		}
		if _, err := s.resolve(tp, tx, true); err != nil && !flags.force {
			return err
		}
		id, err = s.createNode(tx, link, "link", attrs, flags)
		return err
	}()
	if err := finish(err); err != nil {
		return nil, err
	}
	return map[string]any{"node_id": id.String()}, nil
}

func cmdLock(c *call) (any, error) {
	s := c.s
	p, err := c.pathRef("path")
	if err != nil {
		return nil, err
	}
	mode, err := c.str("mode", lockExclusive)
	if err != nil {
		return nil, err
	}
	switch mode {
	case lockSnapshot, lockShared, lockExclusive:
	default:
		return nil, ytErr(yterrors.CodeGeneric, "Invalid lock mode %q (expected snapshot, shared or exclusive)", mode)
	}
	waitable, err := c.boolean("waitable", false)
	if err != nil {
		return nil, err
	}
	childKey, err := c.str("child_key", "")
	if err != nil {
		return nil, err
	}
	attrKey, err := c.str("attribute_key", "")
	if err != nil {
		return nil, err
	}
	tx, n, err := s.lockTarget(c, "lock", p)
	if err != nil {
		return nil, err
	}
	l, err := s.acquire(n, tx, mode, childKey, attrKey, waitable)
	if err != nil {
		return nil, err
	}
	rev, _ := s.tree.versionInfo(n, tx)
	if rev == 0 {
		rev = 1
	}
	return map[string]any{"lock_id": l.id.String(), "node_id": n.id.String(), "revision": rev}, nil
}

// lockTarget returns the call's transaction, which lock and unlock (cmd)
// require, and the node at p under it.
func (s *Server) lockTarget(c *call, cmd string, p *pathRef) (*masterTx, *node, error) {
	tx, err := s.readTx(c)
	if err != nil {
		return nil, nil, err
	}
	if tx == nil {
		return nil, nil, ytErr(yterrors.CodeGeneric, "Command %q requires a transaction (transaction_id)", cmd)
	}
	obj, err := s.resolve(p, tx, true)
	if err != nil {
		return nil, nil, err
	}
	if obj.n == nil {
		return nil, nil, ytErr(yterrors.CodeGeneric, "Cannot %s %s", cmd, p.raw)
	}
	return tx, obj.n, nil
}

func cmdUnlock(c *call) (any, error) {
	s := c.s
	p, err := c.pathRef("path")
	if err != nil {
		return nil, err
	}
	tx, n, err := s.lockTarget(c, "unlock", p)
	if err != nil {
		return nil, err
	}
	var keep []*lockEntry
	for _, l := range tx.locks {
		if l.node == n {
			if l.pending {
				s.tree.pendingLocks--
			}
			l.node.locks = slices.DeleteFunc(l.node.locks, func(x *lockEntry) bool { return x == l })
			continue
		}
		keep = append(keep, l)
	}
	tx.locks = keep
	s.grantPendingLocks()
	return nil, nil
}
