package ytlocal

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"go.ytsaurus.tech/library/go/core/log"
	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yterrors"

	"github.com/ytflow/yt-flow/ytlocal/tablet"
	"github.com/ytflow/yt-flow/ytql"
)

// dynLogName names the dynamic-table records in the write-ahead log. Never change it.
const dynLogName = "dyn"

// dynExt plugs the dynamic-table engine (package tablet) into the server: it keeps an
// engine table for every dynamic Cypress table, owns tablet transactions, computes
// tablet attributes and journals engine records through the server's log.
type dynExt struct {
	s   *Server
	eng *tablet.Engine
	// enc is the buffer records are encoded in, reused (Append runs under the state lock
	// and logRecord does not keep what it is given).
	enc []byte
}

var (
	_ Extension          = (*dynExt)(nil)
	_ NodeObserver       = (*dynExt)(nil)
	_ AttributeProvider  = (*dynExt)(nil)
	_ TabletTxManager    = (*dynExt)(nil)
	_ Expirer            = (*dynExt)(nil)
	_ TableMounter       = (*dynExt)(nil)
	_ DynamicTableReader = (*dynExt)(nil)
)

func init() {
	registerExtension(dynLogName, func(s *Server) (Extension, error) {
		d := &dynExt{s: s}
		d.eng = tablet.New(tablet.Config{
			Oracle:  s.Timestamps(),
			Clock:   s.now,
			Compile: compileExpression,
			Journal: d,

			VersionRetention: s.cfg.VersionRetention,
		})
		return d, nil
	})
}

// dyn returns the server's dynamic-table extension.
func (s *Server) dyn() *dynExt {
	d, _ := s.extension(dynLogName).(*dynExt)
	return d
}

func compileExpression(text string) (tablet.Evaluator, error) {
	e, err := ytql.ParseExpression(text)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Append implements tablet.Journal: engine records go to the server's log (nothing
// to do for a memory-only server).
func (d *dynExt) Append(rec *tablet.Record) error {
	if d.s.wal == nil {
		return nil
	}
	// Commits, the records of every write, take the fast encoder; the rest the SDK's.
	b, ok := tablet.AppendCommitRecord(d.enc[:0], rec)
	if !ok {
		buf := bytes.NewBuffer(d.enc[:0])
		w := yson.NewWriterFormat(buf, yson.FormatBinary)
		if err := yson.NewEncoderWriter(w).Encode(rec); err != nil {
			return fmt.Errorf("encode %s record: %w", rec.Kind, err)
		}
		b = buf.Bytes()
	}
	err := d.s.logRecord(dynLogName, b)
	if cap(b) <= maxScratch {
		d.enc = b
	} else {
		d.enc = nil
	}
	return err
}

// CaptureSnapshot copies the engine's state now and encodes it when called.
func (d *dynExt) CaptureSnapshot() func(w io.Writer) error {
	encode := d.eng.CaptureSnapshot()
	return func(w io.Writer) error {
		data, err := encode()
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
}

func (d *dynExt) Snapshot(w io.Writer) error {
	data, err := d.eng.Snapshot()
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

func (d *dynExt) Restore(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	return d.eng.Restore(data)
}

func (d *dynExt) Apply(raw []byte) error {
	var rec tablet.Record
	if err := yson.Unmarshal(raw, &rec); err != nil {
		return fmt.Errorf("decode dynamic-table record: %w", err)
	}
	return d.eng.Apply(&rec)
}

func (d *dynExt) Close() error { return nil }

// NodeCommitted creates an engine table when a dynamic table (or a queue consumer or
// producer) appears in Cypress or a table becomes dynamic, and drops it when the node
// is removed. During log replay the engine's own records rebuild the tables, so
// events are ignored.
func (d *dynExt) NodeCommitted(ev NodeEvent) {
	if ev.Replay || ev.Type != "table" {
		return
	}
	id := ev.ID.String()
	switch ev.Kind {
	case NodeRemoved:
		if err := d.eng.RemoveTable(id); err != nil {
			d.s.log.Error("dynamic table removal failed", log.String("node_id", id), log.Error(err))
		}
	case NodeCreated, NodeAttrsChanged:
		if err := d.ensureTable(ev.ID); err != nil {
			d.s.log.Error("dynamic table creation failed", log.String("node_id", id), log.Error(err))
		}
		if slices.Contains(ev.Attrs, "custom_runtime_data") || slices.Contains(ev.Attrs, "row_merger_type") {
			d.mergeWatermark(ev.ID)
		}
	}
}

// mergeWatermark applies the watermark row merger to a sorted dynamic table whose
// @row_merger_type is "watermark": the rows whose column named in
// @custom_runtime_data/watermark/column_name is below its watermark are dropped, as YT's
// compaction drops them (here at once). Other tables are left alone.
func (d *dynExt) mergeWatermark(id guid.GUID) {
	info, ok := d.s.NodeByID(id)
	if !ok || !d.eng.HasTable(id.String()) {
		return
	}
	if t, _ := info.Attrs["row_merger_type"].(string); t != "watermark" {
		return
	}
	data, _ := info.Attrs["custom_runtime_data"].(map[string]any)
	wm, _ := data["watermark"].(map[string]any)
	column, _ := wm["column_name"].(string)
	var value uint64
	switch v := wm["watermark"].(type) {
	case uint64:
		value = v
	case int64:
		if v > 0 {
			value = uint64(v)
		}
	}
	if column == "" {
		return
	}
	// Watermark 0 drops nothing, but from then on the engine keeps the table's rows ordered
	// by the column: later merges cost the rows they drop, where the first one pays for the
	// whole table.
	n, err := d.eng.MergeWatermark(id.String(), column, value)
	if err != nil {
		d.s.log.Warn("watermark row merge failed", log.String("path", info.Path), log.Error(err))
		return
	}
	d.s.log.Debug("watermark row merge", log.String("path", info.Path), log.String("column", column), log.UInt64("watermark", value), log.Int("rows_dropped", n))
}

// ensureTable registers node id with the engine if it is a dynamic table that the
// engine does not know yet.
func (d *dynExt) ensureTable(id guid.GUID) error {
	if d.eng.HasTable(id.String()) {
		return nil
	}
	info, ok := d.s.NodeByID(id)
	if !ok || info.Type != "table" || !info.Dynamic() {
		return nil
	}
	sc, err := info.Schema()
	if err != nil {
		return fmt.Errorf("schema of dynamic table %s: %w", info.Path, err)
	}
	if err := d.eng.CreateTable(id.String(), info.Path, sc, tablet.StateUnmounted); err != nil {
		return err
	}
	// tablet_count or pivot_keys given at creation shape the new table's tablets, as on
	// YTsaurus (validated by prepareNodeAttrs before the node was created).
	count, pivots := creationTablets(info.Attrs)
	if count == 0 && len(pivots) == 0 {
		return nil
	}
	return d.eng.Reshard(id.String(), count, pivots)
}

// creationTablets reads the tablet_count and pivot_keys creation attributes of a dynamic
// table (0 and nil when absent).
func creationTablets(attrs map[string]any) (int, [][]any) {
	var count int
	switch v := yson.ValueOf(attrs["tablet_count"]).(type) {
	case int64:
		count = int(v)
	case uint64:
		count = int(v)
	}
	var pivots [][]any
	list, _ := yson.ValueOf(attrs["pivot_keys"]).([]any)
	for _, item := range list {
		key, _ := yson.ValueOf(item).([]any)
		pivots = append(pivots, key)
	}
	return count, pivots
}

// MountCreatedTable mounts a queue consumer or producer table right after creation.
func (d *dynExt) MountCreatedTable(id guid.GUID) error {
	if err := d.ensureTable(id); err != nil {
		return err
	}
	return d.eng.SetState(id.String(), tablet.StateMounted)
}

// ReadDynamicTable serves read_table of a dynamic table: its latest rows, in key
// order for sorted tables and by ($tablet_index, $row_index) for ordered ones.
func (d *dynExt) ReadDynamicTable(id guid.GUID) ([]any, bool) {
	var rows []any
	err := d.eng.Scan(id.String(), tablet.ReadOptions{}, func(r map[string]any) bool {
		row := maps.Clone(r)
		delete(row, "$tablet_index")
		delete(row, "$row_index")
		rows = append(rows, row)
		return true
	})
	if err != nil {
		return nil, false
	}
	return rows, true
}

var dynAttrNames = []string{"row_count", "tablet_state", "expected_tablet_state", "tablet_count", "tablets", "pivot_keys"}

// NodeAttribute reports tablet attributes of dynamic tables; sorted dynamic tables
// always have unique keys.
func (d *dynExt) NodeAttribute(id guid.GUID, typ, name string) (any, bool) {
	if typ != "table" {
		return nil, false
	}
	tid := id.String()
	if !d.eng.HasTable(tid) {
		return nil, false
	}
	switch name {
	case "row_count":
		n, err := d.eng.RowCount(tid)
		return n, err == nil
	case "tablet_state", "expected_tablet_state":
		st, err := d.eng.TabletState(tid)
		return string(st), err == nil
	case "tablet_count":
		tablets, err := d.eng.Tablets(tid)
		return int64(len(tablets)), err == nil
	case "pivot_keys":
		// Of sorted tables only; it hides the creation attribute of the same name.
		sc, err := d.eng.Schema(tid)
		if err != nil || len(sc.KeyColumns()) == 0 {
			return nil, false
		}
		tablets, err := d.eng.Tablets(tid)
		if err != nil {
			return nil, false
		}
		out := make([]any, len(tablets))
		for i, t := range tablets {
			out[i] = t.PivotKey
			if t.PivotKey == nil {
				out[i] = []any{}
			}
		}
		return out, true
	case "tablets":
		tablets, err := d.eng.Tablets(tid)
		if err != nil {
			return nil, false
		}
		out := make([]any, len(tablets))
		for i, t := range tablets {
			m := map[string]any{
				"index":             int64(t.Index),
				"tablet_id":         fmt.Sprintf("%s-%d", tid, t.Index),
				"state":             string(t.State),
				"cell_id":           "1-1-2bc-1",
				"trimmed_row_count": t.TrimmedRowCount,
				"flushed_row_count": t.RowCount,
				"total_row_count":   t.RowCount,
			}
			if t.PivotKey != nil {
				m["pivot_key"] = t.PivotKey
			}
			out[i] = m
		}
		return out, true
	}
	return nil, false
}

func (d *dynExt) NodeAttributeNames(id guid.GUID, typ string) []string {
	if typ != "table" || !d.eng.HasTable(id.String()) {
		return nil
	}
	return dynAttrNames
}

// StartTx starts a sticky tablet transaction.
func (d *dynExt) StartTx(c *call, newID func(start uint64) guid.GUID, timeout time.Duration) (guid.GUID, error) {
	var id guid.GUID
	if _, _, err := d.eng.StartTxWithID(func(start tablet.Timestamp) string {
		id = newID(uint64(start))
		return id.String()
	}, timeout); err != nil {
		return guid.GUID{}, err
	}
	d.s.kickTimers()
	return id, nil
}

func (d *dynExt) PingTx(c *call, id guid.GUID) (any, error) {
	return nil, stickyErr(id, d.eng.Ping(id.String()))
}

// CommitTx commits a tablet transaction. Its prerequisite transactions are checked
// again inside the engine commit, under the state lock that master commits, aborts and
// expiries take, so a tablet commit can never land after its prerequisite ended.
//
// Invariant: a tablet commit with a prerequisite that has ended fails with 1000 and
// writes nothing (TestDynPrerequisiteFencing).
func (d *dynExt) CommitTx(c *call, id guid.GUID) (any, error) {
	prereqs, err := c.guids("prerequisite_transaction_ids")
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(prereqs))
	for i, p := range prereqs {
		ids[i] = p.String()
	}
	_, err = d.eng.Commit(id.String(), ids, d)
	return nil, stickyErr(id, err)
}

func (d *dynExt) AbortTx(c *call, id guid.GUID) (any, error) {
	return nil, stickyErr(id, d.eng.Abort(id.String()))
}

// WhileAlive implements tablet.Prerequisites. It runs under the server state lock.
func (d *dynExt) WhileAlive(ids []string, commit func() error) error {
	gs := make([]guid.GUID, len(ids))
	for i, s := range ids {
		g, err := guid.ParseString(s)
		if err != nil {
			return ytErr(yterrors.CodePrerequisiteCheckFailed, "Prerequisite check failed: invalid transaction id %q", s)
		}
		gs[i] = g
	}
	if err := d.s.checkPrerequisites(gs); err != nil {
		return err
	}
	return commit()
}

func (d *dynExt) NextDeadline() (time.Time, bool) { return d.eng.NextExpiry() }

func (d *dynExt) Expire(now time.Time) {
	for _, id := range d.eng.Expire(now) {
		d.s.log.Debug("tablet transaction expired", log.String("transaction_id", id))
	}
}

// stickyErr rewrites the engine's 11000 into the proxy's wording for sticky transactions.
func stickyErr(id guid.GUID, err error) error {
	if err == nil {
		return nil
	}
	if yterrors.ContainsErrorCode(err, yterrors.CodeNoSuchTransaction) {
		return withAttrs(ytErr(yterrors.CodeNoSuchTransaction,
			"Sticky transaction %s is not found, it may have expired or been committed or aborted", id), "transaction_id", id.String())
	}
	return err
}

// rowValues is one output row with columns in a fixed order.
type rowValues struct {
	cols []string
	vals []any
}

func (r rowValues) MarshalYSON(w *yson.Writer) error {
	w.BeginMap()
	for i, c := range r.cols {
		w.MapKeyString(c)
		w.Any(r.vals[i])
	}
	w.EndMap()
	return w.Err()
}

// rowsOf converts an engine row set into a response (a nil row is written as #).
func rowsOf(rs *tablet.RowSet) *rowsResult {
	out := &rowsResult{Rows: make([]any, len(rs.Rows))}
	for i, r := range rs.Rows {
		if r == nil {
			out.Rows[i] = nil
			continue
		}
		out.Rows[i] = rowValues{cols: rs.Columns, vals: r}
	}
	return out
}
