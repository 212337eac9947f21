package ytlocal

// SetSnapshotWriteHook makes every background snapshot writer call h before it encodes
// anything, until the returned function restores the previous hook (tests only).
func SetSnapshotWriteHook(h func()) (restore func()) {
	prev := snapshotWriteHook
	snapshotWriteHook = h
	return func() { snapshotWriteHook = prev }
}
