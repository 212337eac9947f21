package kafka

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/internal/ybin"
)

// plainBytesOf is a column value as record bytes, each in an allocation of its own: what
// arena.bytesOf must be indistinguishable from.
func plainBytesOf(v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return nil, true
	case string:
		return []byte(x), true
	case []byte:
		return x, true
	case int64:
		return strconv.AppendInt(nil, x, 10), true
	case uint64:
		return strconv.AppendUint(nil, x, 10), true
	case int:
		return strconv.AppendInt(nil, int64(x), 10), true
	case float64:
		return strconv.AppendFloat(nil, x, 'g', -1, 64), true
	case bool:
		return strconv.AppendBool(nil, x), true
	}
	return nil, false
}

// TestKafkaSinkRecordBytes: the record bytes of every kind of column value are the plain
// conversion's, a null is a nil value and an empty string an empty one (Kafka tells them
// apart), and bytes handed out stay as they were while the arena hands out more (across
// blocks, with strings too long to copy in between).
func TestKafkaSinkRecordBytes(t *testing.T) {
	values := []any{
		nil, "", "x", "hello, world", []byte{}, []byte("raw"), strings.Repeat("long", arenaMaxCopy),
		int64(0), int64(-1), int64(math.MinInt64), int64(math.MaxInt64), uint64(math.MaxUint64), int(42),
		0.0, math.Copysign(0, -1), 1.5, -math.MaxFloat64, math.SmallestNonzeroFloat64, math.Inf(1), math.Inf(-1), math.NaN(),
		true, false,
	}
	a := newArena(1)
	type out struct {
		v    any
		b    []byte
		want []byte
	}
	var outs []out
	for round := range 500 { // many blocks
		for _, v := range values {
			if s, ok := v.(string); ok && round%7 == 3 {
				v = s + strconv.Itoa(round)
			}
			want, _ := plainBytesOf(v)
			b, err := a.bytesOf(v)
			require.NoError(t, err)
			require.Equal(t, want == nil, b == nil, "%#v: nil-ness", v)
			require.Equal(t, string(want), string(b), "%#v", v)
			outs = append(outs, out{v, b, want})
		}
	}
	for i, o := range outs {
		require.Equal(t, string(o.want), string(o.b), "value %d (%T) changed after more were handed out", i, o.v)
		if s, ok := o.v.(string); ok && len(s) > 0 && len(s) <= arenaMaxCopy || !ok && o.b != nil && fmt.Sprintf("%T", o.v) != "[]uint8" {
			require.Equal(t, len(o.b), cap(o.b), "value %d (%T): no room past a value's bytes", i, o.v)
		}
	}
	for _, bad := range []any{int32(1), map[string]any{}, []any{}} {
		_, err := a.bytesOf(bad)
		require.ErrorContains(t, err, fmt.Sprintf("a %T value has no record bytes", bad))
	}
}

// sinkRows are stored rows as the benchmark's keyed count writes them.
func sinkRows(t testing.TB, n int) connector.Batch {
	b := connector.Batch{FirstSeq: 0, LastSeq: int64(n - 1)}
	for i := range n {
		enc, ok := ybin.AppendMap(nil, map[string]any{"hash": uint64(i) * 2654435761, "word": fmt.Sprintf("w%04d", i%1000), "count": int64(i/1000 + 1)})
		require.True(t, ok)
		b.Rows = append(b.Rows, connector.Delivery{MessageID: fmt.Sprintf("m%06d", i), SequenceNumber: int64(i), Encoded: enc})
	}
	return b
}

func recordSink(header string) *Sink {
	return NewSink(nil, SinkConfig{Name: "kafka sink out", TransactionalID: "ytflow:test:p:out",
		Params: &SinkParams{Topic: "out", PayloadColumn: "count", KeyColumn: "word", MessageIDHeader: header}})
}

// TestKafkaSinkRecordsOfDelivery: the records of a delivery built from the arena are the
// records built plainly (topic, key, value, header), each a record of its own; a delivery of
// a thousand stored rows allocates a few blocks, not one record and value per row.
func TestKafkaSinkRecordsOfDelivery(t *testing.T) {
	b := sinkRows(t, 1000)
	for _, header := range []string{"", "flow-id"} {
		s := recordSink(header)
		a := newArena(len(b.Rows))
		var recs []*kgo.Record
		for i := range b.Rows {
			r, err := s.record(a, &b.Rows[i])
			require.NoError(t, err)
			recs = append(recs, r)
		}
		for i, r := range recs {
			row, ok := ybin.DecodeMap(b.Rows[i].Encoded)
			require.True(t, ok)
			value, _ := plainBytesOf(row["count"])
			key, _ := plainBytesOf(row["word"])
			want := &kgo.Record{Topic: "out", Key: key, Value: value}
			if header != "" {
				want.Headers = []kgo.RecordHeader{{Key: header, Value: []byte(b.Rows[i].MessageID)}}
			}
			require.Equal(t, want, r, "record %d", i)
			if i > 0 {
				require.NotSame(t, recs[i-1], r)
			}
		}

		allocs := testing.AllocsPerRun(5, func() {
			a := newArena(len(b.Rows))
			for i := range b.Rows {
				if _, err := s.record(a, &b.Rows[i]); err != nil {
					t.Fatal(err)
				}
			}
		})
		// The records, values and headers come from a handful of blocks; the stored rows are
		// read in place (ybin.Fields), not decoded.
		require.Less(t, allocs, 10.0, "header %q: %v allocations", header, allocs)
	}
}

// TestSinkFieldMatchesBytesOf: a column found in the stored row (ybin.Fields, arena.field)
// has the record bytes of the decoded value (arena.bytesOf), for every kind of value, and a
// stored row Fields does not take (more columns than it scans) still makes the same record
// through the decoder.
func TestSinkFieldMatchesBytesOf(t *testing.T) {
	values := []any{
		nil, "", "x", strings.Repeat("long", arenaMaxCopy), int64(0), int64(math.MinInt64), uint64(math.MaxUint64),
		0.0, math.Copysign(0, -1), 1.5, math.Inf(-1), math.NaN(), true, false,
	}
	a := newArena(1)
	for _, v := range values {
		enc, ok := ybin.AppendMap(nil, map[string]any{"v": v, "other": "o"})
		require.True(t, ok)
		row, ok := ybin.DecodeMap(enc)
		require.True(t, ok)
		want, err := a.bytesOf(row["v"])
		require.NoError(t, err)
		var f [2]ybin.Field
		require.True(t, ybin.Fields(enc, []string{"v", "absent"}, f[:]), "%#v", v)
		got := a.field(f[0])
		require.Equal(t, want == nil, got == nil, "%#v: nil-ness", v)
		require.Equal(t, string(want), string(got), "%#v", v)
		require.Nil(t, a.field(f[1]), "a missing column is a null")
	}
	wide := map[string]any{"word": "w", "count": int64(3)}
	for i := range 40 {
		wide[fmt.Sprint("c", i)] = int64(i)
	}
	enc, ok := ybin.AppendMap(nil, wide)
	require.True(t, ok)
	require.False(t, ybin.Fields(enc, []string{"count"}, make([]ybin.Field, 1)), "too many columns for Fields")
	r, err := recordSink("id").record(newArena(1), &connector.Delivery{MessageID: "m1", Encoded: enc})
	require.NoError(t, err)
	require.Equal(t, &kgo.Record{Topic: "out", Key: []byte("w"), Value: []byte("3"), Headers: []kgo.RecordHeader{{Key: "id", Value: []byte("m1")}}}, r)
}

// BenchmarkKafkaSinkRecords: the records of one delivery of 1,000 stored rows.
func BenchmarkKafkaSinkRecords(b *testing.B) {
	rows := sinkRows(b, 1000)
	s := recordSink("")
	b.ReportAllocs()
	for b.Loop() {
		a := newArena(len(rows.Rows))
		for i := range rows.Rows {
			if _, err := s.record(a, &rows.Rows[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
}
