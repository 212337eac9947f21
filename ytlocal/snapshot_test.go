package ytlocal_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/ytlocal"
)

// TestSnapshotDoesNotStallCommands: a snapshot is encoded and written in the background:
// while one is held before it encodes anything, commands go on (with snapshots written
// under the state lock these inserts never returned). A copy of the data directory taken
// meanwhile (what a crash would leave: the previous snapshot and every log segment) and the
// directory after the snapshot was installed both restore every acknowledged row; the
// installed snapshot replaced the older segments.
func TestSnapshotDoesNotStallCommands(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	t.Cleanup(ytlocal.SetSnapshotWriteHook(func() {
		select {
		case started <- struct{}{}:
		default:
		}
		<-release
	}))
	released := false
	t.Cleanup(func() {
		if !released {
			close(release)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	srv, yc := startDurable(t, ctx, dir, 20)
	p := newSortedTable(t, ctx, yc)
	insert := func(i int) {
		require.NoError(t, yc.InsertRows(ctx, p, []any{&kvRow{fmt.Sprintf("k%03d", i), int64(i)}}, nil))
	}
	n := 0
	for snapshotting := false; !snapshotting; n++ {
		insert(n)
		select {
		case <-started:
			snapshotting = true
		default:
			require.Less(t, n, 1000, "no snapshot started after %d records", n)
		}
	}
	// The snapshot writer is held: commands must still complete.
	for end := n + 50; n < end; n++ {
		insert(n)
	}
	crash := t.TempDir()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var segments int
	for _, e := range entries {
		if e.Name() == "LOCK" {
			continue
		}
		if strings.HasPrefix(e.Name(), "wal.") {
			segments++
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(crash, e.Name()), b, 0o644))
	}
	require.GreaterOrEqual(t, segments, 2, "the log was rotated when the snapshot began")
	close(release)
	released = true
	require.NoError(t, srv.Close()) // waits for the snapshot being written

	check := func(dir, what string) {
		_, yc := startDurable(t, ctx, dir, 0)
		for i := 0; i < n; i++ {
			v, ok := lookupValue(t, ctx, yc, p, fmt.Sprintf("k%03d", i))
			require.True(t, ok, "%s: row %d of %d lost", what, i, n)
			require.Equal(t, int64(i), v, "%s: row %d", what, i)
		}
	}
	check(crash, "crash image taken while the snapshot was written")
	_, err = os.Stat(filepath.Join(dir, "snapshot"))
	require.NoError(t, err, "the snapshot was installed")
	check(dir, "after the snapshot was installed")
}
