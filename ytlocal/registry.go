package ytlocal

import (
	"io"
	"time"

	"go.ytsaurus.tech/yt/go/guid"
)

// handlerFunc executes one command. It runs with the server's state lock held (see
// doc.go, "Adding commands"): it must not block and must not call back into HTTP.
// It returns the response value (see call.go for the accepted shapes) or an error;
// an error that is not a *yterrors.Error is reported with code 1.
type handlerFunc func(c *call) (any, error)

// commandOpts describes how the dispatcher treats a command.
type commandOpts struct {
	// Mutating commands are answered from the mutation-id cache on retries.
	Mutating bool
	// Heavy commands read their input body (PUT) and may stream rows; informational.
	Heavy bool
	// NoTxCheck skips the check that transaction_id names a live master transaction
	// (set it for commands that accept tablet transaction ids, e.g. insert_rows).
	NoTxCheck bool
}

type command struct {
	name string
	opts commandOpts
	h    handlerFunc
}

var commands = map[string]*command{}

// registerCommand adds a command; call it from init(). It panics on a duplicate name.
func registerCommand(name string, opts commandOpts, h handlerFunc) {
	if _, ok := commands[name]; ok {
		panic("ytlocal: duplicate command " + name)
	}
	commands[name] = &command{name: name, opts: opts, h: h}
}

// Persistent is a piece of server state that survives restarts when Config.DataDir is set.
//
// Contract: all three methods are called with the state lock held. Restore is called
// at most once, before any Apply, with the bytes last written by Snapshot (it is not
// called when no snapshot exists). Apply replays, in order, every record the owner
// passed to Server.logRecord after that snapshot. Snapshot must write the complete state.
type Persistent interface {
	Snapshot(w io.Writer) error
	Restore(r io.Reader) error
	Apply(rec []byte) error
}

// SnapshotCapturer is implemented by a Persistent whose snapshot can be encoded without the
// state lock: CaptureSnapshot runs under it and copies what the snapshot holds; the function
// it returns encodes that copy later, while commands go on (the server writes snapshots in
// the background).
type SnapshotCapturer interface {
	CaptureSnapshot() func(w io.Writer) error
}

// Extension is a stateful component plugged into every Server, e.g. the dynamic-table
// engine. It is created by the factory given to registerExtension, once per Server,
// before the log is replayed. It may additionally implement NodeObserver,
// AttributeProvider, TxObserver, TabletTxManager and Expirer.
type Extension interface {
	Persistent
	// Close releases resources; called once when the server closes.
	Close() error
}

// NodeObserver is told about committed (trunk) Cypress changes. Calls happen under
// the state lock, after the change is applied and logged, also during log replay
// (then with Replay=true).
type NodeObserver interface {
	NodeCommitted(ev NodeEvent)
}

// NodeEventKind says what happened to a node.
type NodeEventKind int

const (
	// NodeCreated: the node became visible outside transactions.
	NodeCreated NodeEventKind = iota + 1
	// NodeRemoved: the node was removed outside transactions (or its removal committed).
	NodeRemoved
	// NodeAttrsChanged: user-settable attributes changed; Attrs names them.
	NodeAttrsChanged
	// NodeContentChanged: static content (rows, file data, document value) changed.
	NodeContentChanged
)

// NodeEvent describes one committed change of one node.
type NodeEvent struct {
	Kind   NodeEventKind
	ID     guid.GUID
	Type   string   // node type: table, file, map_node, ...
	Attrs  []string // for NodeAttrsChanged
	Replay bool     // true while the write-ahead log is being replayed at start
}

// AttributeProvider supplies computed attributes (tablet_state, tablet_count, tablets,
// ...) of nodes. NodeAttribute is consulted before stored attributes; ok=false means
// "not mine". NodeAttributeNames lists the names to include in `get <path>/@`.
// Called under the state lock.
type AttributeProvider interface {
	NodeAttribute(id guid.GUID, typ, name string) (value any, ok bool)
	NodeAttributeNames(id guid.GUID, typ string) []string
}

// TxObserver is told when a master transaction ends. It is called under the state lock
// in the same critical section that commits or aborts the transaction, so a tablet commit
// checked against prerequisites under the same lock is exactly fenced.
type TxObserver interface {
	MasterTxFinished(id guid.GUID, committed bool)
}

// TabletTxManager owns non-master transactions. start_transaction with type other than
// "master" (or sticky=%true) is passed to StartTx with a function that makes the id from
// the transaction's start timestamp (as YTsaurus tablet transaction ids carry it); ping,
// commit and abort of ids whose object type is a tablet transaction (see IsTabletTxID)
// are passed to the other methods. Each returns the command's response value
// (usually nil, meaning {}). Prerequisites listed in the call are already checked.
type TabletTxManager interface {
	StartTx(c *call, newID func(start uint64) guid.GUID, timeout time.Duration) (guid.GUID, error)
	PingTx(c *call, id guid.GUID) (any, error)
	CommitTx(c *call, id guid.GUID) (any, error)
	AbortTx(c *call, id guid.GUID) (any, error)
}

// Expirer is an extension with deadlines (e.g. tablet transaction leases). The server's
// single timer goroutine calls Expire(now) under the state lock whenever now reaches
// NextDeadline(). Call Server.kickTimers after moving a deadline earlier.
type Expirer interface {
	NextDeadline() (time.Time, bool)
	Expire(now time.Time)
}

type extensionFactory struct {
	name string
	new  func(s *Server) (Extension, error)
}

var extensionFactories []extensionFactory

// registerExtension registers a component created for every Server; call it from
// init(). name identifies its records in the write-ahead log and its snapshot section
// and must never change once data directories exist.
func registerExtension(name string, factory func(s *Server) (Extension, error)) {
	for _, f := range extensionFactories {
		if f.name == name || name == cypressLogName || name == mutationLogName {
			panic("ytlocal: duplicate extension " + name)
		}
	}
	extensionFactories = append(extensionFactories, extensionFactory{name: name, new: factory})
}

// extension returns the extension registered under name, or nil.
func (s *Server) extension(name string) Extension {
	return s.exts[name]
}
