package ytlocal

import (
	"slices"
	"time"

	"go.ytsaurus.tech/library/go/core/log"
	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yterrors"
)

const (
	defaultTxTimeout = 15 * time.Second
	maxTxTimeout     = time.Hour
)

// masterTx is a Cypress (master) transaction. Implicit transactions wrap single
// commands issued without transaction_id; they are never registered in Server.txs.
type masterTx struct {
	id         guid.GUID
	parent     *masterTx
	children   map[guid.GUID]*masterTx
	timeout    time.Duration
	deadline   time.Time // zero: none
	lastPing   time.Time
	started    time.Time
	startTS    uint64
	attrs      map[string]any
	prereqs    []guid.GUID
	dependents map[guid.GUID]bool
	touched    []guid.GUID // nodes with a branch of this tx
	locks      []*lockEntry
	implicit   bool
	// afterCommit runs after a topmost commit reached the trunk (e.g. auto-mount).
	afterCommit []func()
	now         time.Time // time of the current command (set per command)
}

func (tx *masterTx) expiry() time.Time {
	e := tx.lastPing.Add(tx.timeout)
	if !tx.deadline.IsZero() && tx.deadline.Before(e) {
		return tx.deadline
	}
	return e
}

// isAncestorOrSelf reports whether a is tx or one of its ancestors.
func (tx *masterTx) hasAncestor(a *masterTx) bool {
	for x := tx; x != nil; x = x.parent {
		if x == a {
			return true
		}
	}
	return false
}

// noSuchTx is the YTsaurus error for unknown or finished transactions.
func noSuchTx(id guid.GUID) error {
	return withAttrs(ytErr(yterrors.CodeNoSuchTransaction, "No such transaction %s", id), "transaction_id", id.String())
}

// liveTx returns the live master transaction id.
func (s *Server) liveTx(id guid.GUID) (*masterTx, error) {
	tx, ok := s.txs[id]
	if !ok {
		return nil, noSuchTx(id)
	}
	tx.now = s.now()
	return tx, nil
}

// IsMasterTxAlive reports whether id names a live master transaction. Call it with the
// state lock held (inside a handler or hook).
func (s *Server) IsMasterTxAlive(id guid.GUID) bool {
	_, ok := s.txs[id]
	return ok
}

// checkPrerequisites fails with code 1000 unless every id is a live master transaction.
// Call it with the state lock held; the dispatcher already calls it for the command's
// prerequisite_transaction_ids.
func (s *Server) checkPrerequisites(ids []guid.GUID) error {
	for _, id := range ids {
		if _, ok := s.txs[id]; !ok {
			return withAttrs(ytErr(yterrors.CodePrerequisiteCheckFailed,
				"Prerequisite check failed: transaction %s is missing", id), "transaction_id", id.String())
		}
	}
	return nil
}

// txForCall returns the transaction named by transaction_id, or a fresh implicit
// transaction. finish must be called with the command's error: it commits an implicit
// transaction (or aborts it on error) and is a no-op for explicit ones.
func (s *Server) txForCall(c *call) (tx *masterTx, finish func(error) error, err error) {
	id, ok, err := c.guidp("transaction_id")
	if err != nil {
		return nil, nil, err
	}
	if ok {
		if IsTabletTxID(id) {
			return nil, nil, ytErr(yterrors.CodeGeneric, "Transaction %s is a tablet transaction; command %q needs a master transaction", id, c.name)
		}
		tx, err := s.liveTx(id)
		if err != nil {
			return nil, nil, err
		}
		tx.now = c.now
		return tx, func(err error) error { return err }, nil
	}
	tx = &masterTx{id: guid.New(), implicit: true, now: c.now, started: c.now, lastPing: c.now}
	return tx, func(err error) error {
		if err != nil {
			s.tree.dropBranches(tx)
			return err
		}
		if cerr := s.commitTx(tx); cerr != nil {
			return cerr
		}
		return nil
	}, nil
}

// readTx returns the transaction to read under (nil = trunk).
func (s *Server) readTx(c *call) (*masterTx, error) {
	id, ok, err := c.guidp("transaction_id")
	if err != nil || !ok {
		return nil, err
	}
	if IsTabletTxID(id) {
		return nil, nil
	}
	tx, err := s.liveTx(id)
	if err != nil {
		return nil, err
	}
	tx.now = c.now
	return tx, nil
}

func (s *Server) startMasterTx(c *call) (any, error) {
	typ, err := c.str("type", "master")
	if err != nil {
		return nil, err
	}
	sticky, err := c.boolean("sticky", false)
	if err != nil {
		return nil, err
	}
	timeout, err := c.duration("timeout", defaultTxTimeout)
	if err != nil {
		return nil, err
	}
	if timeout <= 0 {
		timeout = defaultTxTimeout
	}
	if timeout > maxTxTimeout {
		timeout = maxTxTimeout
	}
	if typ != "master" || sticky {
		return s.startTabletTx(c, typ, timeout)
	}
	var parent *masterTx
	if id, ok, err := c.guidp("transaction_id"); err != nil {
		return nil, err
	} else if ok {
		if parent, err = s.liveTx(id); err != nil {
			return nil, err
		}
	}
	prereqs, err := c.guids("prerequisite_transaction_ids")
	if err != nil {
		return nil, err
	}
	var deadline time.Time
	if dl, err := c.str("deadline", ""); err != nil {
		return nil, err
	} else if dl != "" {
		t, err := yson.UnmarshalTime(dl)
		if err != nil {
			return nil, ytErr(yterrors.CodeGeneric, "Error parsing parameter \"deadline\": %v", err)
		}
		deadline = time.Time(t)
	}
	attrs, err := c.attributes()
	if err != nil {
		return nil, err
	}
	objType := uint32(objectTypeTransaction)
	if parent != nil {
		objType = objectTypeNestedTransaction
	}
	tx := &masterTx{
		id: s.newID(objType), parent: parent, children: map[guid.GUID]*masterTx{},
		timeout: timeout, deadline: deadline, lastPing: c.now, started: c.now, now: c.now,
		startTS: s.oracle.Next(), attrs: attrs, prereqs: prereqs, dependents: map[guid.GUID]bool{},
	}
	if parent != nil {
		parent.children[tx.id] = tx
	}
	for _, p := range prereqs {
		s.txs[p].dependents[tx.id] = true
	}
	s.txs[tx.id] = tx
	s.kickTimers()
	return map[string]any{"transaction_id": tx.id.String()}, nil
}

func (s *Server) startTabletTx(c *call, typ string, timeout time.Duration) (any, error) {
	m := s.tabletTxManager()
	if m == nil {
		return nil, ytErr(yterrors.CodeGeneric, "Transactions of type %q are not supported", typ)
	}
	atomicity, err := c.str("atomicity", "full")
	if err != nil {
		return nil, err
	}
	objType := uint32(objectTypeAtomicTabletTx)
	if atomicity == "none" {
		objType = objectTypeNonAtomicTabletTx
	}
	id, err := m.StartTx(c, func(start uint64) guid.GUID { return s.newTabletTxID(objType, start) }, timeout)
	if err != nil {
		return nil, err
	}
	c.volatile = true // a tablet transaction lives in memory only
	return map[string]any{"transaction_id": id.String()}, nil
}

func (s *Server) tabletTxManager() TabletTxManager {
	for _, name := range s.extOrder {
		if m, ok := s.exts[name].(TabletTxManager); ok {
			return m
		}
	}
	return nil
}

// pingTx renews a transaction's lease (and its ancestors' with ping_ancestor_transactions).
func (s *Server) pingTx(tx *masterTx, ancestors bool, now time.Time) {
	for x := tx; x != nil; x = x.parent {
		x.lastPing = now
		if !ancestors {
			break
		}
	}
	s.kickTimers()
}

// commitTx commits tx: nested transactions still open are aborted first, changes are
// folded into the parent (or logged and applied to the trunk), locks move to the parent
// or are released, dependents are aborted and observers told.
func (s *Server) commitTx(tx *masterTx) error {
	// Invariant: committing a parent aborts its open nested transactions; their changes
	// are discarded (TestParentCommitAbortsNestedTransactions).
	for _, child := range sortedTxs(tx.children) {
		s.abortTx(child, "Aborting nested transaction on parent commit")
	}
	deltas := s.tree.fold(tx)
	if tx.parent == nil {
		if err := s.tree.commitTrunk(deltas); err != nil {
			s.abortTx(tx, "Aborting transaction: commit could not be logged")
			return err
		}
	}
	s.tree.dropBranches(tx)
	s.releaseLocks(tx, true)
	s.finishTx(tx, true)
	if tx.parent != nil {
		tx.parent.afterCommit = append(tx.parent.afterCommit, tx.afterCommit...)
	} else {
		for _, f := range tx.afterCommit {
			f()
		}
	}
	return nil
}

// abortTx aborts tx and, first, its descendants.
func (s *Server) abortTx(tx *masterTx, reason string) {
	for _, child := range sortedTxs(tx.children) {
		s.abortTx(child, "Aborting nested transaction on parent abort")
	}
	if !tx.implicit {
		s.log.Debug("transaction aborted", log.String("transaction_id", tx.id.String()), log.String("reason", reason))
	}
	s.tree.dropBranches(tx)
	s.releaseLocks(tx, false)
	s.finishTx(tx, false)
}

func (s *Server) finishTx(tx *masterTx, committed bool) {
	if tx.implicit {
		return
	}
	if _, ok := s.txs[tx.id]; !ok {
		return
	}
	delete(s.txs, tx.id)
	if tx.parent != nil {
		delete(tx.parent.children, tx.id)
	}
	for _, p := range tx.prereqs {
		if pt, ok := s.txs[p]; ok {
			delete(pt.dependents, tx.id)
		}
	}
	for _, name := range s.extOrder {
		if o, ok := s.exts[name].(TxObserver); ok {
			o.MasterTxFinished(tx.id, committed)
		}
	}
	// Invariant: when a prerequisite ends (commit, abort, expiry) every transaction that
	// depends on it is aborted in the same critical section
	// (TestDependentTransactionAbortedWithPrerequisite).
	deps := make([]guid.GUID, 0, len(tx.dependents))
	for id := range tx.dependents {
		deps = append(deps, id)
	}
	slices.SortFunc(deps, func(a, b guid.GUID) int { return compareGUID(a, b) })
	for _, id := range deps {
		if d, ok := s.txs[id]; ok {
			s.abortTx(d, "Aborting dependent transaction: prerequisite "+tx.id.String()+" finished")
		}
	}
	s.grantPendingLocks()
	s.kickTimers()
}

func compareGUID(a, b guid.GUID) int {
	ah, al := a.Halves()
	bh, bl := b.Halves()
	switch {
	case ah < bh:
		return -1
	case ah > bh:
		return 1
	case al < bl:
		return -1
	case al > bl:
		return 1
	}
	return 0
}

func sortedTxs(m map[guid.GUID]*masterTx) []*masterTx {
	out := make([]*masterTx, 0, len(m))
	for _, tx := range m {
		out = append(out, tx)
	}
	slices.SortFunc(out, func(a, b *masterTx) int { return compareGUID(a.id, b.id) })
	return out
}

// expireTxs aborts every transaction whose lease or deadline passed. It runs on the
// timer goroutine, not lazily on the next request.
// Invariant: an unpinged transaction is aborted once its timeout passes, with no request
// needed (TestUnpingedTransactionExpires, TestDeadlineAbortsPingedTransaction).
func (s *Server) expireTxs(now time.Time) {
	for _, tx := range sortedTxs(s.txs) {
		if _, ok := s.txs[tx.id]; !ok {
			continue
		}
		if !tx.expiry().After(now) {
			s.abortTx(tx, "Transaction lease expired")
		}
	}
}

func (s *Server) nextTxDeadline() (time.Time, bool) {
	var next time.Time
	for _, tx := range s.txs {
		if e := tx.expiry(); next.IsZero() || e.Before(next) {
			next = e
		}
	}
	return next, !next.IsZero()
}

func txCommand(name string) func(c *call) (any, error) {
	return func(c *call) (any, error) {
		id, ok, err := c.guidp("transaction_id")
		if err != nil {
			return nil, err
		}
		if !ok {
			if name == "ping" {
				return nil, nil
			}
			return nil, ytErr(yterrors.CodeGeneric, "Missing required parameter \"transaction_id\" of command %q", c.name)
		}
		s := c.s
		if IsTabletTxID(id) {
			m := s.tabletTxManager()
			if m == nil {
				return nil, noSuchTx(id)
			}
			switch name {
			case "ping":
				return m.PingTx(c, id)
			case "commit":
				return m.CommitTx(c, id)
			default:
				return m.AbortTx(c, id)
			}
		}
		tx, err := s.liveTx(id)
		if err != nil {
			return nil, err
		}
		switch name {
		case "ping":
			anc, err := c.boolean("ping_ancestor_transactions", false)
			if err != nil {
				return nil, err
			}
			s.pingTx(tx, anc, c.now)
		case "commit":
			return nil, s.commitTx(tx)
		default:
			s.abortTx(tx, "Aborted by client")
		}
		return nil, nil
	}
}

func init() {
	registerCommand("start_transaction", commandOpts{Mutating: true, NoTxCheck: true}, func(c *call) (any, error) { return c.s.startMasterTx(c) })
	registerCommand("ping_transaction", commandOpts{NoTxCheck: true}, txCommand("ping"))
	registerCommand("commit_transaction", commandOpts{Mutating: true, NoTxCheck: true}, txCommand("commit"))
	registerCommand("abort_transaction", commandOpts{Mutating: true, NoTxCheck: true}, txCommand("abort"))
	registerCommand("generate_timestamp", commandOpts{}, func(c *call) (any, error) {
		c.volatile = true // a timestamp is not logged: the fsync of earlier records adds nothing
		return map[string]any{"timestamp": c.s.oracle.Next()}, nil
	})
}

// txAttributes returns the attributes of a live transaction (for #<tx id>/@).
func (s *Server) txAttributes(tx *masterTx) map[string]any {
	a := map[string]any{
		"id":                           tx.id.String(),
		"type":                         "transaction",
		"timeout":                      int64(tx.timeout / time.Millisecond),
		"last_ping_time":               fmtTime(tx.lastPing),
		"start_time":                   fmtTime(tx.started),
		"start_timestamp":              tx.startTS,
		"state":                        "active",
		"prerequisite_transaction_ids": guidStrings(tx.prereqs),
		"owner":                        "root",
		"nested_transaction_ids":       guidStrings(keysOf(tx.children)),
		"dependent_transaction_ids":    guidStrings(keysOf(tx.dependents)),
		"lock_count":                   int64(len(tx.locks)),
		"staged_node_ids":              guidStrings(tx.touched),
	}
	if tx.parent != nil {
		a["parent_id"] = tx.parent.id.String()
	} else {
		a["parent_id"] = guid.GUID{}.String()
	}
	if !tx.deadline.IsZero() {
		a["deadline"] = fmtTime(tx.deadline)
	}
	for k, v := range tx.attrs {
		a[k] = v
	}
	return a
}

func keysOf[V any](m map[guid.GUID]V) []guid.GUID {
	out := make([]guid.GUID, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, compareGUID)
	return out
}

func guidStrings(ids []guid.GUID) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	return out
}
