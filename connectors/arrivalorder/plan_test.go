package arrivalorder

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	testOwner  = Owner{Pipeline: "//p", Computation: "c", Sink: "s"}
	testParams = &Params{OutputDirectory: "//out", TablePeriod: time.Minute, TableTTL: time.Hour, TableNameFormat: "%H:%M"}
	t0         = time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
)

func rowAt(seq int64, at time.Time) Row {
	return Row{SystemTimestamp: uint64(at.UnixMicro()), MessageID: "m" + string(rune('a'+seq)), SequenceNumber: seq, Columns: map[string]any{"seq": seq}}
}

func names(w []Write) (out []string) {
	for _, x := range w {
		out = append(out, x.Slot.Name)
	}
	return out
}

// TestPlanReplayWritesTail: rows go to the table of their slot; a replay that the frontier
// partly covers writes only the uncovered tail, and one fully covered writes nothing.
func TestPlanReplayWritesTail(t *testing.T) {
	now := t0.Add(10 * time.Minute)
	rows := []Row{rowAt(1, t0), rowAt(2, t0.Add(30*time.Second)), rowAt(3, t0.Add(70*time.Second))}
	p1, err := plan(nil, testOwner, "p0", rows[:2], now, testParams)
	require.NoError(t, err)
	assert.Equal(t, []string{"10:00"}, names(p1.Writes))
	assert.True(t, p1.Writes[0].New)
	assert.Equal(t, "2026-12-06T10:00:00.000000Z", p1.Writes[0].Attributes["table_timestamp"])
	assert.Equal(t, "2026-12-06T11:10:00.000000Z", p1.Writes[0].Attributes["expiration_time"], "max(slot, creation) + ttl")
	assert.Equal(t, int64(2), p1.Progress.Partitions["p0"].SequenceNumber)

	// The replay repeats rows 1 and 2 and adds 3.
	p2, err := plan(&p1.Progress, testOwner, "p0", rows, now, testParams)
	require.NoError(t, err)
	assert.Equal(t, 2, p2.Skipped)
	require.Equal(t, []string{"10:01"}, names(p2.Writes))
	assert.Equal(t, []map[string]any{{"seq": int64(3)}}, p2.Writes[0].Rows)
	assert.Equal(t, []Slot{{"10:00", uint64(t0.UnixMicro())}, {"10:01", uint64(t0.Add(time.Minute).UnixMicro())}}, p2.Progress.Tables)

	p3, err := plan(&p2.Progress, testOwner, "p0", rows, now, testParams)
	require.NoError(t, err)
	assert.Equal(t, 3, p3.Skipped)
	assert.Empty(t, p3.Writes)
	assert.Equal(t, p2.Progress, p3.Progress)

	// Another partition has its own frontier and appends to the existing table.
	p4, err := plan(&p3.Progress, testOwner, "p1", []Row{rowAt(1, t0.Add(10*time.Second))}, now, testParams)
	require.NoError(t, err)
	require.Len(t, p4.Writes, 1)
	assert.False(t, p4.Writes[0].New)
	assert.Len(t, p4.Progress.Partitions, 2)
}

// TestPlanEmptySlots: the ended slots between the last table and a later one get empty
// tables; a slot not yet ended does not.
func TestPlanEmptySlots(t *testing.T) {
	p1, err := plan(nil, testOwner, "p0", []Row{rowAt(1, t0)}, t0.Add(time.Second), testParams)
	require.NoError(t, err)
	now := t0.Add(4*time.Minute + 10*time.Second)
	p2, err := plan(&p1.Progress, testOwner, "p0", []Row{rowAt(2, t0.Add(4*time.Minute))}, now, testParams)
	require.NoError(t, err)
	assert.Equal(t, []string{"10:04", "10:01", "10:02", "10:03"}, names(p2.Writes))
	for _, w := range p2.Writes[1:] {
		assert.True(t, w.New)
		assert.Empty(t, w.Rows)
	}
	assert.Len(t, p2.Progress.Tables, 5)
	assert.True(t, (&Directory{Progress: &p2.Progress}).sequenceSorted())
}

// TestPlanOwner: a directory owned by another sink is refused; tables past their TTL leave
// the sequence.
func TestPlanOwner(t *testing.T) {
	p1, err := plan(nil, testOwner, "p0", []Row{rowAt(1, t0)}, t0, testParams)
	require.NoError(t, err)
	other := testOwner
	other.Sink = "t"
	_, err = plan(&p1.Progress, other, "p0", []Row{rowAt(2, t0)}, t0, testParams)
	assert.True(t, errors.Is(err, ErrOwned), "%v", err)
	assert.ErrorContains(t, err, "pipeline //p computation c sink s, not pipeline //p computation c sink t")

	later := t0.Add(3 * time.Hour)
	p2, err := plan(&p1.Progress, testOwner, "p0", []Row{rowAt(2, later)}, later, testParams)
	require.NoError(t, err)
	tables := p2.Progress.Tables
	require.Len(t, tables, 60, "the 10:00 table expired; empty tables only within the TTL")
	assert.Equal(t, "12:01", tables[0].Name)
	assert.Equal(t, Slot{"13:00", uint64(later.UnixMicro())}, tables[59])
}
