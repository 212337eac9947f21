package ytlocal_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/yt"

	"github.com/ytflow/yt-flow/ytlocal"
)

// TestVolatileAnswersSkipFsyncWait holds the fsync of a commit's log record and checks that
// the answers that carry nothing a crash could take back (a timestamp, a started tablet
// transaction, rows buffered in it) come meanwhile, while the commit's own answer and a read
// of the table it wrote do not come before the record is durable.
func TestVolatileAnswersSkipFsyncWait(t *testing.T) {
	bctx, yc, p := benchTable(t, benchSetup{codec: yt.ClientCodecNone, durable: true})
	ctx, cancel := context.WithTimeout(bctx, time.Minute) // a wait that should not happen fails the test
	defer cancel()

	held := make(chan struct{}, 1)
	release := make(chan struct{})
	var releaseOnce sync.Once
	releaseAll := func() { releaseOnce.Do(func() { close(release) }) }
	restore := ytlocal.SetSyncHook(func() {
		select {
		case held <- struct{}{}:
		default:
		}
		<-release
	})
	defer restore()
	defer releaseAll() // the server must be able to close when the test fails

	committed := make(chan error, 1)
	go func() { committed <- yc.InsertRows(ctx, p, []any{&benchRow{Key: 1, Value: "a"}}, nil) }()
	select {
	case <-held: // the commit's record is written, its fsync waits for release
	case err := <-committed:
		t.Fatalf("the commit was answered before its record was fsynced (err %v)", err)
	}

	ts, err := yc.GenerateTimestamp(ctx, nil)
	require.NoError(t, err)
	require.NotZero(t, ts)
	tx, err := yc.BeginTabletTx(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, tx.InsertRows(ctx, p, []any{&benchRow{Key: 2, Value: "b"}}, nil))

	type lookup struct {
		rows []benchRow
		err  error
	}
	read := make(chan lookup, 1)
	go func() {
		r, err := yc.LookupRows(ctx, p, []any{&benchRow{Key: 1}}, nil)
		if err != nil {
			read <- lookup{err: err}
			return
		}
		defer func() { _ = r.Close() }()
		var l lookup
		for r.Next() {
			var row benchRow
			if l.err = r.Scan(&row); l.err != nil {
				break
			}
			l.rows = append(l.rows, row)
		}
		if l.err == nil {
			l.err = r.Err()
		}
		read <- l
	}()
	// Neither the commit nor a read of its row may be answered while the record is held.
	select {
	case err := <-committed:
		t.Fatalf("the commit was answered before its record was fsynced (err %v)", err)
	case l := <-read:
		t.Fatalf("a read was answered before the record it saw was fsynced (%v, err %v)", l.rows, l.err)
	default:
	}

	releaseAll()
	require.NoError(t, <-committed)
	l := <-read
	require.NoError(t, l.err)
	require.Equal(t, []benchRow{{Key: 1, Value: "a"}}, l.rows)
	require.NoError(t, tx.Commit())
}
