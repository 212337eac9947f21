package tablet

import (
	"fmt"
	"slices"
	"unsafe"

	"go.ytsaurus.tech/yt/go/yterrors"
)

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
	// table.newRow). The encoded keys of every sorted table come from one buffer per call
	// (rowForEnc copies a key that becomes a map key of a table not merged by watermark),
	// and so do the present flags, which nothing keeps after the transaction.
	// The key strings of a table merged by watermark point into the encoded keys at once
	// (shareKeyStrings), their headers from one block too.
	var block []any
	var keys []byte
	var presentBlock []bool
	var headers []string
	if t.sorted {
		presentBlock = make([]bool, len(rows)*len(t.cols))
		if t.wmCol != 0 {
			block = make([]any, len(rows)*len(t.cols))
			headers = make([]string, len(rows)*t.stringKeys())
		}
	}
	for _, m := range rows {
		if !t.sorted {
			if err := t.checkColumns(m); err != nil {
				return nil, schemaError(t, err)
			}
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
		present := presentBlock[:len(t.cols):len(t.cols)]
		presentBlock = presentBlock[len(t.cols):]
		key, found, err := t.writeValues(m, values, present, opts)
		if err != nil || found != len(m) {
			// A row holding only schema columns needs no check of its names (the common
			// case, found from the lookups made anyway); otherwise the check comes first,
			// as its error does.
			if cerr := t.checkColumns(m); cerr != nil {
				return nil, schemaError(t, cerr)
			}
			if err != nil {
				return nil, schemaError(t, err)
			}
		}
		if keys == nil {
			// Sized for rows whose keys encode as long as the first row's: one array for the
			// whole call in the common case.
			keys = make([]byte, 0, (encodedLen(key)+1)*len(rows))
		}
		// Bytes once handed out are never written again (a grown buffer is a new array).
		start := len(keys)
		keys = appendKey(keys, key)
		enc := unsafe.String(unsafe.SliceData(keys[start:]), len(keys)-start)
		if block != nil {
			headers = shareKeyStrings(key, enc, headers)
		}
		ops = append(ops, op{kind: opWrite, t: t, key: key, enc: enc, values: values, present: present, update: opts.Update, aggregate: opts.Aggregate})
	}
	return ops, nil
}

// writeValues fills the key and values of a row of sorted table t written as m, and which
// columns m carries; found is how many schema columns m holds (computed key columns aside).
func (t *table) writeValues(m map[string]any, values []any, present []bool, opts InsertOptions) (key []any, found int, err error) {
	key, found, err = t.keyInto(m, values)
	if err != nil {
		return nil, found, err
	}
	key = key[:len(key):len(key)]
	for i := t.keys; i < len(t.cols); i++ {
		c := t.cols[i]
		v, ok := m[c.name]
		if ok {
			found++
		}
		if !ok || c.system {
			if !opts.Update && c.required {
				return nil, found, fmt.Errorf("missing required column %q", c.name)
			}
			continue
		}
		n, err := c.normalize(v)
		if err != nil {
			return nil, found, err
		}
		values[i] = n
		present[i] = true
	}
	return key, found, nil
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
