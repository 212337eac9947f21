package ytlocal

import (
	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yterrors"
)

// --- commands that read: get, exists, list ---

func cmdGet(c *call) (any, error) {
	s := c.s
	p, err := c.pathRef("path")
	if err != nil {
		return nil, err
	}
	tx, err := s.readTx(c)
	if err != nil {
		return nil, err
	}
	filter, err := c.attrFilter()
	if err != nil {
		return nil, err
	}
	obj, err := s.resolveDoc(p, tx, true)
	if err != nil {
		return nil, err
	}
	if len(obj.docKeys) > 0 {
		if p.isAttr() {
			return nil, resolveError(p.raw, "Values inside document %s have no attributes", p.raw)
		}
		v, err := navigate(s.tree.contentOf(obj.n, tx).value, obj.docKeys, p.raw)
		if err != nil {
			return nil, err
		}
		return map[string]any{"value": v}, nil
	}
	if obj.tx != nil {
		attrs := s.txAttributes(obj.tx)
		if !p.isAttr() {
			return map[string]any{"value": nil}, nil
		}
		if p.attr[0] == "" {
			return map[string]any{"value": filterMap(attrs, filter)}, nil
		}
		v, ok := attrs[p.attr[0]]
		if !ok {
			return nil, resolveError(p.raw, "Attribute %q is not found", p.attr[0])
		}
		v, err = navigate(v, p.attr[1:], p.raw)
		if err != nil {
			return nil, err
		}
		return map[string]any{"value": v}, nil
	}
	n := obj.n
	if !p.isAttr() {
		return map[string]any{"value": s.nodeValue(n, tx, filter, 0)}, nil
	}
	if p.attr[0] == "" {
		return map[string]any{"value": s.allAttrs(n, tx, filter)}, nil
	}
	v, ok := s.attr(n, tx, p.attr[0])
	if !ok {
		return nil, resolveError(p.raw, "Attribute %q is not found", p.attr[0])
	}
	v, err = navigate(v, p.attr[1:], p.raw)
	if err != nil {
		return nil, err
	}
	return map[string]any{"value": v}, nil
}

func filterMap(m map[string]any, filter []string) map[string]any {
	if filter == nil {
		return m
	}
	out := map[string]any{}
	for _, k := range filter {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

func cmdExists(c *call) (any, error) {
	s := c.s
	p, err := c.pathRef("path")
	if err != nil {
		return nil, err
	}
	tx, err := s.readTx(c)
	if err != nil {
		return nil, err
	}
	obj, err := s.resolveDoc(p, tx, true)
	if err != nil {
		if yterrors.ContainsResolveError(err) {
			return map[string]any{"value": false}, nil
		}
		return nil, err
	}
	if len(obj.docKeys) > 0 {
		_, err := navigate(s.tree.contentOf(obj.n, tx).value, obj.docKeys, p.raw)
		return map[string]any{"value": err == nil && !p.isAttr()}, nil
	}
	if p.isAttr() && p.attr[0] != "" {
		var v any
		var ok bool
		if obj.tx != nil {
			v, ok = s.txAttributes(obj.tx)[p.attr[0]]
		} else {
			v, ok = s.attr(obj.n, tx, p.attr[0])
		}
		if ok {
			_, err := navigate(v, p.attr[1:], p.raw)
			ok = err == nil
		}
		return map[string]any{"value": ok}, nil
	}
	return map[string]any{"value": true}, nil
}

func cmdList(c *call) (any, error) {
	s := c.s
	p, err := c.pathRef("path")
	if err != nil {
		return nil, err
	}
	tx, err := s.readTx(c)
	if err != nil {
		return nil, err
	}
	filter, err := c.attrFilter()
	if err != nil {
		return nil, err
	}
	maxSize, err := c.int64p("max_size", 1<<62)
	if err != nil {
		return nil, err
	}
	obj, err := s.resolve(p, tx, true)
	if err != nil {
		return nil, err
	}
	if obj.n == nil || p.isAttr() {
		return nil, ytErr(yterrors.CodeGeneric, "Cannot list %s", p.raw)
	}
	n := obj.n
	if n.typ == "map_node" && n.key == "transactions" && n.parent == s.sysID() {
		out := []any{}
		for _, id := range keysOf(s.txs) {
			out = append(out, id.String())
		}
		return map[string]any{"value": out}, nil
	}
	if !isComposite(n.typ) && n.typ != "account" {
		cp, _ := s.tree.path(n, tx)
		return nil, ytErr(yterrors.CodeGeneric, "Cannot list node %s of type %s", cp, n.typ)
	}
	keys, kids := s.tree.childrenOf(n, tx)
	out := []any{}
	for _, k := range keys {
		if int64(len(out)) >= maxSize {
			break
		}
		if filter != nil {
			if cn := s.tree.nodes[kids[k]]; cn != nil {
				out = append(out, &yson.ValueWithAttrs{Attrs: s.allAttrs(cn, tx, filter), Value: k})
				continue
			}
		}
		out = append(out, k)
	}
	return map[string]any{"value": out}, nil
}
