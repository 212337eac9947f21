package tablet

import (
	"fmt"
	"sync"
	"time"

	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/yterrors"

	"github.com/ytflow/yt-flow/ytlocal/ts"
)

// Journal makes records durable. Append is called with the engine lock held,
// before the change becomes visible; an error cancels the change.
type Journal interface {
	Append(rec *Record) error
}

// Prerequisites fences tablet commits on master transactions.
type Prerequisites interface {
	// WhileAlive calls commit only if every listed master transaction is active,
	// and keeps them from committing, aborting or expiring until commit returns.
	// Otherwise it returns an error with code 1000 (PrerequisiteCheckFailed)
	// without calling commit.
	WhileAlive(ids []string, commit func() error) error
}

// Config configures an Engine. The zero value is usable.
type Config struct {
	// Oracle generates timestamps; default an oracle reading Clock. Share it
	// with everything else that hands out timestamps so they are totally ordered.
	Oracle *ts.Oracle
	// Clock reads wall time for transaction leases; default time.Now.
	Clock func() time.Time
	// Compile compiles computed-column expressions; nil rejects computed columns.
	Compile Compiler
	// Journal receives every record before it is applied; nil keeps no log.
	Journal Journal
	// VersionRetention is how long overwritten row versions and deleted rows stay
	// readable by timestamp (reads at older timestamps see what remained); default two
	// seconds. Everything is in memory, so this bounds what frequently updated and deleted
	// rows cost: a row rewritten every 100 ms keeps ~20 versions, and a table whose rows are
	// written once and deleted soon after (an output store) holds two seconds of them. A
	// commit never drops what an open transaction could still read or conflict with,
	// however long it has been open (TestOpenTransactionHoldsVersions).
	VersionRetention time.Duration
	// Cluster is the queue_cluster value written to consumer and producer
	// tables; default "primary".
	Cluster string
}

// DefaultVersionRetention is Config.VersionRetention's default.
const DefaultVersionRetention = 2 * time.Second

// Engine holds all dynamic tables, tablet transactions and queue state.
type Engine struct {
	mu            sync.Mutex
	cfg           Config
	oracle        *ts.Oracle
	tables        map[string]*table
	txs           map[string]*Tx
	registrations map[string]map[string]*Registration // queue id -> consumer id
	// spareOps are cleared operation slices of committed transactions, reused by the
	// calls of later ones (newOps): a call of 1 000 rows buffers ~150 KB of operations.
	spareOps [][]op
	// recWrites and recAppends are the cleared row lists of the last commit record, reused
	// by the next (commitLocked): a record is dead once journaled and applied.
	recWrites  []RowWrite
	recAppends []RowAppend
}

// New returns an empty engine.
func New(cfg Config) *Engine {
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Oracle == nil {
		cfg.Oracle = &ts.Oracle{Now: cfg.Clock}
	}
	if cfg.VersionRetention == 0 {
		cfg.VersionRetention = DefaultVersionRetention
	}
	if cfg.Cluster == "" {
		cfg.Cluster = "primary"
	}
	return &Engine{
		cfg:           cfg,
		oracle:        cfg.Oracle,
		tables:        map[string]*table{},
		txs:           map[string]*Tx{},
		registrations: map[string]map[string]*Registration{},
	}
}

// Oracle returns the engine's timestamp oracle.
func (e *Engine) Oracle() *ts.Oracle { return e.oracle }

func (e *Engine) next() Timestamp { return Timestamp(e.oracle.Next()) }

// Cluster returns the cluster name used in queue tables.
func (e *Engine) Cluster() string { return e.cfg.Cluster }

// RecordKind names what a Record changes.
type RecordKind string

const (
	RecordCreateTable        RecordKind = "create_table"
	RecordRemoveTable        RecordKind = "remove_table"
	RecordAlterTable         RecordKind = "alter_table"
	RecordRenameTable        RecordKind = "rename_table"
	RecordSetState           RecordKind = "set_state"
	RecordReshard            RecordKind = "reshard"
	RecordTrim               RecordKind = "trim"
	RecordCommit             RecordKind = "commit"
	RecordRegisterConsumer   RecordKind = "register_consumer"
	RecordUnregisterConsumer RecordKind = "unregister_consumer"
	RecordMergeWatermark     RecordKind = "merge_watermark"
)

// Record is one committed change. It marshals to YSON with the SDK's yson
// package and back without loss.
type Record struct {
	Kind            RecordKind     `yson:"kind"`
	Table           string         `yson:"table,omitempty"`
	Path            string         `yson:"path,omitempty"`
	Schema          *schema.Schema `yson:"schema,omitempty"`
	State           State          `yson:"state,omitempty"`
	TabletCount     int            `yson:"tablet_count,omitempty"`
	PivotKeys       [][]any        `yson:"pivot_keys,omitempty"`
	TabletIndex     int            `yson:"tablet_index,omitempty"`
	TrimmedRowCount int64          `yson:"trimmed_row_count,omitempty"`
	Commit          *CommitRecord  `yson:"commit,omitempty"`
	Registration    *Registration  `yson:"registration,omitempty"`
	// Column and Watermark: a merge_watermark record drops the rows whose Column is
	// below Watermark.
	Column    string `yson:"column,omitempty"`
	Watermark uint64 `yson:"watermark,omitempty"`
}

// CommitRecord is the resolved effect of one tablet transaction.
type CommitRecord struct {
	Timestamp Timestamp   `yson:"timestamp"`
	Writes    []RowWrite  `yson:"writes,omitempty"`
	Locks     []RowLock   `yson:"locks,omitempty"`
	Appends   []RowAppend `yson:"appends,omitempty"`
}

// RowWrite replaces a sorted-table row: Values holds every column in schema
// order; Delete removes the row. Groups are the lock groups written.
type RowWrite struct {
	Table  string `yson:"table"`
	Key    []any  `yson:"key"`
	Values []any  `yson:"values,omitempty"`
	Delete bool   `yson:"delete,omitempty"`
	Groups []int  `yson:"groups"`
	// enc is Key encoded, when the write comes from a live transaction (not journaled; a
	// replayed record encodes its key again).
	enc string
	// row is the table's row with key enc when the live commit found one (op.row); nil in
	// a replayed record.
	row *row
}

// RowLock records a committed shared strong (or exclusive) lock on lock
// groups of a row.
type RowLock struct {
	Table     string `yson:"table"`
	Key       []any  `yson:"key"`
	Groups    []int  `yson:"groups"`
	Exclusive bool   `yson:"exclusive,omitempty"`
}

// RowAppend appends one row (all columns in schema order) to an ordered tablet.
type RowAppend struct {
	Table  string `yson:"table"`
	Tablet int    `yson:"tablet"`
	Values []any  `yson:"values"`
}

// Registration is a queue consumer registration.
type Registration struct {
	Queue        string `yson:"queue"`
	QueuePath    string `yson:"queue_path"`
	Consumer     string `yson:"consumer"`
	ConsumerPath string `yson:"consumer_path"`
	Vital        bool   `yson:"vital"`
	Partitions   []int  `yson:"partitions,omitempty"`
}

// Apply installs a record without journaling it (write-ahead-log replay).
func (e *Engine) Apply(rec *Record) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.apply(rec)
}

// commit journals and applies a record; the caller holds e.mu and has checked
// that apply cannot fail.
func (e *Engine) commit(rec *Record) error {
	if e.cfg.Journal != nil {
		if err := e.cfg.Journal.Append(rec); err != nil {
			return fmt.Errorf("journal %s record: %w", rec.Kind, err)
		}
	}
	return e.apply(rec)
}

func (e *Engine) apply(rec *Record) error {
	switch rec.Kind {
	case RecordCreateTable:
		if rec.Schema == nil {
			return fmt.Errorf("create table %s: no schema", rec.Path)
		}
		t, err := compileTable(rec.Table, rec.Path, *rec.Schema, e.cfg.Compile)
		if err != nil {
			return yterrors.Err(yterrors.CodeGeneric, err.Error())
		}
		if rec.State != "" {
			t.state = rec.State
		}
		e.tables[rec.Table] = t
		return nil
	case RecordRemoveTable:
		delete(e.tables, rec.Table)
		delete(e.registrations, rec.Table)
		for _, regs := range e.registrations {
			delete(regs, rec.Table)
		}
		return nil
	case RecordCommit:
		return e.applyCommit(rec.Commit)
	case RecordRegisterConsumer, RecordUnregisterConsumer:
		if rec.Registration == nil {
			return fmt.Errorf("%s record without registration", rec.Kind)
		}
	}
	switch rec.Kind {
	case RecordRegisterConsumer:
		r := *rec.Registration
		regs := e.registrations[r.Queue]
		if regs == nil {
			regs = map[string]*Registration{}
			e.registrations[r.Queue] = regs
		}
		regs[r.Consumer] = &r
		return nil
	case RecordUnregisterConsumer:
		delete(e.registrations[rec.Registration.Queue], rec.Registration.Consumer)
		return nil
	}
	t, ok := e.tables[rec.Table]
	if !ok {
		return fmt.Errorf("%s: no dynamic table %s (%s)", rec.Kind, rec.Table, rec.Path)
	}
	switch rec.Kind {
	case RecordRenameTable:
		t.path = rec.Path
	case RecordAlterTable:
		if rec.Schema == nil {
			return fmt.Errorf("alter table %s: no schema", t.path)
		}
		nt, err := compileTable(t.id, t.path, *rec.Schema, e.cfg.Compile)
		if err != nil {
			return err
		}
		migrateRows(t, nt)
		e.tables[t.id] = nt
	case RecordSetState:
		t.state = rec.State
	case RecordReshard:
		if t.sorted {
			if len(rec.PivotKeys) > 0 {
				t.pivotKeys = rec.PivotKeys
			} else {
				t.pivotKeys = make([][]any, rec.TabletCount)
				for i := range t.pivotKeys {
					t.pivotKeys[i] = []any{}
				}
			}
		} else {
			n := rec.TabletCount
			if n <= 0 {
				return fmt.Errorf("reshard %s: tablet count %d", t.path, n)
			}
			for len(t.tablets) < n {
				t.tablets = append(t.tablets, &orderedTablet{})
			}
			if len(t.tablets) > n {
				last := t.tablets[n-1]
				for _, extra := range t.tablets[n:] {
					last.rows = append(last.rows, extra.rows...)
				}
				t.tablets = t.tablets[:n]
			}
		}
	case RecordMergeWatermark:
		return t.mergeWatermark(rec.Column, rec.Watermark)
	case RecordTrim:
		if rec.TabletIndex < 0 || rec.TabletIndex >= len(t.tablets) {
			return fmt.Errorf("trim %s: no tablet %d", t.path, rec.TabletIndex)
		}
		tb := t.tablets[rec.TabletIndex]
		if rec.TrimmedRowCount > tb.trimmed {
			drop := min(rec.TrimmedRowCount-tb.trimmed, int64(len(tb.rows)))
			tb.trimRows(int(drop))
			tb.trimmed = rec.TrimmedRowCount
		}
	default:
		return fmt.Errorf("unknown record kind %q", rec.Kind)
	}
	return nil
}

// migrateRows moves the data of old into nt by column name (alter_table).
func migrateRows(old, nt *table) {
	nt.state = old.state
	remap := func(values []any) []any {
		if values == nil {
			return nil
		}
		out := make([]any, len(nt.cols))
		for i, c := range nt.cols {
			if j, ok := old.byName[c.name]; ok {
				out[i] = values[j]
			}
		}
		return out
	}
	if old.sorted && nt.sorted {
		for _, r := range old.rows {
			nr := &row{
				key:     remap(r.latest())[:0],
				writeTS: make([]Timestamp, len(nt.groups)),
				readTS:  make([]Timestamp, len(nt.groups)),
			}
			for _, v := range r.versions {
				nr.versions = append(nr.versions, version{ts: v.ts, values: remap(v.values)})
			}
			nr.key = make([]any, nt.keys)
			for i := 0; i < nt.keys; i++ {
				if j, ok := old.byName[nt.cols[i].name]; ok && j < len(r.key) {
					nr.key[i] = r.key[j]
				}
			}
			nt.addRow(encodeKey(nr.key), nr)
		}
		nt.pivotKeys = old.pivotKeys
		nt.dirty = true
	}
	if !old.sorted && !nt.sorted {
		nt.tablets = old.tablets
		for _, tb := range nt.tablets {
			for i := range tb.rows {
				tb.rows[i].values = remap(tb.rows[i].values)
			}
		}
	}
}
