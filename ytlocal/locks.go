package ytlocal

import (
	"slices"

	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/yterrors"
)

// Lock modes.
const (
	lockSnapshot  = "snapshot"
	lockShared    = "shared"
	lockExclusive = "exclusive"
)

type lockEntry struct {
	id       guid.GUID
	tx       *masterTx
	node     *node
	mode     string
	childKey string
	attrKey  string
	pending  bool
}

// lockConflict reports whether a held lock blocks a requested one by tx.
func lockConflict(held *lockEntry, tx *masterTx, mode, childKey, attrKey string) bool {
	if held.pending || tx.hasAncestor(held.tx) {
		return false
	}
	if held.mode == lockSnapshot || mode == lockSnapshot {
		return false
	}
	if held.mode == lockExclusive || mode == lockExclusive {
		return true
	}
	if childKey != "" && childKey == held.childKey {
		return true
	}
	if attrKey != "" && attrKey == held.attrKey {
		return true
	}
	return false
}

func (s *Server) findConflict(n *node, tx *masterTx, mode, childKey, attrKey string) *lockEntry {
	for _, l := range n.locks {
		if lockConflict(l, tx, mode, childKey, attrKey) {
			return l
		}
	}
	return nil
}

func (s *Server) conflictError(n *node, tx *masterTx, held *lockEntry, mode string) error {
	p, _ := s.tree.path(n, tx)
	if p == "" {
		p = "#" + n.id.String()
	}
	return withAttrs(ytErr(yterrors.CodeConcurrentTransactionLockConflict,
		"Cannot take %q lock for node %s since %q lock is taken by concurrent transaction %s", mode, p, held.mode, held.tx.id),
		"winner_transaction_id", held.tx.id.String(), "path", p)
}

// acquire takes (or checks, for implicit transactions) a lock on n for tx. Implicit
// transactions never keep locks: they only must not conflict.
func (s *Server) acquire(n *node, tx *masterTx, mode, childKey, attrKey string, waitable bool) (*lockEntry, error) {
	if held := s.findConflict(n, tx, mode, childKey, attrKey); held != nil {
		if !waitable || tx.implicit {
			return nil, s.conflictError(n, tx, held, mode)
		}
		l := &lockEntry{id: s.newID(objectTypeLock), tx: tx, node: n, mode: mode, childKey: childKey, attrKey: attrKey, pending: true}
		n.locks = append(n.locks, l)
		tx.locks = append(tx.locks, l)
		s.tree.pendingLocks++
		return l, nil
	}
	if tx.implicit {
		return nil, nil
	}
	for _, l := range n.locks {
		if l.tx == tx && !l.pending && l.mode == mode && l.childKey == childKey && l.attrKey == attrKey {
			return l, nil
		}
	}
	l := &lockEntry{id: s.newID(objectTypeLock), tx: tx, node: n, mode: mode, childKey: childKey, attrKey: attrKey}
	n.locks = append(n.locks, l)
	tx.locks = append(tx.locks, l)
	if mode == lockSnapshot {
		s.snapshotBranch(n, tx)
	}
	return l, nil
}

// snapshotBranch freezes tx's view of n.
func (s *Server) snapshotBranch(n *node, tx *masterTx) {
	t := s.tree
	if b, ok := n.branches[tx.id]; ok && (len(b.attrs) > 0 || len(b.children) > 0 || b.content != nil || b.created) {
		return
	}
	_, kids := t.childrenOf(n, tx)
	snap := newVersion()
	snap.attrs = t.userAttrs(n, tx)
	snap.children = kids
	snap.content = t.contentOf(n, tx)
	snap.snapshot = true
	snap.revision, snap.modified = t.versionInfo(n, tx)
	if _, ok := n.branches[tx.id]; !ok {
		tx.touched = append(tx.touched, n.id)
	}
	n.branches[tx.id] = snap
}

// releaseLocks drops tx's locks, or hands them to the parent on a nested commit.
func (s *Server) releaseLocks(tx *masterTx, committed bool) {
	for _, l := range tx.locks {
		if committed && tx.parent != nil && !l.pending && l.mode != lockSnapshot {
			l.tx = tx.parent
			tx.parent.locks = append(tx.parent.locks, l)
			continue
		}
		if l.pending {
			s.tree.pendingLocks--
		}
		l.node.locks = slices.DeleteFunc(l.node.locks, func(x *lockEntry) bool { return x == l })
	}
	tx.locks = nil
}

// grantPendingLocks acquires waitable locks whose conflicts went away.
func (s *Server) grantPendingLocks() {
	if s.tree.pendingLocks == 0 {
		return
	}
	for _, n := range s.tree.nodes {
		for _, l := range n.locks {
			if !l.pending {
				continue
			}
			if s.findConflict(n, l.tx, l.mode, l.childKey, l.attrKey) == nil {
				l.pending = false
				s.tree.pendingLocks--
				if l.mode == lockSnapshot {
					s.snapshotBranch(n, l.tx)
				}
			}
		}
	}
}

func (s *Server) lockByID(id guid.GUID) *lockEntry {
	for _, tx := range s.txs {
		for _, l := range tx.locks {
			if l.id == id {
				return l
			}
		}
	}
	return nil
}
