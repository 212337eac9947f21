package ytlocal

import (
	"maps"

	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/yterrors"
)

// NodeInfo is a read-only view of one Cypress node, as extensions see it.
type NodeInfo struct {
	ID   guid.GUID
	Type string // map_node, table, file, document, link, ...
	Path string // canonical path under the transaction used to look it up
	// Attrs holds the user-visible stored attributes (schema, dynamic, user attributes);
	// a copy, safe to keep.
	Attrs map[string]any
}

// Dynamic reports the node's @dynamic attribute.
func (n NodeInfo) Dynamic() bool {
	b, _ := n.Attrs["dynamic"].(bool)
	return b
}

// Schema decodes the node's @schema attribute (empty non-strict schema when unset).
func (n NodeInfo) Schema() (schema.Schema, error) {
	v, ok := n.Attrs["schema"]
	if !ok {
		return schema.Schema{Strict: ptrBool(false)}, nil
	}
	return parseSchemaValue(v)
}

func (s *Server) info(n *node, tx *masterTx) NodeInfo {
	p, _ := s.tree.path(n, tx)
	return NodeInfo{ID: n.id, Type: n.typ, Path: p, Attrs: maps.Clone(s.tree.userAttrs(n, tx))}
}

// LookupNode resolves path (links followed) as seen by master transaction txID (zero
// GUID or a tablet transaction id: committed state). Missing path → code 500; dead
// master transaction → 11000. Call with the state lock held (inside a handler/hook).
func (s *Server) LookupNode(path string, txID guid.GUID) (NodeInfo, error) {
	p, err := parsePathParam("path", path)
	if err != nil {
		return NodeInfo{}, err
	}
	var tx *masterTx
	if !zeroGUID(txID) && !IsTabletTxID(txID) {
		if tx, err = s.liveTx(txID); err != nil {
			return NodeInfo{}, err
		}
	}
	obj, err := s.resolve(p, tx, true)
	if err != nil {
		return NodeInfo{}, err
	}
	if obj.n == nil {
		return NodeInfo{}, resolveError(path, "%s is not a Cypress node", path)
	}
	return s.info(obj.n, tx), nil
}

// NodeByID returns the committed view of node id (ok=false if it does not exist in
// the trunk). Call with the state lock held.
func (s *Server) NodeByID(id guid.GUID) (NodeInfo, bool) {
	n := s.tree.nodes[id]
	if n == nil || n.trunk == nil {
		return NodeInfo{}, false
	}
	if _, ok := s.tree.path(n, nil); !ok {
		return NodeInfo{}, false
	}
	return s.info(n, nil), true
}

// SetNodeAttrs writes stored attributes of a committed node outside any transaction
// (e.g. schema and dynamic from alter_table). The change is logged and durable before
// it returns; NodeObserver hooks fire. A "schema" value is validated and normalised.
// Call with the state lock held.
func (s *Server) SetNodeAttrs(id guid.GUID, attrs map[string]any) error {
	n := s.tree.nodes[id]
	if n == nil || n.trunk == nil {
		return ytErr(yterrors.CodeResolveError, "No such node %s", id)
	}
	now := s.now()
	tx := &masterTx{id: guid.New(), implicit: true, now: now, started: now, lastPing: now}
	if v, ok := attrs["schema"]; ok {
		dyn := dynamicOf(s, n, nil)
		if d, ok := attrs["dynamic"].(bool); ok {
			dyn = d
		}
		norm, err := normalizeSchemaAttr(v, dyn)
		if err != nil {
			return err
		}
		attrs = maps.Clone(attrs)
		attrs["schema"] = norm
	}
	if err := s.setAttrs(tx, n, attrs, true); err != nil {
		s.tree.dropBranches(tx)
		return err
	}
	return s.commitTx(tx)
}

// notifyNodes passes committed node events to observers.
func (s *Server) notifyNodes(events []NodeEvent) {
	if len(events) == 0 {
		return
	}
	for _, name := range s.extOrder {
		if o, ok := s.exts[name].(NodeObserver); ok {
			for _, ev := range events {
				o.NodeCommitted(ev)
			}
		}
	}
}
