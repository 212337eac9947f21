// Package ytlocal is a single-process server that speaks the YTsaurus HTTP proxy API
// (/hosts, /api/v4/<command>, /auth/whoami) well enough for the unmodified Go SDK
// (yt/ythttp) and for yt-flow's own tests.
//
// By default ytlocal has no authentication: every request acts as root (/auth/whoami),
// whatever token it carries, and check_permission allows every user every permission on an
// existing node (permission.go). With Config.Users (`yt-flow local --auth`) every request
// needs "Authorization: OAuth <token>" of a known token (HTTP 401, code 900 otherwise) and
// acts as its user; reads and writes of Cypress nodes check the @acl entries in force
// (a node's own, then its ancestors' while @inherit_acl holds; root is bound by none) and
// check_permission answers by them (auth.go, acl.go; code 901 when denied). A node without
// any ACL in force is open to every authenticated user. Tokens appear in no log or error.
//
// Start one with Start(ctx, Config{}) (random loopback port, memory only) or with
// Config.DataDir for durability; tests use ytlocaltest.New(t). Server.Addr is the proxy
// address; Server.Close is idempotent and waits for every goroutine.
//
// With Config.InProcess (or YTLOCAL_INPROCESS=1 in the environment) the server also
// registers itself with package internal/inproc under its address: a client of the same
// process whose transport asks inproc first (ytstore's does) has its requests served by
// calling the handler — the same request and response, without the loopback connection
// (a generate_timestamp costs 28 µs of CPU on both ends together instead of 104 over
// loopback, BenchmarkRequest: no system calls, HTTP parsing or connection goroutines).
// `yt-flow run` serves its own controller and workers this way; everything else, and every
// client outside the process, goes through the listener. Close stops serving in process
// first, and waits for the requests admitted (for up to five seconds, as for those of its
// connections).
//
// # Vanilla operations
//
// The scheduler commands (start_operation of type vanilla, get_operation, list_operations,
// abort_operation, complete_operation, list_jobs, get_job, get_job_stderr, abort_job) run
// each job as a local child process in a sandbox with the YTsaurus job environment,
// replace failed and aborted jobs as YTsaurus does, and kill every job process on abort,
// completion, Close and the death of the server's process (ops.go, ops_jobs.go,
// ops_spec.go, ops_proc_*.go). Operations are held in memory only.
//
// # Wire protocol
//
// Parameters come from the query string (strings), X-YT-Parameters (text YSON, or base64
// split into X-YT-Parameters0..N) and, for POST, from the body, later sources overriding
// earlier ones. PUT bodies are the command input.
// Request bodies may be z-<codec> block-compressed (YTsaurus blockcodecs framing),
// gzip or identity, and chunked. Responses are materialised completely before the first
// byte is written, so every error is reported as HTTP 4xx with X-YT-Error (yterrors
// JSON), X-YT-Response-Code and a JSON body — never after the body started. A response
// is z-compressed with exactly the codec named in Accept-Encoding and Content-Encoding
// echoes it. Mutating commands are deduplicated by mutation_id: a bounded cache answers
// retries with the original outcome; with DataDir the outcomes of durable mutations (and
// of every commit_transaction) are logged too, so the answer survives a restart.
//
// # State and concurrency
//
// All state (Cypress tree, master transactions, locks, extensions) is guarded by one
// mutex, the state lock. The HTTP layer decodes the request outside the lock, then runs
// the handler with the lock held, then encodes outside the lock. Handlers, extension
// hooks and the single timer goroutine (transaction timeouts, extension deadlines) all
// run under that lock, so they never need their own synchronisation and must never block.
//
// Cypress keeps a committed ("trunk") version of every node and, per master transaction,
// a branch with only that transaction's changes; reads walk the transaction, its
// ancestors, then the trunk. Commit folds a branch into the parent or, for a topmost
// transaction, logs it and applies it to the trunk. Commands issued without
// transaction_id run in an implicit transaction committed at once. Locks (snapshot,
// shared with child_key/attribute_key, exclusive; waitable) follow YTsaurus' conflict
// rules and fail with code 402. Committing a transaction aborts its open nested ones;
// a transaction started with prerequisite_transaction_ids is aborted when any of them
// ends; unpinged transactions are aborted by the timer when their timeout passes.
//
// Dynamic tables live in memory (package tablet). Overwritten versions and deleted rows
// stay readable by timestamp for Config.VersionRetention (two seconds by default, where
// YTsaurus keeps them on disk for min_data_ttl, 30 minutes by default), and for as long as
// an open tablet transaction can read them. Tables with the watermark row merger (yt-flow's
// dedup indexes) are indexed by their watermark column, so a merge visits only the rows it
// drops, and their rows, values and encoded keys are allocated in blocks: they are written
// once and dropped in order, and the garbage collector's work grows with the number of
// objects the server holds.
//
// # Durability
//
// With DataDir, every committed mutation is appended to a write-ahead log and fsynced
// before the response is sent (concurrent commits share one fsync). Once the log since the
// last snapshot holds Config.SnapshotEvery records and is at least as large as that
// snapshot, a new log segment is started and the state copied under the state lock; the copy
// is encoded, written and installed in the background (older segments are removed once it
// is), so commands go on meanwhile. Start replays the snapshot and every later segment; a
// torn tail (crash in the middle of an append, never acknowledged) is dropped.
// Open master transactions do not survive a restart (they are aborted, as if they had
// expired). A server holds an exclusive lock on DataDir, so a second server on the same
// directory fails to start.
//
// # Adding commands
//
// This section is the stable contract for code in this package that adds commands or
// state (the dynamic-table engine lives in dyn_*.go files). Names listed here are kept;
// they may gain fields or methods, never lose them.
//
// Registering. In an init() of your file call
//
//	registerCommand("insert_rows", commandOpts{Mutating: true, Heavy: true, NoTxCheck: true}, handleInsertRows)
//
// with handlerFunc = func(c *call) (any, error). commandOpts.Mutating enables
// mutation-id deduplication; NoTxCheck disables the generic check that transaction_id
// names a live MASTER transaction (set it for commands that take tablet transaction ids;
// the check already skips ids for which IsTabletTxID is true). Before the handler runs the
// dispatcher has (under the state lock) checked prerequisite_transaction_ids (code 1000
// if any is not a live master transaction); the handler's result is applied in the same
// critical section, so a tablet commit with prerequisites is exactly fenced against
// master commit/abort/expiry.
//
// Reading parameters (all tolerate the entity # as "absent" and report a YT error
// naming the parameter on a wrong type): c.str(name, def), c.requiredStr(name),
// c.boolean(name, def), c.int64p(name, def), c.uint64p(name, def),
// c.duration(name, def) (milliseconds on the wire), c.guidp(name),
// c.guids(name) (list of GUIDs), c.attributes() (a copy of the "attributes" map),
// c.nodeFlags() (recursive, ignore_existing, force), c.decode(name, &dst) (any yson target, e.g.
// schema.Schema or []any pivot keys), c.richPath(name) (*ypath.Rich with attributes,
// ranges and columns), c.path(name) (plain string), c.has(name), c.param(name),
// c.params (the raw merged map). The decompressed PUT body is c.input (c.inFmt is
// its format name); c.inputRows() parses it as a YSON list fragment of rows (maps,
// or nil for #), c.inputValue() as one value. The row maps of the row-input commands
// (rowInputCommands) are reused by later commands once the command answered: their handlers
// copy what they keep and return no input map. c.now is the command's clock reading.
// c.s is the *Server.
//
// Returning. nil means {}. A map such as map[string]any{"value": v} is written in
// the requested output format (binary YSON by default, text, or JSON). A *rowsResult
// {Rows, Params} is written as a YSON list fragment (each row a map[string]any, nil
// for #, or a yson.StreamMarshaler such as an ordered row), compressed per
// Accept-Encoding, with Params sent as X-YT-Response-Parameters. rawResult is sent as is.
// Errors: return ytErr(yterrors.CodeXxx, "format", args...) (optionally
// withAttrs(e, "key", value, ...)); any other error becomes code 1. Use
// noSuchTx(id) for 11000.
//
// Cypress lookups (state lock held): s.LookupNode(path, txID) returns a NodeInfo
// {ID, Type, Path, Attrs} (code 500 if missing, 11000 for a dead master transaction;
// a zero or tablet txID reads committed state); s.NodeByID(id) returns the committed
// view; NodeInfo.Schema() and NodeInfo.Dynamic() decode the usual attributes.
// s.SetNodeAttrs(id, attrs) writes stored attributes of a committed node (e.g. schema
// and dynamic from alter_table), logged before it returns. Inside the package,
// s.tree.attrOf(n, tx, name) and s.tree.nodes[id] give direct access (tx nil = trunk).
//
// Extensions. Stateful components register a factory in init():
//
//	registerExtension("dyn", func(s *Server) (Extension, error) { ... })
//
// and fetch themselves with s.extension("dyn"). An Extension is Persistent (see
// below) plus Close. It may also implement:
//   - NodeObserver: NodeCommitted(NodeEvent) for committed (trunk) changes —
//     NodeCreated, NodeRemoved, NodeAttrsChanged, NodeContentChanged; Replay is true
//     while the log is replayed at start.
//   - AttributeProvider: computed attributes (tablet_state, tablet_count, tablets,
//     row_count of dynamic tables, ...) consulted before stored ones; names listed by
//     NodeAttributeNames appear in `get <path>/@`.
//   - TxObserver: MasterTxFinished(id, committed), called in the critical section that
//     ends a master transaction (commit, abort, expiry, dependent abort, parent commit).
//   - TabletTxManager: start_transaction with type != master (or sticky=%true) calls
//     StartTx with a function making a fresh id from the start timestamp, laid out as
//     YTsaurus tablet transaction ids are (the timestamp in the two high words), whose
//     object type makes IsTabletTxID true (atomicity=none gets the non-atomic type);
//     ping/commit/abort_transaction of such
//     ids call PingTx/CommitTx/AbortTx.
//   - Expirer: NextDeadline/Expire driven by the server's timer goroutine; call
//     s.kickTimers() after moving a deadline earlier.
//   - DynamicTableReader: rows for read_table of a dynamic table.
//   - TableMounter: MountCreatedTable(id), called after a queue_consumer or
//     queue_producer node (created as a dynamic sorted table with the fixed schema and
//     treat_as_queue_consumer/treat_as_queue_producer=%true) is committed.
//
// Timestamps: s.Timestamps() is the one ts.Oracle shared by master transactions,
// generate_timestamp and the tablet engine; replay must call Observe with the
// timestamps it finds so a restart never reissues one.
//
// Durability hook. s.logRecord(owner, rec) appends rec under the extension's name;
// call it with the state lock held BEFORE making a change visible, and if it fails, do
// not apply the change and return the error. The dispatcher fsyncs (group commit,
// outside the state lock) before sending the response of the command during which the
// record was written — and before any response whose handler ran after it, so no client
// sees state a crash could take back. The one exception are answers that carry no such
// state: a handler that wrote no record and sets call.volatile (rows buffered in a tablet
// transaction, a started tablet transaction, generate_timestamp) is answered at once, as
// what it did lives in memory only and shows only through a commit, whose answer waits. Records written outside commands (timer hooks) are
// made durable by the next command or by Close. On start, after the Cypress
// state and before serving, each extension gets Restore(snapshot section) (only if a
// snapshot exists) and then Apply(rec) for each of its records, in log order,
// interleaved with Cypress records exactly as they were logged. Snapshot(w) must write
// the full state; it is called under the state lock when the log is rotated.
package ytlocal
