package tablet

import (
	"fmt"
	"maps"
	"slices"
	"time"
	"unsafe"

	"go.ytsaurus.tech/yt/go/yterrors"
)

// Tx is a tablet transaction: reads see the snapshot at Start, writes are
// buffered and applied atomically at commit with one commit timestamp.
type Tx struct {
	id      string
	start   Timestamp
	timeout time.Duration
	expires time.Time
	// ops are the buffered operations in the order the calls gave them, one slice per call
	// (add): an epoch commits the rows of five to ten calls, and growing one slice would copy
	// every earlier call's operations again at each.
	ops  [][]op
	bulk bool // Load: no mount-state checks, no conflicts
}

// add appends the operations of one call.
func (tx *Tx) add(ops []op) {
	if len(ops) > 0 {
		tx.ops = append(tx.ops, ops)
	}
}

type opKind int

const (
	opWrite opKind = iota
	opDelete
	opLock
	opAppend
)

type op struct {
	kind      opKind
	t         *table
	key       []any
	enc       string // encodeKey(key)
	values    []any  // opWrite, opAppend: schema-wide values
	present   []bool // opWrite: which columns the row carried
	update    bool
	aggregate bool
	groups    []int // opLock
	exclusive bool  // opLock
	strong    bool  // opLock
	tablet    int   // opAppend
}

// LockType is the lock_type of lock_rows.
type LockType string

const (
	LockNone         LockType = "none"
	LockSharedWeak   LockType = "shared_weak"
	LockSharedStrong LockType = "shared_strong"
	LockExclusive    LockType = "exclusive"
)

// InsertOptions are the insert_rows flags.
type InsertOptions struct {
	Update    bool // keep columns the rows do not carry
	Aggregate bool // combine aggregate columns with the stored values
}

func noSuchTx(id string) error {
	return yterrors.Err(yterrors.CodeNoSuchTransaction,
		fmt.Sprintf("No such transaction %s", id), yterrors.Attr("transaction_id", id))
}

// StartTx starts a tablet transaction with the caller-chosen id and returns
// its start timestamp. The lease is timeout long and renewed by every call
// that names the transaction.
func (e *Engine) StartTx(id string, timeout time.Duration) (Timestamp, error) {
	_, start, err := e.StartTxWithID(func(Timestamp) string { return id }, timeout)
	return start, err
}

// StartTxWithID starts a tablet transaction whose id is made from its start timestamp
// (YTsaurus tablet transaction ids carry it: TestTabletTxIDCarriesStartTimestamp) and returns
// the id and the timestamp. Otherwise it is StartTx.
func (e *Engine) StartTxWithID(makeID func(start Timestamp) string, timeout time.Duration) (string, Timestamp, error) {
	if timeout <= 0 {
		timeout = 15 * time.Second
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	start := e.next()
	id := makeID(start)
	if _, ok := e.txs[id]; ok {
		return "", 0, yterrors.Err(yterrors.CodeGeneric, fmt.Sprintf("Transaction %s already exists", id))
	}
	tx := &Tx{id: id, start: start, timeout: timeout}
	tx.expires = e.cfg.Clock().Add(timeout)
	e.txs[id] = tx
	return id, tx.start, nil
}

// tx returns a live transaction and renews its lease; the caller holds e.mu.
func (e *Engine) tx(id string) (*Tx, error) {
	tx, ok := e.txs[id]
	now := e.cfg.Clock()
	if !ok {
		return nil, noSuchTx(id)
	}
	if now.After(tx.expires) {
		delete(e.txs, id)
		return nil, noSuchTx(id)
	}
	tx.expires = now.Add(tx.timeout)
	return tx, nil
}

// HasTx reports whether id is a live tablet transaction.
func (e *Engine) HasTx(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	tx, ok := e.txs[id]
	return ok && !e.cfg.Clock().After(tx.expires)
}

// Ping renews the lease of a tablet transaction (11000 if it is gone).
func (e *Engine) Ping(id string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, err := e.tx(id)
	return err
}

// StartTimestamp returns the snapshot timestamp of a live transaction.
func (e *Engine) StartTimestamp(id string) (Timestamp, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	tx, err := e.tx(id)
	if err != nil {
		return 0, err
	}
	return tx.start, nil
}

// Abort discards a transaction (11000 if it is gone).
func (e *Engine) Abort(id string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, err := e.tx(id); err != nil {
		return err
	}
	delete(e.txs, id)
	return nil
}

// Expire aborts the transactions whose lease ended before now and returns their ids.
func (e *Engine) Expire(now time.Time) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var ids []string
	for id, tx := range e.txs {
		if now.After(tx.expires) {
			delete(e.txs, id)
			ids = append(ids, id)
		}
	}
	return ids
}

// schemaError wraps a row problem as a 307 SchemaViolation naming the table.
func schemaError(t *table, err error) error {
	return yterrors.Err(yterrors.CodeSchemaViolation,
		fmt.Sprintf("Schema violation in table %s: %v", t.path, err), yterrors.Attr("path", t.path))
}

func notMounted(t *table) error {
	return yterrors.Err(yterrors.CodeTabletNotMounted,
		fmt.Sprintf("Table %s has no mounted tablets", t.path), yterrors.Attr("path", t.path))
}

func frozen(t *table) error {
	return yterrors.Err(yterrors.CodeInvalidTabletState,
		fmt.Sprintf("Table %s is frozen: writes are not allowed", t.path), yterrors.Attr("path", t.path))
}

func checkWritable(t *table) error {
	switch t.state {
	case StateMounted:
		return nil
	case StateFrozen:
		return frozen(t)
	}
	return notMounted(t)
}

// readableTable returns the table with the given id if it serves reads
// (mounted or frozen); otherwise a resolve or not-mounted error.
func (e *Engine) readableTable(id string) (*table, error) {
	t, err := e.table(id)
	if err != nil {
		return nil, err
	}
	if err := checkReadable(t); err != nil {
		return nil, err
	}
	return t, nil
}

func checkReadable(t *table) error {
	if t.state == StateMounted || t.state == StateFrozen {
		return nil
	}
	return notMounted(t)
}

// Insert buffers rows in a transaction. Rows are validated now; the table
// must be mounted.
func (e *Engine) Insert(txID, tableID string, rows []map[string]any, opts InsertOptions) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	tx, err := e.tx(txID)
	if err != nil {
		return err
	}
	t, err := e.table(tableID)
	if err != nil {
		return err
	}
	ops, err := e.appendInsertOps(nil, t, rows, opts)
	if err != nil {
		return err
	}
	tx.add(ops)
	return nil
}

func (e *Engine) insertOps(t *table, rows []map[string]any, opts InsertOptions) ([]op, error) {
	return e.appendInsertOps(nil, t, rows, opts)
}

// appendInsertOps validates rows and appends their ops to ops; on error the
// caller must discard the result.
func (e *Engine) appendInsertOps(ops []op, t *table, rows []map[string]any, opts InsertOptions) ([]op, error) {
	if err := checkWritable(t); err != nil {
		return nil, err
	}
	return e.appendRowOps(ops, t, rows, opts)
}

// appendRowOps is appendInsertOps without the mount-state check.
func (e *Engine) appendRowOps(ops []op, t *table, rows []map[string]any, opts InsertOptions) ([]op, error) {
	if ops == nil {
		ops = e.newOps(len(rows))
	} else {
		ops = slices.Grow(ops, len(rows))
	}
	// The values of a table merged by watermark are carved from one block per call: its
	// rows are written once and dropped in order, so the block's rows go together (see
	// table.newRow).
	var block []any
	var keys []byte
	if t.sorted && t.wmCol != 0 {
		block = make([]any, len(rows)*len(t.cols))
		keys = make([]byte, 0, 80*len(rows))
	}
	for _, m := range rows {
		if err := t.checkColumns(m); err != nil {
			return nil, schemaError(t, err)
		}
		if !t.sorted {
			o, err := e.appendOp(t, m)
			if err != nil {
				return nil, err
			}
			ops = append(ops, o)
			continue
		}
		var values []any
		if block != nil {
			values, block = block[:len(t.cols):len(t.cols)], block[len(t.cols):]
		} else {
			values = make([]any, len(t.cols))
		}
		key, err := t.keyInto(m, values)
		if err != nil {
			return nil, schemaError(t, err)
		}
		key = key[:len(key):len(key)]
		present := make([]bool, len(t.cols))
		for i := t.keys; i < len(t.cols); i++ {
			c := t.cols[i]
			v, ok := m[c.name]
			if !ok || c.system {
				if !opts.Update && c.required {
					return nil, schemaError(t, fmt.Errorf("missing required column %q", c.name))
				}
				continue
			}
			n, err := c.normalize(v)
			if err != nil {
				return nil, schemaError(t, err)
			}
			values[i] = n
			present[i] = true
		}
		var enc string
		if block != nil {
			// Encoded keys from one buffer too: the rows' map keys go together.
			// Bytes once handed out are never written again (a grown buffer is a new array).
			start := len(keys)
			keys = appendKey(keys, key)
			enc = unsafe.String(&keys[start], len(keys)-start)
		} else {
			enc = encodeKey(key)
		}
		ops = append(ops, op{kind: opWrite, t: t, key: key, enc: enc, values: values, present: present, update: opts.Update, aggregate: opts.Aggregate})
	}
	return ops, nil
}

func (e *Engine) appendOp(t *table, m map[string]any) (op, error) {
	tablet := -1
	if v, ok := m["$tablet_index"]; ok && v != nil {
		switch x := v.(type) {
		case int64:
			tablet = int(x)
		case uint64:
			tablet = int(x)
		default:
			return op{}, schemaError(t, fmt.Errorf("$tablet_index must be an integer, got %T", v))
		}
		if tablet < 0 || tablet >= len(t.tablets) {
			return op{}, yterrors.Err(yterrors.CodeGeneric,
				fmt.Sprintf("Invalid tablet index %d for table %s with %d tablets", tablet, t.path, len(t.tablets)),
				yterrors.Attr("path", t.path))
		}
	} else {
		tablet = t.next % len(t.tablets)
		t.next++
	}
	values := make([]any, len(t.cols))
	for i, c := range t.cols {
		if c.system {
			continue
		}
		n, err := c.normalize(m[c.name])
		if err != nil {
			return op{}, schemaError(t, err)
		}
		values[i] = n
	}
	return op{kind: opAppend, t: t, values: values, tablet: tablet}, nil
}

// Delete buffers key deletions in a transaction.
func (e *Engine) Delete(txID, tableID string, keys []map[string]any) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	tx, err := e.tx(txID)
	if err != nil {
		return err
	}
	t, err := e.table(tableID)
	if err != nil {
		return err
	}
	ops, err := deleteOps(t, keys)
	if err != nil {
		return err
	}
	tx.add(ops)
	return nil
}

func deleteOps(t *table, keys []map[string]any) ([]op, error) {
	if err := checkWritable(t); err != nil {
		return nil, err
	}
	if !t.sorted {
		return nil, yterrors.Err(yterrors.CodeGeneric, fmt.Sprintf("Cannot delete rows from ordered table %s", t.path))
	}
	ops := make([]op, 0, len(keys))
	for _, m := range keys {
		key, err := t.keyOf(m)
		if err != nil {
			return nil, schemaError(t, err)
		}
		ops = append(ops, op{kind: opDelete, t: t, key: key, enc: encodeKey(key)})
	}
	return ops, nil
}

// LockRows takes row locks on the named lock groups ("" or no names = the
// primary lock) in a transaction; conflicts are detected at commit.
func (e *Engine) LockRows(txID, tableID string, keys []map[string]any, locks []string, lockType LockType) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	tx, err := e.tx(txID)
	if err != nil {
		return err
	}
	t, err := e.readableTable(tableID)
	if err != nil {
		return err
	}
	if !t.sorted {
		return yterrors.Err(yterrors.CodeGeneric, fmt.Sprintf("Cannot lock rows of ordered table %s", t.path))
	}
	if lockType == "" {
		lockType = LockSharedStrong
	}
	if lockType == LockNone {
		return nil
	}
	var groups []int
	for _, name := range locks {
		g := slices.Index(t.groups, name)
		if g < 0 {
			return yterrors.Err(yterrors.CodeGeneric, fmt.Sprintf("Lock %q is not defined in schema of %s", name, t.path))
		}
		groups = append(groups, g)
	}
	if len(groups) == 0 {
		groups = []int{0}
	}
	ops := make([]op, 0, len(keys))
	for _, m := range keys {
		key, err := t.keyOf(m)
		if err != nil {
			return schemaError(t, err)
		}
		ops = append(ops, op{kind: opLock, t: t, key: key, enc: encodeKey(key), groups: groups,
			exclusive: lockType == LockExclusive, strong: lockType == LockSharedStrong})
	}
	tx.add(ops)
	return nil
}

// writtenGroups returns the lock groups a write touches: the groups of the
// value columns it carries (all of them when it overwrites the row).
func writtenGroups(o *op) []int {
	t := o.t
	if !o.update {
		return t.allGroups
	}
	var gs []int
	for i := t.keys; i < len(t.cols); i++ {
		if o.present[i] && !slices.Contains(gs, t.cols[i].group) {
			gs = append(gs, t.cols[i].group)
		}
	}
	if len(gs) == 0 {
		gs = primaryGroup
	}
	return gs
}

var primaryGroup = []int{0}

func conflict(tx *Tx, t *table, key []any, group int, winner Timestamp, reason string) error {
	return yterrors.Err(yterrors.CodeTransactionLockConflict,
		fmt.Sprintf("Row lock conflict due to %s", reason),
		yterrors.Attr("loser_transaction_id", tx.id),
		yterrors.Attr("winner_transaction_commit_timestamp", uint64(winner)),
		yterrors.Attr("table_path", t.path),
		yterrors.Attr("key", fmt.Sprint(key)),
		yterrors.Attr("lock", t.groups[group]))
}

// Commit commits a transaction. With prerequisites, the commit happens inside
// p.WhileAlive so that it is atomic with the prerequisite check. A failed
// commit aborts the transaction; its writes are discarded.
//
// Invariant: a tablet commit whose prerequisite master transaction has ended
// writes nothing (TestCommitPrerequisiteFencing).
func (e *Engine) Commit(txID string, prerequisites []string, p Prerequisites) (Timestamp, error) {
	e.mu.Lock()
	tx, err := e.tx(txID)
	if err == nil {
		delete(e.txs, txID)
	}
	e.mu.Unlock()
	if err != nil {
		return 0, err
	}
	var ts Timestamp
	run := func() error {
		e.mu.Lock()
		defer e.mu.Unlock()
		var err error
		ts, err = e.commitLocked(tx)
		e.releaseOps(tx)
		return err
	}
	if len(prerequisites) == 0 {
		return ts, run()
	}
	if p == nil {
		return 0, yterrors.Err(yterrors.CodePrerequisiteCheckFailed, "Prerequisite check failed: prerequisites are not supported")
	}
	err = p.WhileAlive(prerequisites, run)
	return ts, err
}

// Operation slices with room for minSpareOps to maxSpareCap operations are recycled, at
// most maxSpareOps of them at a time (a few MiB): a huge one is left to the collector.
const (
	minSpareOps = 16
	maxSpareCap = 4096
	maxSpareOps = 16
)

// newOps returns an empty operation slice for n operations; the caller holds e.mu.
func (e *Engine) newOps(n int) []op {
	if k := len(e.spareOps); n >= minSpareOps && k > 0 && cap(e.spareOps[k-1]) >= n {
		s := e.spareOps[k-1]
		e.spareOps = e.spareOps[:k-1]
		return s
	}
	return make([]op, 0, n)
}

// releaseOps hands the operation slices of a finished transaction to newOps. Nothing refers
// to an operation once its transaction committed or failed to: the commit record keeps the
// keys and values, not the operations. The caller holds e.mu.
func (e *Engine) releaseOps(tx *Tx) {
	for i, s := range tx.ops {
		tx.ops[i] = nil
		if cap(s) < minSpareOps || cap(s) > maxSpareCap || len(e.spareOps) >= maxSpareOps {
			continue
		}
		clear(s) // the keys, values and tables they point to are not kept alive
		e.spareOps = append(e.spareOps, s[:0])
	}
	tx.ops = nil
}

// commitLocked checks conflicts, resolves the write set against the latest
// committed rows and applies it; the caller holds e.mu.
//
// Invariant: of two transactions writing the same row lock concurrently, the
// second to commit fails with 1700 and applies nothing (TestConcurrentWriteConflict,
// TestTransactionsAgainstModel).
func (e *Engine) commitLocked(tx *Tx) (Timestamp, error) {
	if len(tx.ops) == 0 {
		return e.next(), nil
	}
	for _, seg := range tx.ops {
		if err := e.checkOps(tx, seg); err != nil {
			return 0, err
		}
	}
	rec := &CommitRecord{Timestamp: e.next()}
	writes, appends, merges := 0, 0, false
	for _, seg := range tx.ops {
		for i := range seg {
			switch o := &seg[i]; o.kind {
			case opWrite:
				writes++
				merges = merges || o.update || o.aggregate
			case opDelete:
				writes++
			case opAppend:
				appends++
			}
		}
	}
	if writes > 0 {
		rec.Writes = slices.Grow(e.recWrites[:0], writes)
	}
	if appends > 0 {
		rec.Appends = slices.Grow(e.recAppends[:0], appends)
	}
	// The journal encodes the record and apply keeps none of its lists (only the key and
	// value slices they point to): once committed, or failed, the lists serve the next commit.
	defer func() {
		if rec.Writes != nil && cap(rec.Writes) <= maxSpareRecordRows {
			clear(rec.Writes)
			e.recWrites = rec.Writes[:0]
		}
		if rec.Appends != nil && cap(rec.Appends) <= maxSpareRecordRows {
			clear(rec.Appends)
			e.recAppends = rec.Appends[:0]
		}
	}()
	// pending maps a row to the index of its latest write in rec.Writes, for the writes that
	// merge into the row as the commit leaves it so far (update, aggregate); without those
	// nothing reads it.
	var pending map[pendingKey]int
	if merges {
		pending = make(map[pendingKey]int, writes)
	}
	for _, seg := range tx.ops {
		if err := e.recordOps(seg, rec, pending); err != nil {
			return 0, err
		}
	}
	if err := e.commit(&Record{Kind: RecordCommit, Commit: rec}); err != nil {
		return 0, err
	}
	return rec.Timestamp, nil
}

// maxSpareRecordRows bounds the row lists of a commit record kept for the next commit.
const maxSpareRecordRows = 1 << 16

// checkOps checks the operations of one call of tx against the tables as committed: the
// tables still exist and are writable (readable for locks), and no row they touch was
// written or locked by a commit after tx started.
func (e *Engine) checkOps(tx *Tx, ops []op) error {
	for i := range ops {
		o := &ops[i]
		if e.tables[o.t.id] != o.t {
			return yterrors.Err(yterrors.CodeResolveError, fmt.Sprintf("Table %s was removed or altered during the transaction", o.t.path))
		}
		if tx.bulk {
			continue
		}
		if o.kind == opLock {
			if err := checkReadable(o.t); err != nil {
				return err
			}
		} else if err := checkWritable(o.t); err != nil {
			return err
		}
		if o.kind == opAppend {
			continue
		}
		r := o.t.rows[o.enc]
		if r == nil {
			continue
		}
		switch o.kind {
		case opWrite, opDelete:
			gs := o.t.allGroups
			if o.kind == opWrite {
				gs = writtenGroups(o)
			}
			for _, g := range gs {
				if r.writeTS[g] > tx.start {
					return conflict(tx, o.t, o.key, g, r.writeTS[g], "concurrent write")
				}
				if r.readTS[g] > tx.start {
					return conflict(tx, o.t, o.key, g, r.readTS[g], "concurrent read lock")
				}
			}
		case opLock:
			for _, g := range o.groups {
				if r.writeTS[g] > tx.start {
					return conflict(tx, o.t, o.key, g, r.writeTS[g], "concurrent write")
				}
				if o.exclusive && r.readTS[g] > tx.start {
					return conflict(tx, o.t, o.key, g, r.readTS[g], "concurrent read lock")
				}
			}
		}
	}
	return nil
}

// recordOps adds the writes, appends and locks of one call's operations to rec; pending, when
// not nil, maps each row written so far to the index of its latest write in rec.Writes.
func (e *Engine) recordOps(ops []op, rec *CommitRecord, pending map[pendingKey]int) error {
	for i := range ops {
		o := &ops[i]
		switch o.kind {
		case opAppend:
			rec.Appends = append(rec.Appends, RowAppend{Table: o.t.id, Tablet: o.tablet, Values: o.values})
		case opLock:
			if o.exclusive || o.strong {
				rec.Locks = append(rec.Locks, RowLock{Table: o.t.id, Key: o.key, Groups: o.groups, Exclusive: o.exclusive})
			}
		case opDelete:
			rec.Writes = append(rec.Writes, RowWrite{Table: o.t.id, Key: o.key, Delete: true, Groups: o.t.allGroups, enc: o.enc})
			if pending != nil {
				pending[pendingKey{o.t, o.enc}] = len(rec.Writes) - 1
			}
		case opWrite:
			values, err := e.resolveWrite(o, rec, pending)
			if err != nil {
				return err
			}
			rec.Writes = append(rec.Writes, RowWrite{Table: o.t.id, Key: o.key, Values: values, Groups: writtenGroups(o), enc: o.enc})
			if pending != nil {
				pending[pendingKey{o.t, o.enc}] = len(rec.Writes) - 1
			}
		}
	}
	return nil
}

type pendingKey struct {
	t   *table
	enc string
}

// currentValues returns the row as this commit would leave it so far.
func (e *Engine) currentValues(t *table, enc string, rec *CommitRecord, pending map[pendingKey]int) []any {
	if i, ok := pending[pendingKey{t, enc}]; ok {
		if rec.Writes[i].Delete {
			return nil
		}
		return rec.Writes[i].Values
	}
	if r := t.rows[enc]; r != nil {
		return r.latest()
	}
	return nil
}

// resolveWrite computes the full row a write leaves. It may reuse o.values: ops
// are discarded after the commit.
func (e *Engine) resolveWrite(o *op, rec *CommitRecord, pending map[pendingKey]int) ([]any, error) {
	t := o.t
	values := o.values
	var base []any
	if o.update || o.aggregate {
		base = e.currentValues(t, o.enc, rec, pending)
	}
	for i := t.keys; i < len(t.cols); i++ {
		c := t.cols[i]
		switch {
		case !o.present[i]:
			if o.update && base != nil {
				values[i] = base[i]
			}
		case o.aggregate && c.aggregate != "" && base != nil:
			values[i] = aggregate(c.aggregate, base[i], values[i])
		}
		if values[i] == nil && c.required {
			return nil, schemaError(t, fmt.Errorf("required column %q cannot have a null value", c.name))
		}
	}
	return values, nil
}

func (e *Engine) applyCommit(rec *CommitRecord) error {
	if rec == nil {
		return fmt.Errorf("commit record without body")
	}
	if err := e.checkCommit(rec); err != nil {
		return fmt.Errorf("commit at %d: %w", rec.Timestamp, err)
	}
	e.oracle.Observe(uint64(rec.Timestamp))
	horizon := e.pruneHorizon(rec.Timestamp)
	for _, w := range rec.Writes {
		t, ok := e.tables[w.Table]
		if !ok {
			return fmt.Errorf("commit at %d: no table %s", rec.Timestamp, w.Table)
		}
		// A delete of a missing row still records its lock timestamps.
		k, r := t.rowForEnc(w.Key, w.enc)
		values := w.Values
		if w.Delete {
			values = nil
			t.tombstones = append(t.tombstones, tombstone{enc: k, ts: rec.Timestamp})
		} else if len(values) >= len(r.key) {
			// Every version holds the row's own key values (one copy of the key's bytes).
			copy(values, r.key)
		}
		r.versions = append(r.versions, version{ts: rec.Timestamp, values: values})
		prune(r, horizon)
		if t.wmCol != 0 {
			t.trackWatermark(k, values)
		}
		for _, g := range w.Groups {
			if g < len(r.writeTS) {
				r.writeTS[g] = rec.Timestamp
			}
		}
	}
	for _, l := range rec.Locks {
		t, ok := e.tables[l.Table]
		if !ok {
			return fmt.Errorf("commit at %d: no table %s", rec.Timestamp, l.Table)
		}
		_, r := t.rowFor(l.Key)
		for _, g := range l.Groups {
			switch {
			case g >= len(r.readTS):
			case l.Exclusive:
				r.writeTS[g] = rec.Timestamp
			default:
				r.readTS[g] = rec.Timestamp
			}
		}
	}
	for _, a := range rec.Appends {
		t, ok := e.tables[a.Table]
		if !ok || a.Tablet >= len(t.tablets) {
			return fmt.Errorf("commit at %d: no tablet %d of table %s", rec.Timestamp, a.Tablet, a.Table)
		}
		tb := t.tablets[a.Tablet]
		tb.rows = append(tb.rows, orderedRow{ts: rec.Timestamp, values: a.Values})
	}
	for _, w := range rec.Writes {
		e.tables[w.Table].collectTombstones(horizon)
	}
	return nil
}

// pruneHorizon is the timestamp at or below which a commit at ts drops overwritten versions
// and deleted rows: VersionRetention back from ts, and never past the start of an open
// transaction, whose snapshot reads and conflict checks need what it could see. A replay has
// no open transactions: it may drop more than the live commit did, which no read at a
// current timestamp can tell.
func (e *Engine) pruneHorizon(ts Timestamp) Timestamp {
	retention := Timestamp(e.cfg.VersionRetention/time.Second) << timestampCounterBits
	if ts <= retention {
		return 0
	}
	horizon := ts - retention
	for _, tx := range e.txs {
		if !tx.bulk && tx.start < horizon {
			horizon = tx.start // the newest version at or before it stays
		}
	}
	return horizon
}

// tombstone remembers a delete so that the row can be dropped once no read or
// transaction within the retention window can see it.
type tombstone struct {
	enc string
	ts  Timestamp
}

// collectTombstones drops rows whose latest version is a delete at or before
// horizon and whose locks are older too. It depends only on horizon, so replay
// reproduces it.
func (t *table) collectTombstones(horizon Timestamp) {
	n := 0
	for n < len(t.tombstones) && t.tombstones[n].ts <= horizon {
		ts := t.tombstones[n]
		n++
		r := t.rows[ts.enc]
		if r == nil || len(r.versions) == 0 || r.latest() != nil || r.versions[len(r.versions)-1].ts > horizon {
			continue
		}
		if slices.ContainsFunc(r.writeTS, func(x Timestamp) bool { return x > horizon }) ||
			slices.ContainsFunc(r.readTS, func(x Timestamp) bool { return x > horizon }) {
			continue
		}
		// Invariant: a collected row leaves the key-order index too, even in a table
		// nobody scans (the output store is written, deleted and only looked up); before,
		// the index kept every collected row, and its versions, until the next scan
		// (TestCollectedRowsLeaveIndex).
		t.removeRow(ts.enc, r)
	}
	if n > 0 {
		t.tombstones = append(t.tombstones[:0], t.tombstones[n:]...)
	}
	t.dropRemovedIfHalf()
}

// mergeWatermark drops the rows whose column is below watermark. The first merge by a
// column reads every row's value (wmIndex); from then on every write of the table adds its
// row with the value it wrote, and a merge visits only the rows below the watermark (and the
// others of the bucket it falls in): it costs the rows it drops, not the table. The dedup
// tables hold every message of the last half minute and are merged every few seconds, under
// the server's state lock (BenchmarkMergeWatermark). Dropped rows leave the key-order index
// at its next use (sortedRows), or once they are half of it; a transaction in progress that
// writes a dropped row later creates it anew, as after compaction in YT.
func (t *table) mergeWatermark(column string, watermark uint64) error {
	ci, ok := t.byName[column]
	if !ok {
		return fmt.Errorf("merge watermark of %s: no column %q", t.path, column)
	}
	if t.wmCol != ci+1 {
		t.wmCol, t.wm = ci+1, wmIndex{}
		for enc, r := range t.rows {
			t.trackWatermark(enc, r.latest())
		}
	}
	t.wm.below(watermark, func(enc string) {
		r := t.rows[enc]
		if r == nil {
			return
		}
		// The row may have been written again since: it was added again with the newer
		// value, and stays unless that one is below the watermark too.
		if v, ok := t.watermarkValue(r.latest()); ok && v < watermark {
			t.removeRow(enc, r)
		}
	})
	t.dropRemovedIfHalf()
	return nil
}

// watermarkValue is the tracked column's value in a row's values.
func (t *table) watermarkValue(values []any) (uint64, bool) {
	if t.wmCol == 0 || len(values) < t.wmCol {
		return 0, false
	}
	v, ok := values[t.wmCol-1].(uint64)
	return v, ok
}

// trackWatermark adds a row just written with values to the watermark index, when the
// table is merged by watermark.
func (t *table) trackWatermark(enc string, values []any) {
	if v, ok := t.watermarkValue(values); ok {
		t.wm.add(v, enc)
	}
}

// wmBucketShift sets the value range of a wmIndex bucket: 2^20, about a second of
// microsecond timestamps.
const wmBucketShift = 20

// wmIndex orders the rows of a table merged by watermark by the value their last write
// left in the watermark column, in buckets of values with the same v >> wmBucketShift. A
// row written several times has an entry for each write. A bucket is a chain of blocks of
// wmBlockLen entries: a dedup index takes ~100 000 rows a second into one bucket, and one
// growing slice would copy all of them (pointers, so under write barriers while the
// collector runs) every time it doubles.
type wmIndex struct {
	buckets map[uint64][][]wmEntry
	ids     []uint64 // of buckets, ascending
}

// wmBlockLen is the number of entries of a wmIndex block.
const wmBlockLen = 1024

type wmEntry struct {
	value uint64
	enc   string // encoded key of the row
}

func (x *wmIndex) add(v uint64, enc string) {
	id := v >> wmBucketShift
	b, ok := x.buckets[id]
	if !ok {
		if x.buckets == nil {
			x.buckets = map[uint64][][]wmEntry{}
		}
		i, _ := slices.BinarySearch(x.ids, id)
		x.ids = slices.Insert(x.ids, i, id)
	}
	if n := len(b); n == 0 || len(b[n-1]) == cap(b[n-1]) {
		b = append(b, make([]wmEntry, 0, wmBlockLen))
		x.buckets[id] = b
	}
	last := &b[len(b)-1]
	*last = append(*last, wmEntry{value: v, enc: enc})
}

// below removes the entries with a value below watermark and calls f with each one's key.
func (x *wmIndex) below(watermark uint64, f func(enc string)) {
	last := watermark >> wmBucketShift
	done := 0
	for _, id := range x.ids {
		if id > last {
			break
		}
		var keep [][]wmEntry
		for _, blk := range x.buckets[id] {
			for _, e := range blk {
				if e.value < watermark {
					f(e.enc)
					continue
				}
				if n := len(keep); n == 0 || len(keep[n-1]) == cap(keep[n-1]) {
					keep = append(keep, make([]wmEntry, 0, wmBlockLen))
				}
				keep[len(keep)-1] = append(keep[len(keep)-1], e)
			}
		}
		if len(keep) > 0 { // only the bucket the watermark falls in
			x.buckets[id] = keep
			break
		}
		delete(x.buckets, id)
		done++
	}
	x.ids = x.ids[done:]
}

// prune drops versions no read within the retention window can see: all but
// the newest version at or before horizon.
func prune(r *row, horizon Timestamp) {
	keep := 0
	for i := len(r.versions) - 1; i >= 0; i-- {
		if r.versions[i].ts <= horizon {
			keep = i
			break
		}
	}
	if keep > 0 {
		r.versions = append(r.versions[:0], r.versions[keep:]...)
	}
}

// NextExpiry returns the earliest lease end of the open transactions.
func (e *Engine) NextExpiry() (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var next time.Time
	for _, tx := range e.txs {
		if next.IsZero() || tx.expires.Before(next) {
			next = tx.expires
		}
	}
	return next, !next.IsZero()
}

// checkCommit verifies that a commit record fits the tables it names, so that
// applying it cannot corrupt the engine (records from a damaged log).
func (e *Engine) checkCommit(rec *CommitRecord) error {
	sorted := func(id string, key []any, groups []int) (*table, error) {
		t, ok := e.tables[id]
		if !ok || !t.sorted {
			return nil, fmt.Errorf("no sorted table %s", id)
		}
		if len(key) != t.keys {
			return nil, fmt.Errorf("key of %d values for table %s with %d key columns", len(key), t.path, t.keys)
		}
		for _, g := range groups {
			if g < 0 || g >= len(t.groups) {
				return nil, fmt.Errorf("no lock group %d in table %s", g, t.path)
			}
		}
		return t, nil
	}
	for _, w := range rec.Writes {
		t, err := sorted(w.Table, w.Key, w.Groups)
		if err != nil {
			return err
		}
		if !w.Delete && len(w.Values) != len(t.cols) {
			return fmt.Errorf("row of %d values for table %s with %d columns", len(w.Values), t.path, len(t.cols))
		}
	}
	for _, l := range rec.Locks {
		if _, err := sorted(l.Table, l.Key, l.Groups); err != nil {
			return err
		}
	}
	for _, a := range rec.Appends {
		t, ok := e.tables[a.Table]
		if !ok || t.sorted || a.Tablet < 0 || a.Tablet >= len(t.tablets) {
			return fmt.Errorf("no tablet %d of ordered table %s", a.Tablet, a.Table)
		}
		if len(a.Values) != len(t.cols) {
			return fmt.Errorf("row of %d values for table %s with %d columns", len(a.Values), t.path, len(t.cols))
		}
	}
	return nil
}

// Load writes rows into a table in any mount state, as one commit without
// conflict checks: the content a static table brings when it becomes dynamic.
// Sorted tables keep the last row of each key; ordered tables get the rows in
// order in the tablet each row names (tablet 0 by default).
func (e *Engine) Load(tableID string, rows []map[string]any) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, err := e.table(tableID)
	if err != nil {
		return err
	}
	if !t.sorted {
		for i, m := range rows {
			if _, ok := m["$tablet_index"]; !ok {
				m = maps.Clone(m)
				m["$tablet_index"] = int64(0)
				rows[i] = m
			}
		}
	}
	ops, err := e.appendRowOps(nil, t, rows, InsertOptions{})
	if err != nil {
		return err
	}
	tx := &Tx{id: "load", start: MaxTimestamp, bulk: true}
	tx.add(ops)
	_, err = e.commitLocked(tx)
	return err
}
