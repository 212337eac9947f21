package tablet

import (
	"fmt"
	"maps"
	"time"

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
	// row is the committed row with key enc that checkOps found (opWrite, opDelete), nil
	// when there was none or the transaction is bulk: the commit looks it up once.
	row *row
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
