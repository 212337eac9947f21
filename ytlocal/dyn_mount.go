package ytlocal

import (
	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yterrors"

	"github.com/ytflow/yt-flow/ytlocal/tablet"
)

func init() {
	mutating := commandOpts{Mutating: true}
	registerCommand("mount_table", mutating, cmdMountTable)
	registerCommand("unmount_table", mutating, cmdSetTabletState(tablet.StateUnmounted))
	registerCommand("remount_table", mutating, cmdRemountTable)
	registerCommand("freeze_table", mutating, cmdSetTabletState(tablet.StateFrozen))
	registerCommand("unfreeze_table", mutating, cmdUnfreezeTable)
	registerCommand("reshard_table", mutating, cmdReshardTable)
	registerCommand("alter_table", mutating, cmdAlterTable)
	registerCommand("trim_rows", commandOpts{Mutating: true, Heavy: true}, cmdTrimRows)
}

// Mount-family commands switch state at once: a poll of @tablet_state right after
// the command sees the final state, as migrate.MountAndWait expects.
func cmdMountTable(c *call) (any, error) {
	t, err := c.dynTable("path")
	if err != nil {
		return nil, err
	}
	freeze, err := c.boolean("freeze", false)
	if err != nil {
		return nil, err
	}
	eng := c.s.dyn().eng
	st, err := eng.TabletState(t.id)
	if err != nil {
		return nil, err
	}
	if st == tablet.StateUnmounted {
		if err := eng.SetState(t.id, tablet.StateMounted); err != nil {
			return nil, err
		}
	}
	if freeze {
		return nil, eng.SetState(t.id, tablet.StateFrozen)
	}
	return nil, nil
}

func cmdSetTabletState(state tablet.State) handlerFunc {
	return func(c *call) (any, error) {
		t, err := c.dynTable("path")
		if err != nil {
			return nil, err
		}
		return nil, c.s.dyn().eng.SetState(t.id, state)
	}
}

func cmdRemountTable(c *call) (any, error) {
	_, err := c.dynTable("path")
	return nil, err
}

func cmdUnfreezeTable(c *call) (any, error) {
	t, err := c.dynTable("path")
	if err != nil {
		return nil, err
	}
	eng := c.s.dyn().eng
	st, err := eng.TabletState(t.id)
	if err != nil {
		return nil, err
	}
	switch st {
	case tablet.StateFrozen:
		return nil, eng.SetState(t.id, tablet.StateMounted)
	case tablet.StateUnmounted:
		return nil, withAttrs(ytErr(yterrors.CodeInvalidTabletState, "Cannot unfreeze table %s: it is not mounted", t.path), "path", t.path)
	}
	return nil, nil
}

func cmdReshardTable(c *call) (any, error) {
	t, err := c.dynTable("path")
	if err != nil {
		return nil, err
	}
	count, err := c.int64p("tablet_count", 0)
	if err != nil {
		return nil, err
	}
	var pivots [][]any
	if v, ok := c.param("pivot_keys"); ok {
		list, ok := v.([]any)
		if !ok {
			return nil, badParam("pivot_keys", "list of keys", v)
		}
		for i, item := range list {
			key, ok := yson.ValueOf(item).([]any)
			if !ok {
				return nil, ytErr(yterrors.CodeGeneric, "Error parsing parameter \"pivot_keys\": pivot key %d is %s, not a list", i, ysonTypeName(item))
			}
			pivots = append(pivots, key)
		}
	}
	return nil, c.s.dyn().eng.Reshard(t.id, int(count), pivots)
}

func cmdTrimRows(c *call) (any, error) {
	t, err := c.dynTable("path")
	if err != nil {
		return nil, err
	}
	idx, err := c.int64p("tablet_index", -1)
	if err != nil {
		return nil, err
	}
	count, err := c.int64p("trimmed_row_count", -1)
	if err != nil {
		return nil, err
	}
	if idx < 0 || count < 0 {
		return nil, ytErr(yterrors.CodeGeneric, "Command trim_rows needs parameters \"tablet_index\" and \"trimmed_row_count\"")
	}
	return nil, c.s.dyn().eng.Trim(t.id, int(idx), count)
}

// cmdAlterTable changes the schema of a dynamic table (unmounted) or makes a static
// table dynamic; the node's schema and dynamic attributes change in Cypress as well.
// Static-to-static schema changes are applied to the node alone.
func cmdAlterTable(c *call) (any, error) {
	raw, err := c.path("path")
	if err != nil {
		return nil, err
	}
	info, err := c.s.LookupNode(raw, guid.GUID{})
	if err != nil {
		return nil, err
	}
	if info.Type != "table" {
		return nil, withAttrs(ytErr(yterrors.CodeGeneric, "%s is not a table", raw), "path", raw)
	}
	id := info.ID.String()
	eng := c.s.dyn().eng
	wasDynamic := eng.HasTable(id)
	dynamic, err := c.boolean("dynamic", wasDynamic)
	if err != nil {
		return nil, err
	}
	sc, err := info.Schema()
	if err != nil {
		return nil, err
	}
	attrs := map[string]any{}
	if v, ok := c.params["schema"]; ok && v != nil {
		attrs["schema"] = v
		if sc, err = parseSchemaValue(v); err != nil {
			return nil, ytErr(yterrors.CodeGeneric, "Error parsing parameter \"schema\": %v", err)
		}
	}
	switch {
	case wasDynamic && !dynamic:
		return nil, withAttrs(ytErr(yterrors.CodeGeneric, "Cannot make dynamic table %s static", raw), "path", raw)
	case wasDynamic:
		if _, ok := attrs["schema"]; ok {
			if err := eng.AlterTable(id, sc); err != nil {
				return nil, err
			}
		}
	case dynamic:
		if err := eng.CheckSchema(raw, sc); err != nil {
			return nil, err
		}
		attrs["dynamic"] = true
	}
	if len(attrs) == 0 {
		return nil, nil
	}
	if err := c.s.SetNodeAttrs(info.ID, attrs); err != nil {
		return nil, err
	}
	if err := c.s.dyn().ensureTable(info.ID); err != nil {
		return nil, err
	}
	if wasDynamic {
		return nil, nil
	}
	// The rows of the static table become the dynamic table's content.
	var rows []map[string]any
	if n := c.s.tree.nodes[info.ID]; n != nil {
		for _, r := range c.s.tree.contentOf(n, nil).rows {
			if m, ok := yson.ValueOf(r).(map[string]any); ok {
				rows = append(rows, m)
			}
		}
	}
	if len(rows) == 0 {
		return nil, nil
	}
	return nil, eng.Load(id, rows)
}
