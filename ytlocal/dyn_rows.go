package ytlocal

import (
	"strings"

	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yterrors"

	"github.com/ytflow/yt-flow/ytlocal/tablet"
	"github.com/ytflow/yt-flow/ytql"
)

func init() {
	heavyTablet := commandOpts{Heavy: true, NoTxCheck: true}
	registerCommand("insert_rows", heavyTablet, cmdInsertRows)
	registerCommand("delete_rows", heavyTablet, cmdDeleteRows)
	registerCommand("lock_rows", heavyTablet, cmdLockRows)
	registerCommand("lookup_rows", heavyTablet, cmdLookupRows)
	registerCommand("select_rows", heavyTablet, cmdSelectRows)
}

// dynTable is a dynamic table named by a command parameter.
type dynTable struct {
	id   string // engine table id (the Cypress node id)
	path string // the path as the caller wrote it
}

// resolveDynamic resolves a path (committed state, links followed) to a dynamic table.
// The table keeps the path as the caller wrote it, without attributes and suffixes.
func (s *Server) resolveDynamic(raw string, param string) (dynTable, error) {
	info, err := s.LookupNode(raw, guid.GUID{})
	if err != nil {
		return dynTable{}, err
	}
	plain := raw
	if strings.HasPrefix(plain, "<") {
		if r, err := parseRichPath(param, raw); err == nil {
			plain = string(r.Path)
		}
	}
	if i := strings.IndexAny(plain, "[{"); i > 0 {
		plain = plain[:i]
	}
	t := dynTable{id: info.ID.String(), path: plain}
	if !s.dyn().eng.HasTable(t.id) {
		if info.Type != "table" {
			return dynTable{}, withAttrs(ytErr(yterrors.CodeGeneric, "%s is not a table", plain), "path", plain)
		}
		if info.Dynamic() {
			sc, err := info.Schema()
			if err == nil {
				err = s.dyn().eng.CheckSchema(plain, sc)
			}
			if err != nil {
				return dynTable{}, withAttrs(ytErr(yterrors.CodeGeneric, "Dynamic table %s has an unusable schema: %v", plain, err), "path", plain)
			}
		}
		return dynTable{}, withAttrs(ytErr(yterrors.CodeGeneric, "Table %s is not dynamic", plain), "path", plain)
	}
	return t, nil
}

// dynTableParam resolves the dynamic table named by parameter name.
func (c *call) dynTable(name string) (dynTable, error) {
	raw, err := c.path(name)
	if err != nil {
		return dynTable{}, err
	}
	return c.s.resolveDynamic(raw, name)
}

// tabletTx returns the tablet transaction named by transaction_id ("" if none).
func (c *call) tabletTx() (string, error) {
	id, ok, err := c.guidp("transaction_id")
	if err != nil || !ok {
		return "", err
	}
	if !IsTabletTxID(id) {
		if _, err := c.s.liveTx(id); err != nil {
			return "", err
		}
		return "", ytErr(yterrors.CodeGeneric, "Transaction %s is a master transaction; command %q needs a tablet transaction", id, c.name)
	}
	if !c.s.dyn().eng.HasTx(id.String()) {
		return "", stickyErr(id, yterrors.Err(yterrors.CodeNoSuchTransaction, "no such transaction"))
	}
	return id.String(), nil
}

// inTabletTx runs fn in the call's tablet transaction, or in an implicit one that
// is committed at once (then prerequisite_transaction_ids, already checked by the
// dispatcher under the state lock, fence that commit too).
func (c *call) inTabletTx(fn func(txID string) error) error {
	txID, err := c.tabletTx()
	if err != nil {
		return err
	}
	eng := c.s.dyn().eng
	if txID != "" {
		if err := fn(txID); err != nil {
			id, _ := guid.ParseString(txID)
			return stickyErr(id, err)
		}
		c.volatile = true // buffered in the transaction: visible only through its commit
		return nil
	}
	_, err = eng.Run(fn)
	return err
}

// inputMaps parses the request body into row maps.
func (c *call) inputMaps() ([]map[string]any, error) {
	items, err := c.inputRows()
	if err != nil {
		return nil, err
	}
	rows := make([]map[string]any, len(items))
	for i, it := range items {
		m, ok := yson.ValueOf(it).(map[string]any)
		if !ok {
			return nil, ytErr(yterrors.CodeGeneric, "Error parsing input rows of command %q: row %d is %s, not a map", c.name, i, ysonTypeName(it))
		}
		rows[i] = m
	}
	return rows, nil
}

func cmdInsertRows(c *call) (any, error) {
	t, err := c.dynTable("path")
	if err != nil {
		return nil, err
	}
	var opts tablet.InsertOptions
	if opts.Update, err = c.boolean("update", false); err != nil {
		return nil, err
	}
	if opts.Aggregate, err = c.boolean("aggregate", false); err != nil {
		return nil, err
	}
	rows, err := c.inputMaps()
	if err != nil {
		return nil, err
	}
	return nil, c.inTabletTx(func(tx string) error { return c.s.dyn().eng.Insert(tx, t.id, rows, opts) })
}

func cmdDeleteRows(c *call) (any, error) {
	t, err := c.dynTable("path")
	if err != nil {
		return nil, err
	}
	keys, err := c.inputMaps()
	if err != nil {
		return nil, err
	}
	return nil, c.inTabletTx(func(tx string) error { return c.s.dyn().eng.Delete(tx, t.id, keys) })
}

func cmdLockRows(c *call) (any, error) {
	t, err := c.dynTable("path")
	if err != nil {
		return nil, err
	}
	var locks []string
	if _, err := c.decode("locks", &locks); err != nil {
		return nil, err
	}
	lockType, err := c.str("lock_type", string(tablet.LockSharedStrong))
	if err != nil {
		return nil, err
	}
	switch tablet.LockType(lockType) {
	case tablet.LockNone, tablet.LockSharedWeak, tablet.LockSharedStrong, tablet.LockExclusive:
	default:
		return nil, ytErr(yterrors.CodeGeneric, "Error parsing parameter \"lock_type\": unknown lock type %q", lockType)
	}
	keys, err := c.inputMaps()
	if err != nil {
		return nil, err
	}
	return nil, c.inTabletTx(func(tx string) error {
		return c.s.dyn().eng.LockRows(tx, t.id, keys, locks, tablet.LockType(lockType))
	})
}

// readOptions reads timestamp and transaction_id of a read command.
func (c *call) readOptions() (tablet.ReadOptions, error) {
	var o tablet.ReadOptions
	ts, err := c.uint64p("timestamp", 0)
	if err != nil {
		return o, err
	}
	o.Timestamp = tablet.Timestamp(ts)
	if o.Tx, err = c.tabletTx(); err != nil {
		return o, err
	}
	return o, nil
}

func cmdLookupRows(c *call) (any, error) {
	t, err := c.dynTable("path")
	if err != nil {
		return nil, err
	}
	var o tablet.LookupOptions
	if o.ReadOptions, err = c.readOptions(); err != nil {
		return nil, err
	}
	if o.KeepMissingRows, err = c.boolean("keep_missing_rows", false); err != nil {
		return nil, err
	}
	if _, err := c.decode("column_names", &o.Columns); err != nil {
		return nil, err
	}
	keys, err := c.inputMaps()
	if err != nil {
		return nil, err
	}
	rs, err := c.s.dyn().eng.Lookup(t.id, keys, o)
	if err != nil {
		return nil, err
	}
	return rowsOf(rs), nil
}

func cmdSelectRows(c *call) (any, error) {
	text, err := c.requiredStr("query")
	if err != nil {
		return nil, err
	}
	q, err := ytql.ParseQuery(text)
	if err != nil {
		return nil, withAttrs(ytErr(yterrors.CodeGeneric, "Error parsing query %q: %v", text, err), "query", text)
	}
	t, err := c.s.resolveDynamic(q.Table(), "query")
	if err != nil {
		return nil, err
	}
	eng := c.s.dyn().eng
	sc, err := eng.Schema(t.id)
	if err != nil {
		return nil, err
	}
	if err := q.CheckSchema(sc); err != nil {
		return nil, withAttrs(ytErr(yterrors.CodeGeneric, "Error preparing query %q: %v", text, err), "query", text)
	}
	o, err := c.readOptions()
	if err != nil {
		return nil, err
	}
	var placeholders map[string]any
	if v, ok := c.param("placeholder_values"); ok {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, badParam("placeholder_values", "map", v)
		}
		placeholders = m
	}
	ranges := keyRanges(q, sc.KeyColumns(), placeholders)
	var scanErr error
	rows, err := q.Execute(placeholders, func(yield func(row map[string]any) bool) {
		if ranges != nil {
			scanErr = eng.ScanRanges(t.id, o, ranges, yield)
			return
		}
		scanErr = eng.Scan(t.id, o, yield)
	})
	if scanErr != nil {
		return nil, scanErr
	}
	if err != nil {
		return nil, withAttrs(ytErr(yterrors.CodeGeneric, "Error executing query %q: %v", text, err), "query", text)
	}
	cols := q.ResultColumns()
	if cols == nil {
		if cols, err = eng.Columns(t.id); err != nil {
			return nil, err
		}
	}
	out := &rowsResult{Rows: make([]any, len(rows))}
	for i, r := range rows {
		vals := make([]any, len(cols))
		for j, col := range cols {
			vals[j] = r[col]
		}
		out.Rows[i] = rowValues{cols: cols, vals: vals}
	}
	return out, nil
}
