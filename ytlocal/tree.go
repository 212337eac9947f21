package ytlocal

import (
	"maps"
	"slices"
	"sort"
	"time"

	"go.ytsaurus.tech/yt/go/guid"
)

// The Cypress tree. Every node has a committed ("trunk") version and, per master
// transaction that changed it, a branch holding only that transaction's changes
// (attributes, children, content). A read under transaction T walks T, its ancestors
// and finally the trunk and takes the first value found for the key it needs. A commit
// folds a branch into the parent transaction's branch or, for a topmost transaction,
// into the trunk; only trunk changes are logged (cypressDelta records).
//
// A snapshot lock stores a full frozen copy in the branch (version.snapshot) and reads
// stop there.

// deletedMark marks a removed attribute inside a branch.
type deletedMark struct{}

type content struct {
	rows  []any  // table rows; never mutated in place, only replaced or appended to a clipped copy
	data  []byte // file bytes; replaced only
	value any    // document value
}

type version struct {
	attrs    map[string]any       // trunk: all user attributes; branch: changed ones (deletedMark = removed)
	children map[string]guid.GUID // trunk: all; branch: changed ones (zero GUID = removed)
	content  *content             // branch: nil = unchanged
	// appended holds rows a branch appended to the content it sees below it, when it
	// did not replace the content (content == nil). Keeping them apart makes an append
	// in a transaction cost O(appended rows), not O(table).
	appended []any
	created  bool // branch: the node was created in this transaction
	snapshot bool // branch: frozen full copy taken by a snapshot lock
	modified time.Time
	revision uint64
}

type node struct {
	id       guid.GUID
	typ      string
	parent   guid.GUID // zero for the root
	key      string
	created  time.Time
	trunk    *version
	branches map[guid.GUID]*version
	locks    []*lockEntry
}

type tree struct {
	s        *Server
	nodes    map[guid.GUID]*node
	root     *node
	revision uint64
	// pendingLocks counts waitable locks not yet acquired.
	pendingLocks int
}

func newVersion() *version {
	return &version{attrs: map[string]any{}, children: map[string]guid.GUID{}}
}

func newTree(s *Server) *tree {
	t := &tree{s: s, nodes: map[guid.GUID]*node{}}
	t.bootstrap()
	return t
}

// bootstrap creates the fixed skeleton: /, //tmp, //sys and its well-known maps.
func (t *tree) bootstrap() {
	now := t.s.now()
	t.nodes = map[guid.GUID]*node{}
	rootID := guid.FromParts(0x10000, objectTypeMapNode, 1, 0)
	t.root = &node{id: rootID, typ: "map_node", created: now, trunk: newVersion(), branches: map[guid.GUID]*version{}}
	t.root.trunk.modified = now
	t.nodes[rootID] = t.root
	t.revision = 1
	t.root.trunk.revision = 1
	mk := func(parent *node, key string, n uint32) *node {
		id := guid.FromParts(0x10000, objectTypeMapNode, n, 0)
		nd := &node{id: id, typ: "map_node", parent: parent.id, key: key, created: now, trunk: newVersion(), branches: map[guid.GUID]*version{}}
		nd.trunk.modified = now
		nd.trunk.revision = 1
		t.nodes[id] = nd
		parent.trunk.children[key] = id
		return nd
	}
	mk(t.root, "tmp", 2)
	sys := mk(t.root, "sys", 3)
	accounts := mk(sys, "accounts", 4)
	users := mk(sys, "users", 5)
	groups := mk(sys, "groups", 6)
	mk(sys, "transactions", 7)
	bundles := mk(sys, "tablet_cell_bundles", 8)
	mk(sys, "pools", 9)
	mk(t.root, "home", 10)
	// Built-in objects that attributes refer to (@account=tmp, @owner=root, ...).
	n := uint32(11)
	for _, o := range []struct {
		dir  *node
		typ  string
		name string
	}{
		{accounts, "account", "tmp"}, {accounts, "account", "sys"}, {accounts, "account", "intermediate"},
		{users, "user", "root"}, {groups, "group", "everyone"}, {groups, "group", "users"},
		{bundles, "tablet_cell_bundle", "default"},
	} {
		obj := mk(o.dir, o.name, n)
		obj.typ = o.typ
		obj.id = guid.FromParts(0x10000, objectTypeFor(o.typ), n, 0)
		delete(t.nodes, guid.FromParts(0x10000, objectTypeMapNode, n, 0))
		t.nodes[obj.id] = obj
		o.dir.trunk.children[o.name] = obj.id
		obj.trunk.attrs["name"] = o.name
		n++
	}
}

// txChain returns tx ids from tx up to its topmost ancestor (empty for nil).
func txChain(tx *masterTx) []guid.GUID {
	var out []guid.GUID
	for ; tx != nil; tx = tx.parent {
		out = append(out, tx.id)
	}
	return out
}

// exists reports whether n has any version visible under tx.
func (t *tree) visible(n *node, tx *masterTx) bool {
	for ; tx != nil; tx = tx.parent {
		if _, ok := n.branches[tx.id]; ok {
			return true
		}
	}
	return n.trunk != nil
}

// childOf looks up a child id under tx.
func (t *tree) childOf(n *node, tx *masterTx, key string) (*node, bool) {
	for x := tx; x != nil; x = x.parent {
		if b, ok := n.branches[x.id]; ok {
			if id, ok := b.children[key]; ok {
				if zeroGUID(id) {
					return nil, false
				}
				c := t.nodes[id]
				return c, c != nil
			}
			if b.snapshot {
				return nil, false
			}
		}
	}
	if n.trunk == nil {
		return nil, false
	}
	id, ok := n.trunk.children[key]
	if !ok {
		return nil, false
	}
	c := t.nodes[id]
	return c, c != nil
}

// visibleBranches returns the branches of n that tx sees, innermost first:
// those of tx and its ancestors up to the first snapshot branch. trunk
// reports whether the committed version shows through beneath them (no
// snapshot branch among them).
func visibleBranches(n *node, tx *masterTx) (chain []*version, trunk bool) {
	chain = []*version{}
	for x := tx; x != nil; x = x.parent {
		if b, ok := n.branches[x.id]; ok {
			chain = append(chain, b)
			if b.snapshot {
				return chain, false
			}
		}
	}
	return chain, true
}

// childrenOf lists child keys (sorted) and ids under tx.
func (t *tree) childrenOf(n *node, tx *masterTx) ([]string, map[string]guid.GUID) {
	chain, trunk := visibleBranches(n, tx)
	out := map[string]guid.GUID{}
	if trunk && n.trunk != nil {
		maps.Copy(out, n.trunk.children)
	}
	for i := len(chain) - 1; i >= 0; i-- {
		for k, id := range chain[i].children {
			if zeroGUID(id) {
				delete(out, k)
			} else {
				out[k] = id
			}
		}
	}
	keys := slices.Collect(maps.Keys(out))
	sort.Strings(keys)
	return keys, out
}

// attrOf returns a user attribute under tx.
func (t *tree) attrOf(n *node, tx *masterTx, name string) (any, bool) {
	for x := tx; x != nil; x = x.parent {
		if b, ok := n.branches[x.id]; ok {
			if v, ok := b.attrs[name]; ok {
				if _, del := v.(deletedMark); del {
					return nil, false
				}
				return v, true
			}
			if b.snapshot {
				return nil, false
			}
		}
	}
	if n.trunk == nil {
		return nil, false
	}
	v, ok := n.trunk.attrs[name]
	return v, ok
}

// userAttrs returns all user attributes under tx.
func (t *tree) userAttrs(n *node, tx *masterTx) map[string]any {
	chain, trunk := visibleBranches(n, tx)
	out := map[string]any{}
	if trunk && n.trunk != nil {
		maps.Copy(out, n.trunk.attrs)
	}
	for i := len(chain) - 1; i >= 0; i-- {
		for k, v := range chain[i].attrs {
			if _, del := v.(deletedMark); del {
				delete(out, k)
			} else {
				out[k] = v
			}
		}
	}
	return out
}

// contentOf returns the content visible under tx (never nil). Append-only branches are
// materialised on read (reads inside a writing transaction are rare).
func (t *tree) contentOf(n *node, tx *masterTx) *content {
	var appended [][]any
	for x := tx; x != nil; x = x.parent {
		b, ok := n.branches[x.id]
		if !ok {
			continue
		}
		if b.content != nil || b.snapshot {
			base := b.content
			if base == nil {
				base = &content{}
			}
			return withAppended(base, appended)
		}
		if len(b.appended) > 0 {
			appended = append(appended, b.appended)
		}
	}
	if n.trunk == nil || n.trunk.content == nil {
		return withAppended(&content{}, appended)
	}
	return withAppended(n.trunk.content, appended)
}

// withAppended returns base followed by the appended groups (innermost branch first).
func withAppended(base *content, appended [][]any) *content {
	if len(appended) == 0 {
		return base
	}
	rows := slices.Clip(base.rows)
	for i := len(appended) - 1; i >= 0; i-- {
		rows = append(rows, appended[i]...)
	}
	return &content{rows: rows, data: base.data, value: base.value}
}

// lastRow returns the last table row visible under tx (nil for an empty table).
func (t *tree) lastRow(n *node, tx *masterTx) any {
	for x := tx; x != nil; x = x.parent {
		b, ok := n.branches[x.id]
		if !ok {
			continue
		}
		if len(b.appended) > 0 {
			return b.appended[len(b.appended)-1]
		}
		if b.content != nil || b.snapshot {
			if b.content == nil || len(b.content.rows) == 0 {
				return nil
			}
			return b.content.rows[len(b.content.rows)-1]
		}
	}
	if n.trunk == nil || n.trunk.content == nil || len(n.trunk.content.rows) == 0 {
		return nil
	}
	return n.trunk.content.rows[len(n.trunk.content.rows)-1]
}

// versionInfo returns revision and modification time visible under tx.
func (t *tree) versionInfo(n *node, tx *masterTx) (uint64, time.Time) {
	for x := tx; x != nil; x = x.parent {
		if b, ok := n.branches[x.id]; ok {
			return b.revision, b.modified
		}
	}
	if n.trunk == nil {
		return 0, n.created
	}
	return n.trunk.revision, n.trunk.modified
}

// branch returns tx's branch of n, creating an empty one (and registering n as touched).
func (t *tree) branch(n *node, tx *masterTx) *version {
	if b, ok := n.branches[tx.id]; ok {
		return b
	}
	b := newVersion()
	b.revision, b.modified = t.versionInfo(n, tx)
	n.branches[tx.id] = b
	tx.touched = append(tx.touched, n.id)
	return b
}

func (t *tree) touch(b *version, now time.Time) {
	t.revision++
	b.revision = t.revision
	b.modified = now
}

// setAttr changes a user attribute of n inside tx (value nil with del=true removes it).
func (t *tree) setAttr(n *node, tx *masterTx, name string, value any, del bool) {
	b := t.branch(n, tx)
	if del {
		b.attrs[name] = deletedMark{}
	} else {
		b.attrs[name] = value
	}
	t.touch(b, tx.now)
}

func (t *tree) setChild(n *node, tx *masterTx, key string, id guid.GUID) {
	b := t.branch(n, tx)
	b.children[key] = id
	t.touch(b, tx.now)
}

// setContent replaces content of n inside tx.
func (t *tree) setContent(n *node, tx *masterTx, c *content) {
	b := t.branch(n, tx)
	b.content = c
	b.appended = nil
	t.touch(b, tx.now)
}

// appendRows appends rows to a table inside tx. The branch owns the slices it appends
// to (replaced content comes fresh from the writer, appended rows are the branch's own),
// and every other holder sees only a prefix, so appending in place is safe.
func (t *tree) appendRows(n *node, tx *masterTx, rows []any) {
	b := t.branch(n, tx)
	if b.content != nil {
		b.content = &content{rows: append(b.content.rows, rows...)}
	} else {
		b.appended = append(b.appended, rows...)
	}
	t.touch(b, tx.now)
}

// newNode allocates a node created inside tx under parent/key.
func (t *tree) newNode(tx *masterTx, typ string, objType uint32, parent *node, key string) *node {
	n := &node{id: t.s.newID(objType), typ: typ, parent: parent.id, key: key, created: tx.now, branches: map[guid.GUID]*version{}}
	t.nodes[n.id] = n
	b := t.branch(n, tx)
	b.created = true
	t.touch(b, tx.now)
	t.setChild(parent, tx, key, n.id)
	return n
}

// fold merges tx's branches into its parent (or the trunk for a topmost tx, returning
// the deltas to log). It does not drop the branches; call dropBranches after.
func (t *tree) fold(tx *masterTx) []nodeDelta {
	var deltas []nodeDelta
	for _, id := range tx.touched {
		n := t.nodes[id]
		if n == nil {
			continue
		}
		b, ok := n.branches[tx.id]
		if !ok || b.snapshot {
			continue
		}
		if tx.parent == nil {
			deltas = append(deltas, t.deltaOf(n, b))
			continue
		}
		pb := t.branch(n, tx.parent)
		if pb.snapshot {
			continue
		}
		if b.created {
			pb.created = true
		}
		maps.Copy(pb.attrs, b.attrs)
		maps.Copy(pb.children, b.children)
		switch {
		case b.content != nil:
			pb.content = b.content
			pb.appended = nil
		case len(b.appended) > 0 && pb.content != nil:
			pb.content = &content{rows: append(slices.Clip(pb.content.rows), b.appended...)}
		case len(b.appended) > 0:
			pb.appended = append(slices.Clip(pb.appended), b.appended...)
		}
		pb.revision, pb.modified = b.revision, b.modified
	}
	return deltas
}

// dropBranches forgets every branch of tx.
func (t *tree) dropBranches(tx *masterTx) {
	for _, id := range tx.touched {
		if n := t.nodes[id]; n != nil {
			delete(n.branches, tx.id)
			if n.trunk == nil && len(n.branches) == 0 {
				delete(t.nodes, id)
			}
		}
	}
	tx.touched = nil
}

// path returns the path of n under tx and whether n is reachable from the root.
func (t *tree) path(n *node, tx *masterTx) (string, bool) {
	if n == t.root {
		return "/", true
	}
	var keys []string
	cur := n
	for cur != t.root {
		p := t.nodes[cur.parent]
		if p == nil {
			return "", false
		}
		c, ok := t.childOf(p, tx, cur.key)
		if !ok || c != cur {
			return "", false
		}
		keys = append(keys, escapeKey(cur.key))
		cur = p
	}
	out := "/"
	for i := len(keys) - 1; i >= 0; i-- {
		out += "/" + keys[i]
	}
	return out, true
}

// removeSubtreeGarbage forgets nodes of a committed removal that no transaction sees.
func (t *tree) collect(id guid.GUID) {
	n := t.nodes[id]
	if n == nil || len(n.branches) > 0 || len(n.locks) > 0 {
		return
	}
	if n.trunk != nil {
		for _, c := range n.trunk.children {
			t.collect(c)
		}
	}
	delete(t.nodes, id)
}
