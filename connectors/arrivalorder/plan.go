package arrivalorder

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrOwned: the output directory's progress names another owner (another pipeline,
// computation or sink writes there).
var ErrOwned = errors.New("output directory is owned by another sink")

// Owner names the sink that writes an output directory.
type Owner struct {
	Pipeline    string `yson:"pipeline"`
	Computation string `yson:"computation"`
	Sink        string `yson:"sink"`
}

func (o Owner) String() string {
	return fmt.Sprintf("pipeline %s computation %s sink %s", o.Pipeline, o.Computation, o.Sink)
}

// Frontier is the last row of one partition that the directory holds.
type Frontier struct {
	SystemTimestamp uint64 `yson:"system_timestamp"`
	MessageID       string `yson:"message_id"`
	SequenceNumber  int64  `yson:"sequence_number"`
}

// Slot is one table of the table sequence.
type Slot struct {
	Name string `yson:"name"`
	// Timestamp is the slot's start, microseconds since the epoch (the table's
	// @table_timestamp).
	Timestamp uint64 `yson:"timestamp"`
}

// Progress is the output directory's @progress: its owner, the table sequence (the slot
// tables the sink created, by slot, those not yet past their TTL) and, by partition, the
// frontier of the rows the tables hold.
type Progress struct {
	Owner      Owner               `yson:"owner"`
	Tables     []Slot              `yson:"tables"`
	Partitions map[string]Frontier `yson:"partitions"`
}

// Row is one row to write.
type Row struct {
	// SystemTimestamp picks the row's slot (microseconds; 0: the time of the write).
	SystemTimestamp uint64
	MessageID       string
	SequenceNumber  int64
	Columns         map[string]any
}

// Write is one table's part of a transaction.
type Write struct {
	Slot Slot
	// New: the table is created, with Attributes.
	New        bool
	Attributes map[string]any
	Rows       []map[string]any
}

// Plan is what one transaction writes.
type Plan struct {
	Progress Progress
	Writes   []Write
	// Skipped counts the rows the frontier already covers.
	Skipped int
}

// plan decides one transaction of partition's rows (in sequence order) on a directory whose
// progress is cur (nil: none yet) at time now. Rows at or below the partition's frontier
// are skipped; the others go to the table of their slot — [ts − ts mod period, + period) —
// created when the sequence does not have it. Slots between the sequence's last table and a
// new later one that have ended by now and are within the TTL get empty tables, as Flow
// creates them. Tables past their TTL leave the sequence.
//
// Invariant: a row is written only above its partition's frontier, and the frontier moves
// in the same transaction, so a replay that is partly covered writes only the uncovered
// tail (TestPlanReplayWritesTail, TestArrivalOrderSinkConformance).
func plan(cur *Progress, owner Owner, partition string, rows []Row, now time.Time, p *Params) (Plan, error) {
	var pr Progress
	if cur != nil {
		if cur.Owner != owner {
			return Plan{}, fmt.Errorf("%w: %s, not %s", ErrOwned, cur.Owner, owner)
		}
		pr = Progress{Owner: owner, Tables: slices.Clone(cur.Tables), Partitions: make(map[string]Frontier, len(cur.Partitions)+1)}
		for k, v := range cur.Partitions {
			pr.Partitions[k] = v
		}
	} else {
		pr = Progress{Owner: owner, Partitions: map[string]Frontier{}}
	}
	period := uint64(p.TablePeriod.Microseconds())
	ttl := uint64(p.TableTTL.Microseconds())
	nowUS := uint64(now.UnixMicro())
	front, hasFront := pr.Partitions[partition]
	known := map[uint64]bool{}
	for _, s := range pr.Tables {
		known[s.Timestamp] = true
	}
	var lastKnown uint64
	if n := len(pr.Tables); n > 0 {
		lastKnown = pr.Tables[n-1].Timestamp
	}
	out := Plan{}
	bySlot := map[uint64]int{} // slot -> index in out.Writes
	add := func(slot uint64) int {
		if i, ok := bySlot[slot]; ok {
			return i
		}
		w := Write{Slot: Slot{Name: p.Name(time.UnixMicro(int64(slot))), Timestamp: slot}}
		if !known[slot] {
			w.New = true
			w.Attributes = tableAttributes(slot, nowUS, ttl)
			known[slot] = true
			pr.Tables = append(pr.Tables, w.Slot)
		}
		out.Writes = append(out.Writes, w)
		bySlot[slot] = len(out.Writes) - 1
		return len(out.Writes) - 1
	}
	var maxSlot uint64
	for _, r := range rows {
		if hasFront && r.SequenceNumber <= front.SequenceNumber {
			out.Skipped++
			continue
		}
		ts := r.SystemTimestamp
		if ts == 0 {
			ts = nowUS
		}
		slot := ts - ts%period
		i := add(slot)
		out.Writes[i].Rows = append(out.Writes[i].Rows, r.Columns)
		front, hasFront = Frontier{SystemTimestamp: ts, MessageID: r.MessageID, SequenceNumber: r.SequenceNumber}, true
		maxSlot = max(maxSlot, slot)
	}
	if hasFront {
		pr.Partitions[partition] = front
	}
	// Empty tables for the ended slots between the sequence's last table and the latest new one.
	if lastKnown > 0 && maxSlot > lastKnown+period {
		from := lastKnown + period
		if nowUS > ttl && from < nowUS-ttl {
			from = nowUS - ttl - (nowUS-ttl)%period + period
		}
		for s, n := from, 0; s < maxSlot && s+period <= nowUS && n < MaxTablesPerTTL; s, n = s+period, n+1 {
			add(s)
		}
	}
	slices.SortFunc(pr.Tables, func(a, b Slot) int { return cmpU(a.Timestamp, b.Timestamp) })
	// Tables past their TTL leave the sequence.
	pr.Tables = slices.DeleteFunc(pr.Tables, func(s Slot) bool { return s.Timestamp+ttl+period < nowUS && !bySlotHas(bySlot, s.Timestamp) })
	out.Progress = pr
	return out, nil
}

func bySlotHas(m map[uint64]int, k uint64) bool { _, ok := m[k]; return ok }

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// tableAttributes are the attributes of a new slot table: its slot start and its
// expiration_time, max(slot, creation) + ttl.
func tableAttributes(slot, now, ttl uint64) map[string]any {
	return map[string]any{
		"table_timestamp": iso(slot),
		"expiration_time": iso(max(slot, now) + ttl),
	}
}

func iso(us uint64) string {
	return time.UnixMicro(int64(us)).UTC().Format("2006-01-02T15:04:05.000000Z")
}
