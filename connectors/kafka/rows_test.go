package kafka

import (
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/internal/ybin"
)

// plainRow is a record's row built the obvious way (a map literal, each value boxed on its
// own): what recordRow must be indistinguishable from.
func plainRow(r *kgo.Record, frame []byte, hasData bool, sub int64, unparsed any) connector.Row {
	var key, data any
	if r.Key != nil {
		key = string(r.Key)
	}
	if hasData {
		data = string(frame)
	}
	return connector.Row{Offset: r.Offset, Timestamp: uint64(max(r.Timestamp.UnixMicro(), 0)), Columns: map[string]any{
		"data": data, "key": key, "unparsed": unparsed, "partition": int64(r.Partition),
		"offset": r.Offset, "sub_offset": sub, "timestamp": r.Timestamp.Unix(),
	}}
}

// TestKafkaSourceRowColumns: a record's row has Flow's columns with the Go types and values a
// map literal would hold, whatever the record: key null, empty or set, data null (a
// tombstone), empty or set, large offsets, partitions and sub-offsets, times before 1970. The
// values compare equal to plainly boxed ones (==, reflect, type switches, fmt, YSON
// encoding), and the record's bytes can change after the row is built without the row
// changing.
func TestKafkaSourceRowColumns(t *testing.T) {
	at := time.Unix(1_700_000_000, 123_456_789)
	cases := []struct {
		name     string
		r        kgo.Record
		frame    []byte
		hasData  bool
		sub      int64
		unparsed any
	}{
		{"key and value", kgo.Record{Key: []byte("k1"), Value: []byte("hello"), Offset: 7, Partition: 1, Timestamp: at}, []byte("hello"), true, 0, nil},
		{"no key", kgo.Record{Value: []byte("v"), Offset: 0, Timestamp: at}, []byte("v"), true, 0, nil},
		{"empty key and value", kgo.Record{Key: []byte{}, Value: []byte{}, Offset: 1, Timestamp: at}, []byte{}, true, 0, nil},
		{"tombstone", kgo.Record{Key: []byte("gone"), Offset: 3, Timestamp: at}, nil, false, 0, nil},
		{"kept malformed", kgo.Record{Key: []byte("k"), Value: []byte("bad"), Offset: 4, Timestamp: at}, nil, false, 0, map[string]any{"data": "bad"}},
		{"large numbers", kgo.Record{Key: []byte("k"), Value: []byte("x|y"), Offset: math.MaxInt64 - 1, Partition: math.MaxInt32, Timestamp: at}, []byte("y"), true, 1 << 40, nil},
		{"before 1970", kgo.Record{Value: []byte("old"), Offset: 300, Partition: 255, Timestamp: time.Unix(-5, 0)}, []byte("old"), true, 256, nil},
		{"binary", kgo.Record{Key: []byte{0, 0xff}, Value: []byte{0xfe, 0}, Offset: 256, Timestamp: at}, []byte{0xfe, 0}, true, 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := plainRow(&c.r, c.frame, c.hasData, c.sub, c.unparsed)
			got := recordRow(&c.r, c.frame, c.hasData, c.sub, c.unparsed)
			require.Equal(t, want, got)
			require.True(t, reflect.DeepEqual(want.Columns, got.Columns))
			require.Equal(t, fmt.Sprintf("%#v", want.Columns), fmt.Sprintf("%#v", got.Columns))
			for k, w := range want.Columns {
				g := got.Columns[k]
				require.Equal(t, reflect.TypeOf(w), reflect.TypeOf(g), "column %s", k)
				if _, ok := w.(map[string]any); ok {
					continue // not comparable; DeepEqual above
				}
				require.True(t, g == w, "column %s: %#v == %#v", k, g, w)
				require.True(t, map[any]bool{w: true}[g], "column %s hashes as its plain value", k)
			}
			if _, ok := got.Columns["offset"].(int64); !ok {
				t.Fatalf("offset is a %T", got.Columns["offset"])
			}
			wb, ok := ybin.AppendMap(nil, want.Columns)
			gb, ok2 := ybin.AppendMap(nil, got.Columns)
			require.Equal(t, ok, ok2)
			require.Equal(t, wb, gb, "the stored bytes of the row")

			// The row copied what it holds: the record's buffers are the consumer's.
			for i := range c.r.Key {
				c.r.Key[i] ^= 0x55
			}
			for i := range c.frame {
				c.frame[i] ^= 0x55
			}
			require.Equal(t, want, got)
		})
	}
}

// TestKafkaSourceRowAllocations: a record's row is four allocations (the map and its slot
// group, the cells, one buffer for the key and data strings), not one per value.
func TestKafkaSourceRowAllocations(t *testing.T) {
	r := &kgo.Record{Key: []byte("k0042"), Value: []byte("some words here"), Offset: 123_456, Partition: 1, Timestamp: time.Unix(1_700_000_000, 0)}
	var sink connector.Row
	n := testing.AllocsPerRun(200, func() { sink = recordRow(r, r.Value, true, 0, nil) })
	require.Equal(t, 4.0, n)
	require.Equal(t, "some words here", sink.Columns["data"])
	plain := testing.AllocsPerRun(200, func() { sink = plainRow(r, r.Value, true, 0, nil) })
	require.Greater(t, plain, n, "the plain row allocates more")
}

// BenchmarkKafkaSourceRow: one record's row appended to a read's rows (TKafkaSource's unpack).
func BenchmarkKafkaSourceRow(b *testing.B) {
	r := &kgo.Record{Key: []byte("k0042"), Value: []byte("k0042"), Offset: 123_456, Partition: 1, Timestamp: time.Unix(1_700_000_000, 0)}
	s := &Source{dyn: parseSourceDynamicDefaults()}
	rows := make([]connector.Row, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		if len(rows) == cap(rows) {
			rows = rows[:0]
		}
		rows, _ = s.appendRows(rows, r)
	}
}

// BenchmarkKafkaSourceRowPlain: the same row built as a map literal, for comparison.
func BenchmarkKafkaSourceRowPlain(b *testing.B) {
	r := &kgo.Record{Key: []byte("k0042"), Value: []byte("k0042"), Offset: 123_456, Partition: 1, Timestamp: time.Unix(1_700_000_000, 0)}
	rows := make([]connector.Row, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		if len(rows) == cap(rows) {
			rows = rows[:0]
		}
		rows = append(rows, plainRow(r, r.Value, true, 0, nil))
	}
}
