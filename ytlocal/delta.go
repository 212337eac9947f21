package ytlocal

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/yson"
)

// nodeDelta is one committed change of one node, as logged and as replayed.
type nodeDelta struct {
	ID         guid.GUID         `yson:"id"`
	Type       string            `yson:"type"`
	Parent     guid.GUID         `yson:"parent"`
	Key        string            `yson:"key"`
	Created    int64             `yson:"created"` // unix microseconds
	Attrs      map[string]any    `yson:"attrs,omitempty"`
	DelAttrs   []string          `yson:"del_attrs,omitempty"`
	Children   map[string]string `yson:"children,omitempty"` // "" = removed
	HasContent bool              `yson:"has_content,omitempty"`
	Append     bool              `yson:"append,omitempty"`
	Rows       []any             `yson:"rows,omitempty"`
	Data       []byte            `yson:"data,omitempty"`
	Value      any               `yson:"value,omitempty"`
	Revision   uint64            `yson:"revision"`
	Modified   int64             `yson:"modified"`
}

type cypressRecord struct {
	Deltas   []nodeDelta `yson:"deltas"`
	Revision uint64      `yson:"revision"`
}

type cypressSnapshot struct {
	Nodes    []nodeDelta `yson:"nodes"`
	Revision uint64      `yson:"revision"`
	IDs      uint32      `yson:"ids"`
}

func (t *tree) deltaOf(n *node, b *version) nodeDelta {
	d := nodeDelta{ID: n.id, Type: n.typ, Parent: n.parent, Key: n.key, Created: n.created.UnixMicro(),
		Revision: b.revision, Modified: b.modified.UnixMicro()}
	for k, v := range b.attrs {
		if _, del := v.(deletedMark); del {
			d.DelAttrs = append(d.DelAttrs, k)
			continue
		}
		if d.Attrs == nil {
			d.Attrs = map[string]any{}
		}
		d.Attrs[k] = v
	}
	slices.Sort(d.DelAttrs)
	for k, id := range b.children {
		if d.Children == nil {
			d.Children = map[string]string{}
		}
		if zeroGUID(id) {
			d.Children[k] = ""
		} else {
			d.Children[k] = id.String()
		}
	}
	switch {
	case b.content != nil:
		d.HasContent = true
		d.Rows = b.content.rows
		d.Data = b.content.data
		d.Value = b.content.value
	case len(b.appended) > 0:
		d.HasContent = true
		d.Append = true
		d.Rows = b.appended
	}
	return d
}

// fullDelta describes the whole trunk version of n (for snapshots).
func (t *tree) fullDelta(n *node) nodeDelta {
	b := *n.trunk
	b.appended = nil
	if b.content == nil {
		b.content = &content{}
	}
	return t.deltaOf(n, &b)
}

// applyDelta changes the trunk and returns the events to report and the ids of nodes
// detached from the tree.
func (t *tree) applyDelta(d nodeDelta) (events []NodeEvent, detached []guid.GUID) {
	n := t.nodes[d.ID]
	if n == nil {
		n = &node{id: d.ID, typ: d.Type, parent: d.Parent, key: d.Key, created: time.UnixMicro(d.Created), branches: map[guid.GUID]*version{}}
		t.nodes[d.ID] = n
	}
	if n.trunk == nil {
		n.trunk = newVersion()
		events = append(events, NodeEvent{Kind: NodeCreated, ID: n.id, Type: n.typ})
	}
	v := n.trunk
	var changed []string
	for k, val := range d.Attrs {
		v.attrs[k] = val
		changed = append(changed, k)
	}
	for _, k := range d.DelAttrs {
		delete(v.attrs, k)
		changed = append(changed, k)
	}
	if len(changed) > 0 {
		slices.Sort(changed)
		events = append(events, NodeEvent{Kind: NodeAttrsChanged, ID: n.id, Type: n.typ, Attrs: changed})
	}
	for k, s := range d.Children {
		if old, ok := v.children[k]; ok {
			if s == old.String() {
				continue
			}
			detached = append(detached, old)
			delete(v.children, k)
		}
		if s != "" {
			id, err := guid.ParseString(s)
			if err == nil {
				v.children[k] = id
			}
		}
	}
	if d.HasContent {
		if d.Append && v.content != nil {
			// Only the trunk appends in place to its row array; everyone else holding it
			// (snapshot branches, responses being encoded) sees a shorter prefix.
			v.content = &content{rows: append(v.content.rows, d.Rows...), data: v.content.data, value: v.content.value}
		} else {
			v.content = &content{rows: d.Rows, data: d.Data, value: d.Value}
		}
		events = append(events, NodeEvent{Kind: NodeContentChanged, ID: n.id, Type: n.typ})
	}
	v.revision = d.Revision
	v.modified = time.UnixMicro(d.Modified)
	if d.Revision > t.revision {
		t.revision = d.Revision
	}
	return events, detached
}

// commitTrunk logs and applies deltas as one atomic committed mutation.
func (t *tree) commitTrunk(deltas []nodeDelta) error {
	if len(deltas) == 0 {
		return nil
	}
	rec := cypressRecord{Deltas: deltas, Revision: t.revision}
	if t.s.wal != nil {
		raw, err := yson.MarshalFormat(&rec, yson.FormatBinary)
		if err != nil {
			return fmt.Errorf("ytlocal: encode Cypress mutation: %w", err)
		}
		if err := t.s.logRecord(cypressLogName, raw); err != nil {
			return err
		}
	}
	t.applyRecord(&rec, false)
	return nil
}

func (t *tree) applyRecord(rec *cypressRecord, replay bool) {
	var events []NodeEvent
	var detached []guid.GUID
	for _, d := range rec.Deltas {
		ev, det := t.applyDelta(d)
		events = append(events, ev...)
		detached = append(detached, det...)
	}
	if rec.Revision > t.revision {
		t.revision = rec.Revision
	}
	for _, id := range detached {
		events = append(events, t.removedEvents(id)...)
	}
	for i := range events {
		events[i].Replay = replay
	}
	t.s.notifyNodes(events)
	for _, id := range detached {
		t.collect(id)
	}
}

// removedEvents lists NodeRemoved events for the trunk subtree rooted at id.
func (t *tree) removedEvents(id guid.GUID) []NodeEvent {
	n := t.nodes[id]
	if n == nil || n.trunk == nil {
		return nil
	}
	evs := []NodeEvent{{Kind: NodeRemoved, ID: n.id, Type: n.typ}}
	for _, c := range n.trunk.children {
		evs = append(evs, t.removedEvents(c)...)
	}
	return evs
}

// Apply replays one logged Cypress mutation (Persistent).
func (t *tree) Apply(raw []byte) error {
	var rec cypressRecord
	if err := yson.Unmarshal(raw, &rec); err != nil {
		return fmt.Errorf("decode Cypress record: %w", err)
	}
	t.applyRecord(&rec, true)
	return nil
}

// Snapshot writes every committed node reachable from the root (Persistent).
func (t *tree) Snapshot(w io.Writer) error {
	snap := cypressSnapshot{Revision: t.revision, IDs: t.s.idCounter}
	queue := []*node{t.root}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if n.trunk == nil {
			continue
		}
		snap.Nodes = append(snap.Nodes, t.fullDelta(n))
		keys := slices.Sorted(maps.Keys(n.trunk.children))
		for _, k := range keys {
			if c := t.nodes[n.trunk.children[k]]; c != nil {
				queue = append(queue, c)
			}
		}
	}
	raw, err := yson.MarshalFormat(&snap, yson.FormatBinary)
	if err != nil {
		return err
	}
	_, err = w.Write(raw)
	return err
}

// Restore replaces the tree by a snapshot (Persistent).
func (t *tree) Restore(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	var snap cypressSnapshot
	if err := yson.Unmarshal(raw, &snap); err != nil {
		return fmt.Errorf("decode Cypress snapshot: %w", err)
	}
	t.nodes = map[guid.GUID]*node{}
	t.root = nil
	for _, d := range snap.Nodes {
		t.applyDelta(d)
		if zeroGUID(d.Parent) && t.root == nil {
			t.root = t.nodes[d.ID]
		}
	}
	if t.root == nil {
		return fmt.Errorf("Cypress snapshot has no root")
	}
	t.revision = snap.Revision
	if snap.IDs > t.s.idCounter {
		t.s.idCounter = snap.IDs
	}
	return nil
}
