package ytlocal

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"go.ytsaurus.tech/yt/go/yson"
)

// --- attributes ---

var readOnlyAttrs = map[string]bool{
	"id": true, "type": true, "path": true, "key": true, "parent_id": true, "revision": true,
	"creation_time": true, "modification_time": true, "row_count": true, "ref_count": true,
	"lock_count": true, "locks": true, "count": true, "chunk_count": true, "sorted": true,
	"sorted_by": true, "key_columns": true, "uncompressed_data_size": true, "compressed_data_size": true,
	"data_weight": true, "schema_mode": true, "content_revision": true, "attribute_revision": true,
}

// systemAttr computes a built-in attribute of n.
func (s *Server) systemAttr(n *node, tx *masterTx, name string) (any, bool) {
	for _, en := range s.extOrder {
		if ap, ok := s.exts[en].(AttributeProvider); ok {
			if v, ok := ap.NodeAttribute(n.id, n.typ, name); ok {
				return v, true
			}
		}
	}
	t := s.tree
	rev, mod := t.versionInfo(n, tx)
	switch name {
	case "id":
		return n.id.String(), true
	case "type":
		return n.typ, true
	case "path":
		p, _ := t.path(n, tx)
		return p, true
	case "key":
		if n == t.root {
			return nil, false
		}
		return n.key, true
	case "parent_id":
		if n == t.root {
			return nil, false
		}
		return n.parent.String(), true
	case "account":
		return "tmp", true
	case "owner":
		return "root", true
	case "revision", "content_revision", "attribute_revision":
		if rev == 0 {
			rev = 1
		}
		return rev, true
	case "creation_time":
		return fmtTime(n.created), true
	case "modification_time", "access_time":
		return fmtTime(mod), true
	case "ref_count":
		return int64(1), true
	case "lock_count":
		return int64(len(n.locks)), true
	case "locks":
		var out []any
		for _, l := range n.locks {
			state := "acquired"
			if l.pending {
				state = "pending"
			}
			m := map[string]any{"id": l.id.String(), "mode": l.mode, "transaction_id": l.tx.id.String(), "state": state}
			if l.childKey != "" {
				m["child_key"] = l.childKey
			}
			if l.attrKey != "" {
				m["attribute_key"] = l.attrKey
			}
			out = append(out, m)
		}
		return out, true
	case "inherit_acl", "acl":
		// Set at creation or later, as any attribute; YTsaurus's defaults otherwise.
		if v, ok := t.attrOf(n, tx, name); ok {
			return v, true
		}
		if name == "inherit_acl" {
			return true, true
		}
		return []any{}, true
	case "effective_acl":
		return s.effectiveACL(n, tx), true
	case "builtin":
		return false, true
	case "count":
		if isComposite(n.typ) {
			keys, _ := t.childrenOf(n, tx)
			return int64(len(keys)), true
		}
	}
	switch n.typ {
	case "table":
		return s.tableAttr(n, tx, name)
	case "file":
		c := t.contentOf(n, tx)
		switch name {
		case "uncompressed_data_size", "compressed_data_size", "data_weight":
			return int64(len(c.data)), true
		case "chunk_count":
			if len(c.data) == 0 {
				return int64(0), true
			}
			return int64(1), true
		}
	}
	return nil, false
}

var commonAttrNames = []string{"id", "type", "path", "key", "parent_id", "account", "owner", "revision",
	"creation_time", "modification_time", "access_time", "ref_count", "lock_count", "inherit_acl", "acl", "builtin"}

func (s *Server) systemAttrNames(n *node) []string {
	names := slices.Clone(commonAttrNames)
	switch {
	case isComposite(n.typ):
		names = append(names, "count")
	case n.typ == "table":
		names = append(names, tableAttrNames...)
	case n.typ == "file":
		names = append(names, "uncompressed_data_size", "compressed_data_size", "chunk_count")
	}
	for _, en := range s.extOrder {
		if ap, ok := s.exts[en].(AttributeProvider); ok {
			names = append(names, ap.NodeAttributeNames(n.id, n.typ)...)
		}
	}
	return names
}

// attr returns one attribute (system or user) of n under tx.
func (s *Server) attr(n *node, tx *masterTx, name string) (any, bool) {
	if v, ok := s.systemAttr(n, tx, name); ok {
		return v, true
	}
	return s.tree.attrOf(n, tx, name)
}

// allAttrs returns every attribute (filter nil) or only the listed ones.
func (s *Server) allAttrs(n *node, tx *masterTx, filter []string) map[string]any {
	out := map[string]any{}
	if filter != nil {
		for _, name := range filter {
			if v, ok := s.attr(n, tx, name); ok {
				out[name] = v
			}
		}
		return out
	}
	maps.Copy(out, s.tree.userAttrs(n, tx))
	for _, name := range s.systemAttrNames(n) {
		if v, ok := s.systemAttr(n, tx, name); ok {
			out[name] = v
		}
	}
	return out
}

// navigate descends into a YSON value by keys / list indices.
func navigate(v any, keys []string, path string) (any, error) {
	for _, k := range keys {
		switch x := yson.ValueOf(v).(type) {
		case map[string]any:
			e, ok := x[k]
			if !ok {
				return nil, resolveError(path, "Attribute has no child with key %q", k)
			}
			v = e
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(x) {
				return nil, resolveError(path, "Attribute has no item %q", k)
			}
			v = x[i]
		default:
			return nil, resolveError(path, "Cannot descend into %s with key %q", ysonTypeName(x), k)
		}
	}
	return v, nil
}

// --- node values ---

// nodeValue renders n (recursively for maps) under tx, with the requested attributes.
func (s *Server) nodeValue(n *node, tx *masterTx, attrs []string, depth int) any {
	var v any
	switch {
	case isComposite(n.typ) || n.typ == "account" || n.typ == "user" || n.typ == "group" || n.typ == "tablet_cell_bundle":
		m := map[string]any{}
		if depth < 64 {
			keys, kids := s.tree.childrenOf(n, tx)
			for _, k := range keys {
				if c := s.tree.nodes[kids[k]]; c != nil {
					m[k] = s.nodeValue(c, tx, attrs, depth+1)
				}
			}
		}
		v = m
	case n.typ == "document" || strings.HasSuffix(n.typ, "_node") || n.typ == "list_node":
		v = s.tree.contentOf(n, tx).value
	default:
		v = nil
	}
	if len(attrs) > 0 {
		a := s.allAttrs(n, tx, attrs)
		if len(a) > 0 {
			return &yson.ValueWithAttrs{Attrs: a, Value: v}
		}
	}
	return v
}

func (c *call) attrFilter() ([]string, error) {
	v, ok := c.param("attributes")
	if !ok {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, badParam("attributes", "list of strings", v)
	}
	out := []string{}
	for _, e := range list {
		s, ok := yson.ValueOf(e).(string)
		if !ok {
			return nil, badParam("attributes", "list of strings", v)
		}
		out = append(out, s)
	}
	return out, nil
}
