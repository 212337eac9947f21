package ytstore

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/yson"
)

// Copies of the row types without their methods: the SDK encodes them by reflection.
type (
	plainCompact     compactInputMessageRow
	plainInput       inputMessageRow
	plainState       StateRow
	plainChunk       outputChunkRow
	plainTransaction partitionTransactionRow
	plainPartState   partitionStateRow
	plainTimer       TimerRow
	plainDeadLetter  DeadLetterRow
)

// rowPair is a row that encodes itself and its copy for the reflection encoder.
type rowPair struct{ custom, plain any }

// rowPairs returns every row type that encodes itself, filled from the given values.
func rowPairs(s string, b []byte, u uint64, i int64, fp *uint64) []rowPair {
	return []rowPair{
		{compactInputMessageRow{DedupKey: b, SystemTimestamp: u, PayloadFingerprint: fp}, plainCompact{DedupKey: b, SystemTimestamp: u, PayloadFingerprint: fp}},
		{&compactInputMessageRow{DedupKey: b, SystemTimestamp: u, PayloadFingerprint: fp}, plainCompact{DedupKey: b, SystemTimestamp: u, PayloadFingerprint: fp}},
		{inputMessageRow{ComputationID: s, Key: b, MessageID: s + "m", SystemTimestamp: u, PayloadFingerprint: fp}, plainInput{ComputationID: s, Key: b, MessageID: s + "m", SystemTimestamp: u, PayloadFingerprint: fp}},
		{StateRow{ComputationID: s, KeyHash: u, Key: b, Name: s + "n", State: b}, plainState{ComputationID: s, KeyHash: u, Key: b, Name: s + "n", State: b}},
		{&StateRow{ComputationID: s, KeyHash: u, Key: b, Name: s, State: nil}, plainState{ComputationID: s, KeyHash: u, Key: b, Name: s, State: nil}},
		{&outputChunkRow{PartitionID: s, Destination: s + "d", ChunkID: u, Part: i, MessageCount: -i, Data: b}, plainChunk{PartitionID: s, Destination: s + "d", ChunkID: u, Part: i, MessageCount: -i, Data: b}},
		{partitionTransactionRow{PartitionID: s, Token: u}, plainTransaction{PartitionID: s, Token: u}},
		{partitionStateRow{PartitionID: s, Name: s + "n", State: b}, plainPartState{PartitionID: s, Name: s + "n", State: b}},
		{TimerRow{ComputationID: s, KeyHash: u, Key: b, MessageID: s + "m", StreamID: s + "s", SystemTimestamp: u, EventTimestamp: u + 1, TriggerTimestamp: u - 1, Payload: b},
			plainTimer{ComputationID: s, KeyHash: u, Key: b, MessageID: s + "m", StreamID: s + "s", SystemTimestamp: u, EventTimestamp: u + 1, TriggerTimestamp: u - 1, Payload: b}},
		{DeadLetterRow{ComputationID: s, KeyHash: u, Key: b, MessageID: s, StreamID: s, PartitionID: s, Payload: b, Error: s + "e", Attempts: u, Timer: i%2 == 0, Trigger: u, SystemTimestamp: u, EventTimestamp: u, DeadAt: u},
			plainDeadLetter{ComputationID: s, KeyHash: u, Key: b, MessageID: s, StreamID: s, PartitionID: s, Payload: b, Error: s + "e", Attempts: u, Timer: i%2 == 0, Trigger: u, SystemTimestamp: u, EventTimestamp: u, DeadAt: u}},
	}
}

// checkRowPair asserts that the row's own encodings are the reflection encoder's bytes:
// appendYSON (the batch body), and MarshalYSON through the binary and the text writers.
func checkRowPair(t testing.TB, p rowPair) {
	t.Helper()
	want, err := yson.MarshalFormat(p.plain, yson.FormatBinary)
	require.NoError(t, err)
	if got := p.custom.(yrow).appendYSON(nil); !bytes.Equal(got, want) {
		t.Fatalf("%T appendYSON:\n got %q\nwant %q", p.custom, got, want)
	}
	for _, f := range []yson.Format{yson.FormatText, yson.FormatBinary} {
		got, err := yson.MarshalFormat(p.custom, f)
		require.NoError(t, err)
		want, err := yson.MarshalFormat(p.plain, f)
		require.NoError(t, err)
		if !bytes.Equal(got, want) {
			t.Fatalf("%T MarshalYSON %v:\n got %q\nwant %q", p.custom, f, got, want)
		}
	}
}

// TestRowsEncodeAsReflection: every row type that encodes itself writes the reflection
// encoder's bytes, for edge values: empty and nil bytes (nil is the entity), zero
// timestamps and hashes (omitted where the column is omitempty), a nil and a zero
// fingerprint, the extreme integers, strings and bytes whose lengths take one, two and three
// varint bytes.
func TestRowsEncodeAsReflection(t *testing.T) {
	fp, zero := uint64(77), uint64(0)
	for _, tc := range []struct {
		s  string
		b  []byte
		u  uint64
		i  int64
		fp *uint64
	}{
		{s: "c", b: []byte{0, 1, 2}, u: 5, i: 1, fp: &fp},
		{},
		{s: "", b: []byte{}, u: 0, i: 0, fp: &zero},
		{s: strings.Repeat("x", 63), b: bytes.Repeat([]byte{0xff}, 64), u: math.MaxUint64, i: math.MinInt64, fp: &fp},
		{s: strings.Repeat("y", 64), b: bytes.Repeat([]byte{'{'}, 8191), u: 1 << 63, i: math.MaxInt64},
		{s: strings.Repeat("z", 8192), b: bytes.Repeat([]byte{';'}, 100_000), u: 1, i: -1},
	} {
		for _, p := range rowPairs(tc.s, tc.b, tc.u, tc.i, tc.fp) {
			checkRowPair(t, p)
		}
	}
}

// FuzzRowsEncodeAsReflection: for any values, every row type that encodes itself writes the
// reflection encoder's bytes.
func FuzzRowsEncodeAsReflection(f *testing.F) {
	f.Add("c", []byte{0, 1}, false, uint64(5), int64(1), true, uint64(77))
	f.Add("", []byte(nil), true, uint64(0), int64(0), false, uint64(0))
	f.Add(strings.Repeat("k", 100), []byte{}, false, uint64(math.MaxUint64), int64(math.MinInt64), true, uint64(0))
	f.Fuzz(func(t *testing.T, s string, b []byte, isNil bool, u uint64, i int64, hasFP bool, fp uint64) {
		if isNil {
			b = nil
		} else if b == nil {
			b = []byte{}
		}
		var fpp *uint64
		if hasFP {
			fpp = &fp
		}
		for _, p := range rowPairs(s, b, u, i, fpp) {
			checkRowPair(t, p)
		}
		// Sink rows of one column each (their bytes do not depend on map order).
		sink := []map[string]any{{s: b}, {s: i}, {s: u}, {s: string(b)}, {s: hasFP}, {s: nil}, {s: float64(i)}}
		var want bytes.Buffer
		w := yson.NewWriterConfig(&want, yson.WriterConfig{Format: yson.FormatBinary, Kind: yson.StreamListFragment})
		for _, r := range sink {
			w.Any(sinkRow(r))
		}
		require.NoError(t, w.Finish())
		if got, ok := appendSinkRows(nil, sink); !ok || !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("sink rows (ok %v):\n got %q\nwant %q", ok, got, want.Bytes())
		}
		dedup := []DedupRow{{DedupKey: DedupKey{ComputationID: s, KeyHash: u, MessageID: string(b), Compact: true}, SystemTimestamp: u, PayloadFingerprint: fp}}
		for _, withFP := range []bool{hasFP, !hasFP} {
			c := compactDedupRows{rows: dedup, fingerprints: withFP}
			if got, want := c.appendRows(nil), yrows(c.values()).appendRows(nil); !bytes.Equal(got, want) {
				t.Fatalf("compact dedup rows:\n got %q\nwant %q", got, want)
			}
		}
	})
}

// TestInsertBatchMatchesInsertRows: the body of a batch insert is what InsertRows writes for
// the same rows (each through the SDK's binary list-fragment writer), and rows of a type that
// does not encode itself are left to InsertRows.
func TestInsertBatchMatchesInsertRows(t *testing.T) {
	fp := uint64(3)
	var custom, plain []any
	for _, p := range rowPairs("part", []byte("key"), 1<<40, 7, &fp) {
		custom = append(custom, p.custom)
		plain = append(plain, p.plain)
	}
	var want bytes.Buffer
	w := yson.NewWriterConfig(&want, yson.WriterConfig{Format: yson.FormatBinary, Kind: yson.StreamListFragment})
	for _, r := range plain {
		w.Any(r)
	}
	require.NoError(t, w.Finish())
	l, ok := asRowList(custom)
	require.True(t, ok)
	prefix := []byte("kept")
	got := l.appendRows(prefix)
	assert.Equal(t, string(want.Bytes()), string(got[len(prefix):]))
	assert.Equal(t, "kept", string(got[:len(prefix)]), "appendRows appends")
	assert.Equal(t, custom, l.values())

	_, ok = asRowList(append(custom[:2:2], map[string]any{"computation_id": "c"}))
	assert.False(t, ok, "a row that does not encode itself")
}

// TestCompactDedupRowsEncodeAsValues: an epoch's compact dedup rows, encoded straight from
// its dedup rows, are the rows values lists (which encode as the reflection encoder's), with
// and without the payload_fingerprint column; plain dedup rows are not among them.
func TestCompactDedupRowsEncodeAsValues(t *testing.T) {
	dedup := []DedupRow{
		{DedupKey: DedupKey{ComputationID: "count", KeyHash: 1 << 63, MessageID: "m1", Compact: true}, SystemTimestamp: 5, PayloadFingerprint: 9},
		{DedupKey: DedupKey{ComputationID: "count", Key: []byte("k"), MessageID: "plain"}, SystemTimestamp: 5, PayloadFingerprint: 9},
		{DedupKey: DedupKey{ComputationID: "", MessageID: "", Compact: true}},
		{DedupKey: DedupKey{ComputationID: strings.Repeat("c", 100), KeyHash: 7, MessageID: "m3", Compact: true}, PayloadFingerprint: math.MaxUint64},
	}
	for _, fingerprints := range []bool{true, false} {
		c := compactDedupRows{rows: dedup, fingerprints: fingerprints}
		vals := c.values()
		require.Len(t, vals, 3)
		var want bytes.Buffer
		w := yson.NewWriterConfig(&want, yson.WriterConfig{Format: yson.FormatBinary, Kind: yson.StreamListFragment})
		withFP := 0
		for _, v := range vals {
			r := v.(compactInputMessageRow)
			w.Any(plainCompact(r))
			if r.PayloadFingerprint != nil {
				withFP++
			}
		}
		if fingerprints {
			assert.Equal(t, 2, withFP, "the non-zero fingerprints are kept")
		} else {
			assert.Zero(t, withFP, "no fingerprints without the column")
		}
		require.NoError(t, w.Finish())
		assert.Equal(t, string(want.Bytes()), string(c.appendRows(nil)), "fingerprints %v", fingerprints)
		assert.Equal(t, string(want.Bytes()), string(yrows(vals).appendRows(nil)))
	}
}

// TestSinkRowEncodesAsReflection: a sink row decodes to the same values whether it is written
// by its own encoder or by the reflection encoder, for every scalar type a payload holds and
// for a nested value (handed to the reflection encoder).
func TestSinkRowEncodesAsReflection(t *testing.T) {
	row := map[string]any{
		"s": "word", "b": []byte{0, 1}, "i": int64(-5), "n": 7, "i32": int32(-3), "u": uint64(1 << 63),
		"u32": uint32(9), "f": 1.5, "t": true, "null": nil, "list": []any{int64(1), "x"},
	}
	for _, f := range []yson.Format{yson.FormatText, yson.FormatBinary} {
		got, err := yson.MarshalFormat(sinkRow(row), f)
		require.NoError(t, err)
		want, err := yson.MarshalFormat(row, f)
		require.NoError(t, err)
		var gotRow, wantRow map[string]any
		require.NoError(t, yson.Unmarshal(got, &gotRow))
		require.NoError(t, yson.Unmarshal(want, &wantRow))
		assert.Equal(t, wantRow, gotRow)
	}
}

// TestSinkRowsBatchMatchesWriter: a sink write's batch body is what the SDK's writer writes
// for the same rows (sinkRow, each row's columns in map order: byte for byte for rows of one
// column, value for value otherwise), nil bytes included; a row with a nested value leaves
// the write to the writer.
func TestSinkRowsBatchMatchesWriter(t *testing.T) {
	rows := []map[string]any{
		{"s": "word", "b": []byte{0, 1}, "nilb": []byte(nil), "i": int64(-5), "n": 7, "i32": int32(-3),
			"u": uint64(1 << 63), "u32": uint32(9), "f": 1.5, "t": true, "null": nil, "long": strings.Repeat("x", 300)},
		{"only": "one column"},
		{"nilb": []byte(nil)},
		{},
	}
	var want bytes.Buffer
	w := yson.NewWriterConfig(&want, yson.WriterConfig{Format: yson.FormatBinary, Kind: yson.StreamListFragment})
	for _, r := range rows {
		w.Any(sinkRow(r))
	}
	require.NoError(t, w.Finish())
	got, ok := appendSinkRows([]byte("kept"), rows)
	require.True(t, ok)
	require.Equal(t, "kept", string(got[:4]))
	got = got[4:]
	decode := func(b []byte) []map[string]any {
		var out []map[string]any
		require.NoError(t, yson.Unmarshal(append(append([]byte{'['}, b...), ']'), &out))
		return out
	}
	assert.Equal(t, decode(want.Bytes()), decode(got))
	one := want.Bytes()[bytes.Index(want.Bytes(), []byte("{\x01\x08only")):]
	assert.Equal(t, string(one), string(got[bytes.Index(got, []byte("{\x01\x08only")):]), "rows of one column, byte for byte")
	assert.Nil(t, decode(got)[2]["nilb"], "nil bytes are the entity")

	got, ok = appendSinkRows([]byte("kept"), append(rows[:1:1], map[string]any{"list": []any{int64(1)}}))
	assert.False(t, ok, "a nested value")
	assert.Equal(t, "kept", string(got), "nothing appended")
}
