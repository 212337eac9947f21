package job

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/ytstore"
)

// TestOutboxQueueInOrder: through epochs of rows added (now and then out of id order) and
// acknowledged (mostly the oldest first, some out of order), a destination's queue hands out
// exactly the pending rows in id order, and the least timestamps are the pending rows'; in the steady state (as many rows acknowledged as
// added) it reuses its array instead of growing new ones. Seeded: a failure names its seed.
func TestOutboxQueueInOrder(t *testing.T) {
	for seed := int64(1); seed <= 10; seed++ {
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
			if rng.Intn(3) == 0 { // a pending row added again: the first copy stays
				again := rows[rng.Intn(n)]
				again.EventTimestamp, again.SystemTimestamp = 5000, 1
				o.add([]ytstore.OutputRow{again})
			}
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
			got := o.eventTimestamps()
			slices.Sort(evs)
			slices.Sort(got)
			require.Equal(t, evs, got, "seed %d epoch %d", seed, epoch)
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

// TestOutboxFinishPushedMatchesFinish: finishing a push's acknowledgements by walking the
// entries it carried leaves the outbox exactly as looking each id up does (finish), when the
// acknowledgements skip rows, name rows another push finished meanwhile, come out of order,
// repeat or name rows the push did not carry. Two outboxes are driven side by side.
// Seeded: a failure names its seed.
func TestOutboxFinishPushedMatchesFinish(t *testing.T) {
	for seed := int64(1); seed <= 15; seed++ {
		rng := rand.New(rand.NewSource(seed))
		byID, byPush := newOutbox(), newOutbox()
		next := 0
		for epoch := range 40 {
			n := 1 + rng.Intn(30)
			rows := make([]ytstore.OutputRow, n)
			for i := range rows {
				rows[i] = ytstore.OutputRow{Destination: "d", MessageID: fmt.Sprintf("m%06d", next+i), SystemTimestamp: uint64(1 + rng.Intn(100))}
				if epoch%2 == 0 {
					rows[i].Chunk = ytstore.OutputChunk{ID: uint64(epoch + 1), Part: int64(i / 10)}
				}
			}
			next += n
			byID.add(slices.Clone(rows))
			byPush.add(rows)

			// A push carries the first idle rows.
			var msgs []*outMsg
			limit := 1 + rng.Intn(40)
			byPush.inOrderIdle("d", func(m *outMsg) bool { msgs = append(msgs, m); return len(msgs) < limit })
			var acked []string
			for _, m := range msgs {
				if rng.Intn(4) != 0 {
					acked = append(acked, m.row.MessageID)
				}
			}
			switch rng.Intn(5) {
			case 0: // another push finished some of the rows meanwhile
				var other []string
				for _, m := range msgs {
					if rng.Intn(3) == 0 {
						other = append(other, m.row.MessageID)
					}
				}
				byID.finish("p", "d", other)
				byPush.finish("p", "d", other)
			case 1: // out of order
				if len(acked) > 2 {
					acked[0], acked[len(acked)-1] = acked[len(acked)-1], acked[0]
				}
			case 2: // a repeat and an id the push did not carry
				if len(acked) > 0 {
					acked = append(acked, acked[0], "m999999")
				}
			}
			require.Equal(t, byID.finish("p", "d", acked), byPush.finishPushed("p", "d", msgs, acked), "seed %d epoch %d", seed, epoch)
			require.Equal(t, outboxState(byID), outboxState(byPush), "seed %d epoch %d", seed, epoch)
		}
	}
}

// outboxState describes what an outbox holds: pending ids in order, the keys finished since
// the last call (taken, as an epoch commit takes them), chunks.
func outboxState(o *outbox) string {
	var pending []string
	o.inOrder("d", func(r *ytstore.OutputRow) bool { pending = append(pending, r.MessageID); return true })
	o.mu.Lock()
	done := fmt.Sprint(o.done)
	chunks := map[string]chunkState{}
	for k, c := range o.chunks {
		chunks[fmt.Sprint(k)] = *c
	}
	n := len(o.pending["d"])
	o.mu.Unlock()
	o.takeDone()
	o.committed()
	return fmt.Sprintf("pending %v (%d)\ndone %v\nchunks %v", pending, n, done, chunks)
}

// BenchmarkOutboxEpoch adds an epoch of 1000 rows to an outbox, hands them to a push and
// finishes its acknowledgements, by id (finish) or by the push's entries (finishPushed).
func BenchmarkOutboxEpoch(b *testing.B) {
	for _, byPush := range []bool{false, true} {
		b.Run(map[bool]string{false: "finish", true: "finishPushed"}[byPush], func(b *testing.B) {
			o := newOutbox()
			ids := make([]string, 1000)
			template := make([]ytstore.OutputRow, len(ids))
			for i := range ids {
				ids[i] = fmt.Sprintf("%016x-3%03x", 7, i)
				template[i] = ytstore.OutputRow{Destination: "d", MessageID: ids[i], Chunk: ytstore.OutputChunk{ID: 7}}
			}
			var msgs []*outMsg
			b.ReportAllocs()
			for b.Loop() {
				o.add(slices.Clone(template)) // the same ids again: the last epoch's are finished
				msgs = msgs[:0]
				o.inOrderIdle("d", func(m *outMsg) bool { msgs = append(msgs, m); return true })
				if byPush {
					o.finishPushed("p", "d", msgs, ids)
				} else {
					o.finish("p", "d", ids)
				}
				o.takeDone()
				o.committed()
			}
		})
	}
}
