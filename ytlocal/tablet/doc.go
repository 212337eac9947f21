// Package tablet is the dynamic-table engine of ytlocal: sorted tables with
// multi-version rows, ordered tables split into tablets, tablet transactions
// with snapshot reads and row-lock conflict detection, and queue consumers and
// producers on top of them. It speaks no HTTP; package ytlocal drives it.
//
// Transactions read the snapshot at their start timestamp and buffer their
// writes; Commit checks row locks per lock group (first committer wins, shared
// strong locks block earlier-started writers) and applies everything at one
// commit timestamp. Commits with prerequisite master transactions run inside
// Prerequisites.WhileAlive, so they are atomic with the liveness check.
// Timestamps come from the ts.Oracle the caller shares with the rest of the
// server. Overwritten versions stay readable for Config.VersionRetention and while an open
// transaction may read them;
// deleted rows are dropped after it.
//
// Every committed change is expressed as a Record and installed by one function,
// Engine.Apply, so a write-ahead log that stores the records handed to
// Config.Journal reproduces the engine state by replaying them in order.
// Engine.Snapshot and Engine.Restore save and load the whole state (open
// transactions excepted).
//
// Errors carry YTsaurus error codes (*yterrors.Error): 307 schema violation,
// 500 unknown table, 901 unregistered consumer, 1000 failed prerequisite,
// 1700 row-lock conflict, 1702 tablet not mounted, 1706 invalid tablet state,
// 3100–3103 queue offsets, epochs and sequence numbers, 11000 unknown
// transaction.
//
// The engine is safe for concurrent use; all state sits behind one mutex, so a
// commit is atomic with respect to every other call.
package tablet
