package ytlocal

// SetSnapshotWriteHook makes every background snapshot writer call h before it encodes
// anything, until the returned function restores the previous hook (tests only).
func SetSnapshotWriteHook(h func()) (restore func()) {
	prev := snapshotWriteHook
	snapshotWriteHook = h
	return func() { snapshotWriteHook = prev }
}

// SetSyncHook makes every fsync of the write-ahead log call h first, until the returned
// function restores the previous hook (tests only).
func SetSyncHook(h func()) (restore func()) {
	prev := syncHook.Swap(&h)
	return func() { syncHook.Store(prev) }
}
