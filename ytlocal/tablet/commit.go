package tablet

import (
	"fmt"
	"slices"
	"time"

	"go.ytsaurus.tech/yt/go/yterrors"
)

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
	var current *table // the last table found current: a call's operations share one
	for i := range ops {
		o := &ops[i]
		if o.t != current {
			if e.tables[o.t.id] != o.t {
				return yterrors.Err(yterrors.CodeResolveError, fmt.Sprintf("Table %s was removed or altered during the transaction", o.t.path))
			}
			current = o.t
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
		if o.kind != opLock {
			o.row = r // the same lock is held until the commit applies: still the row then
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
			rec.Writes = append(rec.Writes, RowWrite{Table: o.t.id, Key: o.key, Delete: true, Groups: o.t.allGroups, enc: o.enc, row: o.row})
			if pending != nil {
				pending[pendingKey{o.t, o.enc}] = len(rec.Writes) - 1
			}
		case opWrite:
			values, err := e.resolveWrite(o, rec, pending)
			if err != nil {
				return err
			}
			rec.Writes = append(rec.Writes, RowWrite{Table: o.t.id, Key: o.key, Values: values, Groups: writtenGroups(o), enc: o.enc, row: o.row})
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
func (e *Engine) currentValues(o *op, rec *CommitRecord, pending map[pendingKey]int) []any {
	t, enc := o.t, o.enc
	if i, ok := pending[pendingKey{t, enc}]; ok {
		if rec.Writes[i].Delete {
			return nil
		}
		return rec.Writes[i].Values
	}
	if o.row != nil {
		return o.row.latest()
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
		base = e.currentValues(o, rec, pending)
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
	// Writes come in runs of one table: the table of the last write is looked up once.
	var t *table
	for _, w := range rec.Writes {
		if t == nil || t.id != w.Table {
			var ok bool
			if t, ok = e.tables[w.Table]; !ok {
				return fmt.Errorf("commit at %d: no table %s", rec.Timestamp, w.Table)
			}
		}
		// A delete of a missing row still records its lock timestamps. The live commit
		// found most rows already (checkOps): a row is removed only after the writes
		// (collectTombstones) or by a watermark merge, which takes the engine's lock.
		k, r := w.enc, w.row
		if r == nil || r.key == nil {
			k, r = t.rowForEnc(w.Key, w.enc)
		}
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
	var collected *table // collecting twice at one horizon finds nothing more
	for _, w := range rec.Writes {
		if collected == nil || collected.id != w.Table {
			collected = e.tables[w.Table]
			collected.collectTombstones(horizon)
		}
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
