package job

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/ytstore"
)

// TestOutboxQueueInOrder: through epochs of rows added (now and then out of id order) and
// acknowledged (mostly the oldest first, some out of order), a destination's queue hands out
// exactly the pending rows in id order, and the least timestamps are the pending rows'; in the steady state (as many rows acknowledged as
// added) it reuses its array instead of growing new ones. Seeded: a failure names its seed.
func TestOutboxQueueInOrder(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewSource(seed))
		o := newOutbox()
		pending := map[string]bool{}
		sysTS, evTS := map[string]uint64{}, map[string]uint64{}
		next := 0
		id := func(i int) string { return fmt.Sprintf("m%06d", i) }
		for epoch := range 60 {
			n := 1 + rng.Intn(40)
			rows := make([]ytstore.OutputRow, n)
			for i := range rows {
				rows[i] = ytstore.OutputRow{Destination: "d", MessageID: id(next + i), SystemTimestamp: uint64(rng.Intn(1000)), EventTimestamp: uint64(rng.Intn(1000))}
			}
			for i := 1; i < n; i += 2 {
				if rng.Intn(5) == 0 { // out of order within the epoch
					rows[i-1].MessageID, rows[i].MessageID = rows[i].MessageID, rows[i-1].MessageID
				}
			}
			for i := range rows {
				pending[rows[i].MessageID] = true
				sysTS[rows[i].MessageID], evTS[rows[i].MessageID] = rows[i].SystemTimestamp, max(rows[i].EventTimestamp, 1)
			}
			next += n
			o.add(rows)
			var order []string
			o.inOrder("d", func(r *ytstore.OutputRow) bool { order = append(order, r.MessageID); return true })
			require.Len(t, order, len(pending), "seed %d epoch %d", seed, epoch)
			for i, got := range order {
				require.True(t, pending[got], "seed %d epoch %d: %s is not pending", seed, epoch, got)
				if i > 0 {
					require.Less(t, order[i-1], got, "seed %d epoch %d: out of id order", seed, epoch)
				}
			}
			var leastSys, leastEv uint64
			var evs []uint64
			for _, ts := range sysTS { // acknowledged rows stay in the output store (done)
				if ts != 0 && (leastSys == 0 || ts < leastSys) {
					leastSys = ts
				}
			}
			for m := range pending {
				if leastEv == 0 || evTS[m] < leastEv {
					leastEv = evTS[m]
				}
				evs = append(evs, evTS[m])
			}
			require.Equal(t, leastSys, o.minSystemTS(), "seed %d epoch %d", seed, epoch)
			require.Equal(t, leastEv, o.minEventTS(), "seed %d epoch %d", seed, epoch)
			require.ElementsMatch(t, evs, o.eventTimestamps(), "seed %d epoch %d", seed, epoch)
			// Acknowledge about as many as were added: the oldest, and a few others.
			var acked []string
			for _, m := range order[:min(len(order), n+rng.Intn(3)-1)] {
				if rng.Intn(8) != 0 {
					acked = append(acked, m)
				}
			}
			if len(order) > 0 && rng.Intn(3) == 0 {
				acked = append(acked, order[rng.Intn(len(order))])
			}
			o.finish("p", "d", acked)
			for _, m := range acked {
				delete(pending, m)
			}
		}
	}

	// The steady state: one row added and the oldest acknowledged, over and over.
	o := newOutbox()
	o.add([]ytstore.OutputRow{{Destination: "d", MessageID: "a0000"}})
	i := 0
	step := func() {
		i++
		rows := []ytstore.OutputRow{{Destination: "d", MessageID: fmt.Sprintf("a%04d", i)}}
		o.add(rows)
		o.finish("p", "d", []string{fmt.Sprintf("a%04d", i-1)})
		o.inOrder("d", func(*ytstore.OutputRow) bool { return true }) // compacts
	}
	for range 100 {
		step()
	}
	array := &o.queues["d"].buf[:1][0]
	for range 1000 {
		step()
	}
	require.Same(t, array, &o.queues["d"].buf[:1][0], "the queue reuses its array")
	require.Len(t, o.queues["d"].rows, 1)
}
