package ytlocal

import (
	"maps"

	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/yterrors"
)

// objectTypeFor maps a node type to the id object type.
func objectTypeFor(typ string) uint32 {
	switch typ {
	case "map_node":
		return objectTypeMapNode
	case "table":
		return objectTypeTable
	case "file":
		return objectTypeFile
	case "link":
		return objectTypeLink
	case "document":
		return objectTypeDocument
	case "string_node":
		return objectTypeStringNode
	case "list_node":
		return objectTypeListNode
	case "account":
		return objectTypeAccount
	case "user":
		return objectTypeUser
	}
	return objectTypeIntNode
}

var creatableTypes = map[string]bool{
	"map_node": true, "table": true, "file": true, "link": true, "document": true, "string_node": true,
	"int64_node": true, "uint64_node": true, "double_node": true, "boolean_node": true, "list_node": true,
	"queue_consumer": true, "queue_producer": true,
}

// ensureParent resolves the parent of p for creation, creating map nodes when recursive.
func (s *Server) ensureParent(p *pathRef, tx *masterTx, recursive bool) (*node, string, error) {
	if len(p.keys) == 0 {
		if p.byID {
			return nil, "", ytErr(yterrors.CodeAlreadyExists, "Node %s already exists", p.raw)
		}
		return nil, "", ytErr(yterrors.CodeAlreadyExists, "Node / already exists")
	}
	parentRef := &pathRef{raw: p.raw, byID: p.byID, id: p.id, rootAmp: p.rootAmp}
	obj, err := s.resolve(parentRef, tx, true)
	if err != nil {
		return nil, "", err
	}
	cur := obj.n
	if cur == nil {
		return nil, "", resolveError(p.raw, "Cannot create a node under a transaction object")
	}
	last := len(p.keys) - 1
	for _, key := range p.keys[:last] {
		if cur, err = s.followLink(cur, tx, p.raw, 0); err != nil {
			return nil, "", err
		}
		child, ok := s.tree.childOf(cur, tx, key)
		if !ok {
			if !recursive {
				cp, _ := s.tree.path(cur, tx)
				return nil, "", resolveError(p.raw, "Node %s has no child with key %q", cp, key)
			}
			if _, err := s.acquire(cur, tx, lockShared, key, "", false); err != nil {
				return nil, "", err
			}
			child = s.tree.newNode(tx, "map_node", objectTypeMapNode, cur, key)
		}
		cur = child
	}
	if cur, err = s.followLink(cur, tx, p.raw, 0); err != nil {
		return nil, "", err
	}
	if !isComposite(cur.typ) && cur.typ != "account" {
		cp, _ := s.tree.path(cur, tx)
		return nil, "", ytErr(yterrors.CodeGeneric, "Node %s of type %s cannot have children", cp, cur.typ)
	}
	return cur, p.keys[last], nil
}

func cmdCreate(c *call) (any, error) {
	s := c.s
	typ, err := c.requiredStr("type")
	if err != nil {
		return nil, err
	}
	if !c.has("path") {
		return s.createObject(c, typ)
	}
	if !creatableTypes[typ] {
		return nil, ytErr(yterrors.CodeGeneric, "Cannot create a node of type %q", typ)
	}
	p, err := c.pathRef("path")
	if err != nil {
		return nil, err
	}
	if p.isAttr() {
		return nil, ytErr(yterrors.CodeGeneric, "Cannot create an attribute %s", p.raw)
	}
	flags, err := c.nodeFlags()
	if err != nil {
		return nil, err
	}
	attrs, err := c.attributes()
	if err != nil {
		return nil, err
	}
	tx, finish, err := s.txForCall(c)
	if err != nil {
		return nil, err
	}
	id, err := s.createNode(tx, p, typ, attrs, flags)
	if err := finish(err); err != nil {
		return nil, err
	}
	return map[string]any{"node_id": id.String()}, nil
}

// storedType maps requested creation types to the node type kept in Cypress.
func storedType(typ string) string {
	switch typ {
	case "queue_consumer", "queue_producer":
		return "table"
	}
	return typ
}

// nodeFlags are the boolean parameters shared by create, copy, move and link
// (each defaults to false).
type nodeFlags struct {
	recursive      bool // create missing parent map nodes
	ignoreExisting bool // an existing node at the destination is the result
	force          bool // an existing node at the destination is replaced
}

// nodeFlags reads "recursive", "ignore_existing" and "force", in that order.
func (c *call) nodeFlags() (nodeFlags, error) {
	var f nodeFlags
	var err error
	if f.recursive, err = c.boolean("recursive", false); err != nil {
		return f, err
	}
	if f.ignoreExisting, err = c.boolean("ignore_existing", false); err != nil {
		return f, err
	}
	f.force, err = c.boolean("force", false)
	return f, err
}

func (s *Server) createNode(tx *masterTx, p *pathRef, typ string, attrs map[string]any, flags nodeFlags) (guid.GUID, error) {
	parent, key, err := s.ensureParent(p, tx, flags.recursive)
	if err != nil {
		return guid.GUID{}, err
	}
	st := storedType(typ)
	if existing, ok := s.tree.childOf(parent, tx, key); ok {
		switch {
		case flags.ignoreExisting && existing.typ == st:
			return existing.id, nil
		case flags.ignoreExisting:
			return guid.GUID{}, ytErr(yterrors.CodeAlreadyExists, "%s already exists and has type %q while node of %q type is about to be created", p.raw, existing.typ, typ)
		case flags.force:
			if err := s.removeChild(parent, existing, tx, true); err != nil {
				return guid.GUID{}, err
			}
		default:
			ep, _ := s.tree.path(existing, tx)
			return guid.GUID{}, withAttrs(ytErr(yterrors.CodeAlreadyExists, "Node %s already exists", ep), "path", ep)
		}
	}
	if err := s.prepareNodeAttrs(typ, attrs); err != nil {
		return guid.GUID{}, err
	}
	if st == "link" {
		tp, _ := attrs["target_path"].(string)
		if tp == "" {
			return guid.GUID{}, ytErr(yterrors.CodeGeneric, "Link %s needs attribute \"target_path\"", p.raw)
		}
	}
	if _, err := s.acquire(parent, tx, lockShared, key, "", false); err != nil {
		return guid.GUID{}, err
	}
	n := s.tree.newNode(tx, st, objectTypeFor(st), parent, key)
	b := n.branches[tx.id]
	for k, v := range attrs {
		b.attrs[k] = v
	}
	switch st {
	case "document":
		if v, ok := attrs["value"]; ok {
			delete(b.attrs, "value")
			b.content = &content{value: v}
		}
	case "string_node":
		b.content = &content{value: ""}
	case "list_node":
		b.content = &content{value: []any{}}
	case "int64_node":
		b.content = &content{value: int64(0)}
	case "uint64_node":
		b.content = &content{value: uint64(0)}
	case "double_node":
		b.content = &content{value: float64(0)}
	case "boolean_node":
		b.content = &content{value: false}
	}
	s.afterCreate(tx, n, typ)
	return n.id, nil
}

// createObject handles create without path: accounts, users, groups and the like
// become nodes under //sys/<kind>s/<name>.
func (s *Server) createObject(c *call, typ string) (any, error) {
	attrs, err := c.attributes()
	if err != nil {
		return nil, err
	}
	name, _ := attrs["name"].(string)
	dir := map[string]string{"account": "accounts", "user": "users", "group": "groups", "tablet_cell_bundle": "tablet_cell_bundles"}[typ]
	if dir == "" || name == "" {
		return nil, ytErr(yterrors.CodeGeneric, "Cannot create object of type %q (supported: account, user, group, tablet_cell_bundle with attribute \"name\")", typ)
	}
	ignoreExisting, err := c.boolean("ignore_existing", false)
	if err != nil {
		return nil, err
	}
	tx, finish, err := s.txForCall(c)
	if err != nil {
		return nil, err
	}
	p := &pathRef{raw: "//sys/" + dir + "/" + name, keys: []string{"sys", dir, name}, amp: []bool{false, false, false}}
	var id guid.GUID
	parent, key, err := s.ensureParent(p, tx, true)
	if err == nil {
		if existing, ok := s.tree.childOf(parent, tx, key); ok {
			if !ignoreExisting {
				err = ytErr(yterrors.CodeAlreadyExists, "%s %q already exists", typ, name)
			}
			id = existing.id
		} else {
			n := s.tree.newNode(tx, typ, objectTypeFor(typ), parent, key)
			b := n.branches[tx.id]
			maps.Copy(b.attrs, attrs)
			id = n.id
		}
	}
	if err := finish(err); err != nil {
		return nil, err
	}
	return map[string]any{"object_id": id.String()}, nil
}

// removeChild removes child (and its subtree) from parent inside tx.
func (s *Server) removeChild(parent, child *node, tx *masterTx, recursive bool) error {
	if isComposite(child.typ) && !recursive {
		keys, _ := s.tree.childrenOf(child, tx)
		if len(keys) > 0 {
			cp, _ := s.tree.path(child, tx)
			return ytErr(yterrors.CodeGeneric, "Cannot remove non-empty composite node %s", cp)
		}
	}
	if err := s.lockSubtree(child, tx); err != nil {
		return err
	}
	if _, err := s.acquire(parent, tx, lockShared, child.key, "", false); err != nil {
		return err
	}
	s.tree.setChild(parent, tx, child.key, guid.GUID{})
	return nil
}

func (s *Server) lockSubtree(n *node, tx *masterTx) error {
	if _, err := s.acquire(n, tx, lockExclusive, "", "", false); err != nil {
		return err
	}
	if isComposite(n.typ) {
		keys, kids := s.tree.childrenOf(n, tx)
		for _, k := range keys {
			if c := s.tree.nodes[kids[k]]; c != nil {
				if err := s.lockSubtree(c, tx); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
