package ytlocal

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/yson"
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

// --- commands ---

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
