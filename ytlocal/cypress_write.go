package ytlocal

import (
	"maps"
	"slices"
	"strconv"

	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yterrors"
)

func cmdRemove(c *call) (any, error) {
	s := c.s
	p, err := c.pathRef("path")
	if err != nil {
		return nil, err
	}
	recursive, err := c.boolean("recursive", false)
	if err != nil {
		return nil, err
	}
	force, err := c.boolean("force", false)
	if err != nil {
		return nil, err
	}
	tx, finish, err := s.txForCall(c)
	if err != nil {
		return nil, err
	}
	err = s.remove(tx, p, recursive, force)
	return nil, finish(err)
}

func (s *Server) remove(tx *masterTx, p *pathRef, recursive, force bool) error {
	obj, err := s.resolveDoc(p, tx, p.isAttr())
	if err != nil {
		if force && yterrors.ContainsResolveError(err) {
			return nil
		}
		return err
	}
	if len(obj.docKeys) > 0 && !p.isAttr() {
		if _, err := s.acquire(obj.n, tx, lockExclusive, "", "", false); err != nil {
			return err
		}
		nv, err := removeIn(s.tree.contentOf(obj.n, tx).value, obj.docKeys, p.raw)
		if err != nil {
			if force && yterrors.ContainsResolveError(err) {
				return nil
			}
			return err
		}
		s.tree.setContent(obj.n, tx, &content{value: nv})
		return nil
	}
	if obj.n == nil {
		return ytErr(yterrors.CodeGeneric, "Cannot remove transaction object %s; abort it instead", p.raw)
	}
	n := obj.n
	if p.isAttr() {
		name := p.attr[0]
		if name == "" {
			return ytErr(yterrors.CodeGeneric, "Cannot remove all attributes of %s", p.raw)
		}
		if _, ok := s.tree.attrOf(n, tx, name); !ok {
			if force {
				return nil
			}
			return resolveError(p.raw, "Attribute %q is not found", name)
		}
		if _, err := s.acquire(n, tx, lockShared, "", name, false); err != nil {
			return err
		}
		if len(p.attr) > 1 {
			v, _ := s.tree.attrOf(n, tx, name)
			nv, err := removeIn(v, p.attr[1:], p.raw)
			if err != nil {
				return err
			}
			s.tree.setAttr(n, tx, name, nv, false)
			return nil
		}
		s.tree.setAttr(n, tx, name, nil, true)
		return nil
	}
	if n == s.tree.root {
		return ytErr(yterrors.CodeGeneric, "Cannot remove the root")
	}
	parent := s.tree.nodes[n.parent]
	if parent == nil {
		return resolveError(p.raw, "Node has no parent")
	}
	return s.removeChild(parent, n, tx, recursive)
}

func cmdSet(c *call) (any, error) {
	s := c.s
	p, err := c.pathRef("path")
	if err != nil {
		return nil, err
	}
	value, err := c.inputValue()
	if err != nil {
		return nil, err
	}
	recursive, err := c.boolean("recursive", false)
	if err != nil {
		return nil, err
	}
	force, err := c.boolean("force", false)
	if err != nil {
		return nil, err
	}
	tx, finish, err := s.txForCall(c)
	if err != nil {
		return nil, err
	}
	err = s.set(tx, p, value, recursive, force)
	return nil, finish(err)
}

func (s *Server) set(tx *masterTx, p *pathRef, value any, recursive, force bool) error {
	if p.isAttr() {
		obj, err := s.resolve(p, tx, true)
		if err != nil {
			return err
		}
		if obj.tx != nil {
			if p.attr[0] == "" {
				return ytErr(yterrors.CodeGeneric, "Cannot replace all attributes of a transaction")
			}
			obj.tx.attrs[p.attr[0]] = value
			return nil
		}
		n := obj.n
		if p.attr[0] == "" {
			m, ok := yson.ValueOf(value).(map[string]any)
			if !ok {
				return ytErr(yterrors.CodeGeneric, "Attributes of %s must be set from a map, got %s", p.raw, ysonTypeName(value))
			}
			return s.setAttrs(tx, n, m, false)
		}
		if len(p.attr) > 1 {
			cur, ok := s.tree.attrOf(n, tx, p.attr[0])
			if !ok {
				return resolveError(p.raw, "Attribute %q is not found", p.attr[0])
			}
			nv, err := setIn(cur, p.attr[1:], value, p.raw)
			if err != nil {
				return err
			}
			value = nv
		}
		return s.setAttrs(tx, n, map[string]any{p.attr[0]: value}, false)
	}
	obj, err := s.resolveDoc(p, tx, true)
	if err == nil && len(obj.docKeys) > 0 {
		if _, err := s.acquire(obj.n, tx, lockExclusive, "", "", false); err != nil {
			return err
		}
		nv, err := setIn(s.tree.contentOf(obj.n, tx).value, obj.docKeys, yson.ValueOf(value), p.raw)
		if err != nil {
			return err
		}
		s.tree.setContent(obj.n, tx, &content{value: nv})
		return nil
	}
	if err == nil && obj.n != nil {
		n := obj.n
		if n == s.tree.root || n.typ == "map_node" && !force {
			m, ok := yson.ValueOf(value).(map[string]any)
			if !ok {
				if n == s.tree.root {
					return ytErr(yterrors.CodeGeneric, "Cannot set the root to a non-map value")
				}
			} else {
				return s.replaceMapChildren(tx, n, m)
			}
		}
		parent := s.tree.nodes[n.parent]
		if n.typ == "document" || scalarNodeType(value) == n.typ {
			if _, err := s.acquire(n, tx, lockExclusive, "", "", false); err != nil {
				return err
			}
			s.tree.setContent(n, tx, &content{value: yson.ValueOf(value)})
			return nil
		}
		if err := s.removeChild(parent, n, tx, true); err != nil {
			return err
		}
	} else if err != nil && !yterrors.ContainsResolveError(err) {
		return err
	}
	parent, key, err := s.ensureParent(p, tx, recursive)
	if err != nil {
		return err
	}
	if _, err := s.acquire(parent, tx, lockShared, key, "", false); err != nil {
		return err
	}
	s.buildValue(tx, parent, key, value)
	return nil
}

func (s *Server) replaceMapChildren(tx *masterTx, n *node, m map[string]any) error {
	if _, err := s.acquire(n, tx, lockExclusive, "", "", false); err != nil {
		return err
	}
	keys, kids := s.tree.childrenOf(n, tx)
	for _, k := range keys {
		if c := s.tree.nodes[kids[k]]; c != nil {
			if err := s.removeChild(n, c, tx, true); err != nil {
				return err
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		s.buildValue(tx, n, k, m[k])
	}
	return nil
}

func scalarNodeType(v any) string {
	switch yson.ValueOf(v).(type) {
	case string:
		return "string_node"
	case int64:
		return "int64_node"
	case uint64:
		return "uint64_node"
	case float64:
		return "double_node"
	case bool:
		return "boolean_node"
	case []any:
		return "list_node"
	case map[string]any:
		return "map_node"
	}
	return "document"
}

// buildValue creates nodes representing a YSON value under parent/key.
func (s *Server) buildValue(tx *masterTx, parent *node, key string, value any) *node {
	typ := scalarNodeType(value)
	n := s.tree.newNode(tx, typ, objectTypeFor(typ), parent, key)
	b := n.branches[tx.id]
	for k, v := range yson.AttrsOf(value) {
		b.attrs[k] = v
	}
	switch x := yson.ValueOf(value).(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			s.buildValue(tx, n, k, x[k])
		}
	default:
		b.content = &content{value: x}
	}
	return n
}

// setAttrs writes user attributes of n inside tx (system attributes are read-only).
func (s *Server) setAttrs(tx *masterTx, n *node, attrs map[string]any, allowSystem bool) error {
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		if readOnlyAttrs[k] && !allowSystem {
			return ytErr(yterrors.CodeGeneric, "Builtin attribute %q cannot be set", k)
		}
		if _, err := s.acquire(n, tx, lockShared, "", k, false); err != nil {
			return err
		}
		if k == "schema" && n.typ == "table" && !allowSystem {
			norm, err := normalizeSchemaAttr(attrs[k], dynamicOf(s, n, tx))
			if err != nil {
				return err
			}
			s.tree.setAttr(n, tx, k, norm, false)
			continue
		}
		s.tree.setAttr(n, tx, k, attrs[k], false)
	}
	return nil
}

func setIn(cur any, keys []string, value any, path string) (any, error) {
	if len(keys) == 0 {
		return value, nil
	}
	switch x := yson.ValueOf(cur).(type) {
	case map[string]any:
		m := maps.Clone(x)
		nv, err := setIn(m[keys[0]], keys[1:], value, path)
		if err != nil {
			return nil, err
		}
		m[keys[0]] = nv
		return m, nil
	case []any:
		i, err := strconv.Atoi(keys[0])
		if err != nil || i < 0 || i >= len(x) {
			return nil, resolveError(path, "Bad list index %q", keys[0])
		}
		l := slices.Clone(x)
		nv, err := setIn(l[i], keys[1:], value, path)
		if err != nil {
			return nil, err
		}
		l[i] = nv
		return l, nil
	case nil:
		if len(keys) == 1 {
			return map[string]any{keys[0]: value}, nil
		}
	}
	return nil, resolveError(path, "Cannot set %q inside %s", keys[0], ysonTypeName(cur))
}

func removeIn(cur any, keys []string, path string) (any, error) {
	m, ok := yson.ValueOf(cur).(map[string]any)
	if !ok {
		return nil, resolveError(path, "Cannot remove %q inside %s", keys[0], ysonTypeName(cur))
	}
	m = maps.Clone(m)
	if len(keys) == 1 {
		if _, ok := m[keys[0]]; !ok {
			return nil, resolveError(path, "No key %q", keys[0])
		}
		delete(m, keys[0])
		return m, nil
	}
	nv, err := removeIn(m[keys[0]], keys[1:], path)
	if err != nil {
		return nil, err
	}
	m[keys[0]] = nv
	return m, nil
}

func cmdMultisetAttributes(c *call) (any, error) {
	s := c.s
	p, err := c.pathRef("path")
	if err != nil {
		return nil, err
	}
	value, err := c.inputValue()
	if err != nil {
		return nil, err
	}
	m, ok := yson.ValueOf(value).(map[string]any)
	if !ok {
		return nil, ytErr(yterrors.CodeGeneric, "multiset_attributes input must be a map, got %s", ysonTypeName(value))
	}
	tx, finish, err := s.txForCall(c)
	if err != nil {
		return nil, err
	}
	err = func() error {
		if !p.isAttr() || p.attr[0] != "" {
			return ytErr(yterrors.CodeGeneric, "multiset_attributes path %s must end with /@", p.raw)
		}
		obj, err := s.resolve(p, tx, true)
		if err != nil {
			return err
		}
		if obj.n == nil {
			return ytErr(yterrors.CodeGeneric, "Cannot set attributes of %s", p.raw)
		}
		return s.setAttrs(tx, obj.n, m, false)
	}()
	return nil, finish(err)
}
