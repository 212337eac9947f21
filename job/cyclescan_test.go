// Source reads of a cycle scan (the service log): read ahead, top-ups kept for the next epoch
// and dropped ones, over a source whose next cycle starts at the time of the read.

package job

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/connectors/servicelog"
	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytstore"
)

// TestReadAheadCycleScan: a source job's reads of a service log (a cycle scan: a cycle's
// rows carry its start, taken when the read that begins it runs) through read ahead and
// top-ups, with batch sizes changing from epoch to epoch, top-ups held past topUpWait (kept
// as the next read ahead) and epochs abandoned (their read ahead and top-up dropped), commit
// every key of the table exactly once per cycle, each cycle's rows with one start, in offset
// order: a read ahead or top-up that began a cycle is used only from the offset it was read
// at, and a dropped one leaves no row behind.
func TestReadAheadCycleScan(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := ytlocal.Start(ctx, ytlocal.Config{})
	require.NoError(t, err)
	defer func() { _ = srv.Close() }()
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: srv.Addr(), Path: "//tmp/cs/pipeline"})
	require.NoError(t, err)
	defer st.Close()
	sc := schema.Schema{UniqueKeys: true, Columns: []schema.Column{
		{Name: "hash", Type: schema.TypeUint64, SortOrder: schema.SortAscending},
		{Name: "v", Type: schema.TypeInt64},
	}}
	require.NoError(t, st.EnsureUserTable(ctx, ytstore.UserTable{Path: "//tmp/cs/t", Kind: ytstore.UserSortedTable, Schema: sc}))
	const keys = 37
	var rows []map[string]any
	for i := range uint64(keys) {
		rows = append(rows, map[string]any{"hash": i * 0x9E3779B97F4A7C15, "v": int64(i)})
	}
	require.NoError(t, st.InsertRows(ctx, "//tmp/cs/t", rows))
	cons, ok := connector.SourceOf(servicelog.Class)
	require.True(t, ok)
	src, err := cons.Source(connector.Env{Store: st, SourcePartition: servicelog.PartitionIndex(1, 0),
		Dynamic: &servicelog.Dynamic{DesiredPartitionCount: 1, DesiredCycleTime: time.Microsecond}},
		&servicelog.Params{Fetchers: []servicelog.Fetcher{{TablePath: "//tmp/cs/t", Attempts: 1}}})
	require.NoError(t, err)
	held := &heldSource{Source: src, gate: closedGate()}
	s := &sourceState{id: "log", src: held, topUpWait: time.Millisecond}

	rng := rand.New(rand.NewPCG(7, 11))
	var committed []connector.Row
	keptTopUps, abandoned := 0, 0
	for epoch := 0; epoch < 400 && len(committed) < 8*keys; epoch++ {
		room := int64(3 + rng.IntN(11)) // the epoch's room changes (pacing)
		// Hold the reads when the read ahead, done, is used: only its top-up meets the gate.
		hold := false
		if ra := s.ahead; ra != nil && rng.IntN(2) == 0 {
			<-ra.done
			hold = ra.err == nil && ra.from == s.offset && ra.max <= room && len(ra.rows) > 0 && int64(len(ra.rows)) < room
		}
		if hold {
			held.hold()
		}
		got, _, err := s.read(ctx, room)
		if hold {
			if s.ahead != nil {
				keptTopUps++
			}
			held.release()
		}
		require.NoError(t, err)
		require.LessOrEqual(t, int64(len(got)), room, "epoch %d: batch over its room", epoch)
		if len(got) == 0 {
			continue
		}
		if rng.IntN(4) == 0 { // the commit did not apply: the epoch is recomputed
			abandoned++
			continue
		}
		off := s.readEnd
		pos, ok := s.positionAt(off)
		require.True(t, ok)
		s.readAhead(ctx, off, pos, int64(3+rng.IntN(11)))
		s.committed(off, pos)
		committed = append(committed, got...)
	}
	if s.ahead != nil {
		<-s.ahead.done
	}
	require.Positive(t, keptTopUps, "some top-ups were kept as the next read ahead")
	require.Positive(t, abandoned)

	type cycle struct {
		start uint64
		seen  map[uint64]int
	}
	var cycles []*cycle
	last := int64(-1)
	for _, row := range committed {
		require.Greater(t, row.Offset, last, "committed offsets increase")
		last = row.Offset
		n := int(row.Offset >> 32)
		for len(cycles) <= n {
			cycles = append(cycles, &cycle{start: row.Timestamp, seen: map[uint64]int{}})
		}
		cy := cycles[n]
		require.Equal(t, cy.start, row.Timestamp, "cycle %d: one start for all its rows", n)
		cy.seen[row.Columns["hash"].(uint64)]++
	}
	require.GreaterOrEqual(t, len(cycles), 4)
	for n, cy := range cycles {
		for h, c := range cy.seen {
			require.Equal(t, 1, c, "cycle %d: key %d", n, h)
		}
		if n < len(cycles)-1 {
			require.Len(t, cy.seen, keys, "cycle %d: every key", n)
		}
	}
	t.Logf("%d rows in %d cycles committed; %d top-ups kept, %d epochs abandoned", len(committed), len(cycles), keptTopUps, abandoned)
}

// heldSource holds the reads that start while its gate is shut until it opens.
type heldSource struct {
	connector.Source
	mu   sync.Mutex
	gate chan struct{}
}

func closedGate() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

func (h *heldSource) hold() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gate = make(chan struct{})
}

func (h *heldSource) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	close(h.gate)
}

func (h *heldSource) Read(ctx context.Context, from connector.Position, max int64) ([]connector.Row, error) {
	h.mu.Lock()
	gate := h.gate
	h.mu.Unlock()
	select {
	case <-gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return h.Source.Read(ctx, from, max)
}
